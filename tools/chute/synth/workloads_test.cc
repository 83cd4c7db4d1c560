#include "chute/synth/workloads.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <mutex>

#include "chute/array/strided_view.h"
#include "chute/format/open.h"
#include "chute/synth/testing.h"
#include "chute/synth/zarr_writer.h"
#include "chute/util/error.h"

namespace chute::synth {
namespace {
namespace fs = std::filesystem;
using testing::read_json;
using testing::read_text;
using testing::TempDir;

std::vector<float> floats_in(const std::string& path, size_t skip = 0) {
  std::string bytes = read_text(path);
  EXPECT_GE(bytes.size(), skip);
  std::vector<float> v((bytes.size() - skip) / 4);
  std::memcpy(v.data(), bytes.data() + skip, v.size() * 4);
  return v;
}

PackedOptions tiny_packed(std::string codec = "none", int format = 2) {
  PackedOptions o;
  o.samples = 3;
  o.lat = 5;
  o.lon = 8;
  o.input_channels = 4;
  o.target_channels = 3;
  o.chunk_channels = 2;
  o.codec = std::move(codec);
  o.zarr_format = format;
  o.seed = 11;
  o.threads = 2;
  return o;
}

/// Every element of a packed array read from uncompressed v2 chunks, in C order.
std::vector<float> read_packed_raw(const std::string& array, const PackedOptions& o,
                                   int64_t channels) {
  int64_t cc = o.chunk_channels == 0 ? channels : o.chunk_channels;
  std::vector<float> all(static_cast<size_t>(o.samples * o.lat * o.lon * channels));
  for (int64_t s = 0; s < o.samples; ++s) {
    for (int64_t g = 0; g * cc < channels; ++g) {
      auto chunk = floats_in(array + "/" + std::to_string(s) + ".0.0." + std::to_string(g));
      EXPECT_EQ(chunk.size(), size_t(o.lat * o.lon * cc));
      for (int64_t p = 0; p < o.lat * o.lon; ++p) {
        for (int64_t c = 0; c < cc && g * cc + c < channels; ++c) {
          all[size_t((s * o.lat * o.lon + p) * channels + g * cc + c)] = chunk[size_t(p * cc + c)];
        }
      }
    }
  }
  return all;
}

TEST(SynthWorkloads, PackedLayoutAndManifest) {
  TempDir dir;
  auto o = tiny_packed();
  std::mutex mutex;
  int64_t reported = 0;
  o.progress = [&](int64_t done, int64_t) {
    std::lock_guard lock(mutex);
    reported = std::max(reported, done);
  };
  DatasetSummary s = make_packed(dir / "ds", o);
  EXPECT_EQ(s.logical_bytes, 3 * 5 * 8 * (4 + 3) * 4);
  EXPECT_EQ(s.chunks, 3 * 2 + 3 * 2);
  EXPECT_EQ(reported, 3 * 5 * 8 * (4 + 3 + 1) * 4);  // the last target chunk is padded
  auto manifest = read_json(dir / "ds/chute.json");
  EXPECT_EQ(manifest["workload"], "packed");
  EXPECT_EQ(manifest["arrays"]["inputs"], "inputs");
  EXPECT_EQ(manifest["options"]["samples"], 3);
  EXPECT_EQ(manifest["created_by"], "chute make-dataset");
  auto zarray = read_json(dir / "ds/inputs/.zarray");
  EXPECT_EQ(zarray["shape"], nlohmann::json({3, 5, 8, 4}));
  EXPECT_EQ(zarray["chunks"], nlohmann::json({1, 5, 8, 2}));
  EXPECT_EQ(read_json(dir / "ds/inputs/.zattrs")["_ARRAY_DIMENSIONS"],
            nlohmann::json({"sample", "lat", "lon", "inputs_channel"}));
  EXPECT_TRUE(read_json(dir / "ds/.zmetadata")["metadata"].contains("targets/.zarray"));
  for (float v : read_packed_raw(dir / "ds/inputs", o, 4)) ASSERT_TRUE(std::isfinite(v));
}

TEST(SynthWorkloads, ValuesDoNotDependOnChunkingOrThreads) {
  TempDir dir;
  auto a = tiny_packed();
  auto b = tiny_packed();
  b.chunk_channels = 0;
  b.threads = 1;
  make_packed(dir / "a", a);
  make_packed(dir / "b", b);
  EXPECT_EQ(read_packed_raw(dir / "a/inputs", a, 4), read_packed_raw(dir / "b/inputs", b, 4));
  EXPECT_EQ(read_packed_raw(dir / "a/targets", a, 3), read_packed_raw(dir / "b/targets", b, 3));
  EXPECT_NE(read_packed_raw(dir / "a/inputs", a, 3), read_packed_raw(dir / "a/targets", a, 3));
}

TEST(SynthWorkloads, RejectsBadOptionsAndUsedFolders) {
  TempDir dir;
  auto code_of = [&](const PackedOptions& o, const std::string& out) {
    try {
      make_packed(out, o);
    } catch (const Error& e) {
      return e.code();
    }
    return ErrorCode::kInternal;
  };
  auto o = tiny_packed();
  o.samples = 0;
  EXPECT_EQ(code_of(o, dir / "x"), ErrorCode::kInvalidArgument);
  o = tiny_packed("lzma");
  EXPECT_EQ(code_of(o, dir / "x"), ErrorCode::kInvalidArgument);
  o = tiny_packed();
  o.zarr_format = 1;
  EXPECT_EQ(code_of(o, dir / "x"), ErrorCode::kInvalidArgument);
  EXPECT_FALSE(fs::exists(dir / "x"));
  write_text_file(dir / "file", "x");
  fs::create_directories(dir / "used");
  write_text_file(dir / "used/f", "x");
  EXPECT_EQ(code_of(tiny_packed(), dir / "used"), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of(tiny_packed(), dir / "file"), ErrorCode::kInvalidArgument);
}

TEST(SynthWorkloads, CompressedPackedReadsBackLikeRaw) {
  TempDir dir;
  auto raw = tiny_packed();
  make_packed(dir / "raw", raw);
  auto expected = read_packed_raw(dir / "raw/inputs", raw, 4);
  for (int format : {2, 3}) {
    for (const char* codec : {"blosc-lz4", "zstd", "gzip"}) {
      SCOPED_TRACE(std::string(codec) + " v" + std::to_string(format));
      std::string out = dir / (std::string(codec) + std::to_string(format));
      auto s = make_packed(out, tiny_packed(codec, format));
      EXPECT_GT(s.stored_bytes, 0);
      ArrayPtr array = open_array(out + "/inputs");
      std::vector<float> got(expected.size());
      std::vector<int64_t> start = {0, 0, 0, 0};
      array->read(start, StridedView::contiguous(reinterpret_cast<std::byte*>(got.data()),
                                                 {3, 5, 8, 4}, 4));
      EXPECT_EQ(got, expected);
    }
  }
}

TEST(SynthWorkloads, BloscLz4RatioIsRealistic) {
  TempDir dir;
  auto o = tiny_packed("blosc-lz4");
  o.lat = 46;
  o.lon = 90;
  o.chunk_channels = 4;
  auto s = make_packed(dir / "ds", o);
  double ratio = double(s.logical_bytes) / s.stored_bytes;
  EXPECT_GT(ratio, 1.2);
  EXPECT_LT(ratio, 2.5);
}

TEST(SynthWorkloads, VariablesGroupWithStatistics) {
  TempDir dir;
  VariablesOptions o;
  o.times = 4;
  o.levels = 3;
  o.lat = 6;
  o.lon = 10;
  o.codec = "none";
  make_variables(dir / "ds", o);
  auto zmeta = read_json(dir / "ds/.zmetadata")["metadata"];
  for (const char* key : {"time/.zarray", "level/.zarray", "lat/.zarray", "lon/.zarray",
                          "temperature/.zarray", "2m_temperature/.zattrs", "mean/.zgroup",
                          "mean/temperature/.zarray", "std/2m_temperature/.zarray"}) {
    EXPECT_TRUE(zmeta.contains(key)) << key;
  }
  EXPECT_EQ(zmeta["temperature/.zattrs"]["_ARRAY_DIMENSIONS"],
            nlohmann::json({"time", "level", "lat", "lon"}));
  EXPECT_EQ(zmeta["temperature/.zarray"]["chunks"], nlohmann::json({1, 3, 6, 10}));
  EXPECT_EQ(zmeta["mean/2m_temperature/.zarray"]["shape"], nlohmann::json::array());
  EXPECT_EQ(pressure_levels(13).size(), 13u);
  EXPECT_EQ(pressure_levels(3), (std::vector<int64_t>{50, 525, 1000}));

  // mean/std of level 1 of temperature, recomputed from the uncompressed chunks.
  double sum = 0, sum_sq = 0;
  int n = 0;
  for (int t = 0; t < 4; ++t) {
    auto chunk = floats_in(dir / ("ds/temperature/" + std::to_string(t) + ".0.0.0"));
    ASSERT_EQ(chunk.size(), 3u * 60);
    for (int i = 60; i < 120; ++i, ++n) {
      sum += chunk[i];
      sum_sq += double(chunk[i]) * chunk[i];
    }
  }
  double mean = sum / n, std_dev = std::sqrt(sum_sq / n - mean * mean);
  auto means = floats_in(dir / "ds/mean/temperature/0");
  auto stds = floats_in(dir / "ds/std/temperature/0");
  ASSERT_EQ(means.size(), 3u);
  EXPECT_NEAR(means[1], mean, 1e-3);
  EXPECT_NEAR(stds[1], std_dev, 1e-3);
  EXPECT_GT(stds[1], 0.0);
  auto levels = read_text(dir / "ds/level/0");
  ASSERT_EQ(levels.size(), 3u * 8);
}

TEST(SynthWorkloads, VolumeWithNpyHoldsTheSameValues) {
  TempDir dir;
  VolumeOptions o;
  o.size = 12;
  o.chunk = 8;
  o.input_channels = 2;
  o.target_channels = 1;
  o.codec = "none";
  o.npy = true;
  make_volume(dir / "ds", o);
  std::string npy = read_text(dir / "ds/input.npy");
  ASSERT_GT(npy.size(), 10u);
  EXPECT_EQ(npy.substr(0, 6), "\x93NUMPY");
  size_t header = 10 + (uint8_t(npy[8]) | (uint8_t(npy[9]) << 8));
  EXPECT_EQ(header % 64, 0u);
  EXPECT_NE(npy.find("'shape': (12, 12, 12, 2)"), std::string::npos);  // channels last
  auto values = floats_in(dir / "ds/input.npy", header);
  ASSERT_EQ(values.size(), 2u * 12 * 12 * 12);
  // Chunk (1, 1, 0, 1) covers channel 1, x 8..15, y 0..7, z 8..15 (padded past 12).
  auto chunk = floats_in(dir / "ds/input/1.1.0.1");
  ASSERT_EQ(chunk.size(), 512u);
  for (int x = 0; x < 4; ++x)
    for (int y = 0; y < 8; ++y)
      for (int z = 0; z < 4; ++z) {
        ASSERT_EQ(chunk[(x * 8 + y) * 8 + z], values[(((8 + x) * 12 + y) * 12 + 8 + z) * 2 + 1]);
      }
  EXPECT_EQ(read_json(dir / "ds/chute.json")["options"]["npy"]["target"], "target.npy");
}

/// Every element of the volume array at `path`, read by chute.
std::vector<float> read_volume(const std::string& path) {
  ArrayPtr array = open_array(path);
  const std::vector<int64_t> shape = array->metadata().shape;
  int64_t n = 1;
  for (int64_t e : shape) n *= e;
  std::vector<float> values(static_cast<size_t>(n));
  const std::vector<int64_t> start(shape.size(), 0);
  array->read(start,
              StridedView::contiguous(reinterpret_cast<std::byte*>(values.data()), shape, 4));
  return values;
}

TEST(SynthWorkloads, VolumeInnerChunksAreShardsHoldingTheSameValues) {
  TempDir dir;
  VolumeOptions o;
  o.size = 20;  // shards of 8 with a partial edge shard
  o.chunk = 8;
  o.input_channels = 2;
  o.target_channels = 1;
  o.zarr_format = 3;
  o.hdf5 = false;
  o.threads = 2;
  make_volume(dir / "plain", o);
  o.inner_chunk = 4;
  make_volume(dir / "sharded", o);
  const auto doc = read_json(dir / "sharded/input/zarr.json");
  EXPECT_EQ(doc["chunk_grid"]["configuration"]["chunk_shape"], nlohmann::json({1, 8, 8, 8}));
  ASSERT_EQ(doc["codecs"].size(), 1u);
  EXPECT_EQ(doc["codecs"][0]["name"], "sharding_indexed");
  const auto& sharding = doc["codecs"][0]["configuration"];
  EXPECT_EQ(sharding["chunk_shape"], nlohmann::json({1, 4, 4, 4}));
  EXPECT_EQ(sharding["codecs"][1]["name"], "blosc");
  EXPECT_EQ(sharding["index_location"], "end");
  // One file per (1, 8³) shard, as many as the plain form's chunks.
  EXPECT_TRUE(fs::exists(dir / "sharded/input/c/1/2/2/2"));
  EXPECT_FALSE(fs::exists(dir / "sharded/input/c/1/5/0/0"));
  EXPECT_FALSE(fs::exists(dir / "sharded/volume.h5"));
  EXPECT_EQ(read_json(dir / "sharded/chute.json")["options"]["inner_chunk"], 4);
  for (const char* name : {"input", "target"}) {
    const auto plain = read_volume(dir / (std::string("plain/") + name));
    const auto sharded = read_volume(dir / (std::string("sharded/") + name));
    ASSERT_EQ(plain.size(), sharded.size());
    EXPECT_EQ(0, std::memcmp(plain.data(), sharded.data(), plain.size() * 4)) << name;
  }
}

TEST(SynthWorkloads, VolumeInnerChunksNeedV3AndADivisor) {
  TempDir dir;
  VolumeOptions o;
  o.size = 16;
  o.chunk = 8;
  o.inner_chunk = 4;
  EXPECT_THROW(make_volume(dir / "v2", o), Error);  // zarr format 2 has no shards
  o.zarr_format = 3;
  o.inner_chunk = 3;
  EXPECT_THROW(make_volume(dir / "three", o), Error);
  EXPECT_FALSE(fs::exists(dir / "three"));  // checked before anything is written
}

}  // namespace
}  // namespace chute::synth
