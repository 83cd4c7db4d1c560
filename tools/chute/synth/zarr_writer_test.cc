#include "chute/synth/zarr_writer.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <numeric>

#include "chute/synth/testing.h"
#include "chute/util/error.h"

namespace chute::synth {
namespace {
namespace fs = std::filesystem;
using testing::read_json;
using testing::read_text;
using testing::TempDir;

ArraySpec small_spec(int format, std::string codec = "none") {
  ArraySpec spec;
  spec.zarr_format = format;
  spec.shape = {3, 5};
  spec.chunk_shape = {2, 4};
  spec.data_type = {DTypeKind::kFloat, 4};
  spec.dimension_names = {"y", "x"};
  spec.attributes = {{"units", "K"}};
  spec.codec = std::move(codec);
  return spec;
}

std::vector<float> iota(size_t n) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), 0.0f);
  return v;
}

std::vector<float> written_floats(const std::string& path) {
  std::string bytes = read_text(path);
  std::vector<float> v(bytes.size() / 4);
  std::memcpy(v.data(), bytes.data(), v.size() * 4);
  return v;
}

TEST(SynthZarrWriter, WritesV2Metadata) {
  TempDir dir;
  ArrayWriter writer(dir / "a", small_spec(2, "blosc-lz4"));
  auto zarray = read_json(dir / "a/.zarray");
  EXPECT_EQ(zarray["zarr_format"], 2);
  EXPECT_EQ(zarray["shape"], nlohmann::json({3, 5}));
  EXPECT_EQ(zarray["chunks"], nlohmann::json({2, 4}));
  EXPECT_EQ(zarray["dtype"], "<f4");
  EXPECT_EQ(zarray["order"], "C");
  EXPECT_EQ(zarray["compressor"]["id"], "blosc");
  EXPECT_EQ(zarray["compressor"]["cname"], "lz4");
  EXPECT_EQ(zarray["compressor"]["shuffle"], 1);
  auto zattrs = read_json(dir / "a/.zattrs");
  EXPECT_EQ(zattrs["_ARRAY_DIMENSIONS"], nlohmann::json({"y", "x"}));
  EXPECT_EQ(zattrs["units"], "K");
  EXPECT_EQ(writer.chunk_count(), 4);
  EXPECT_EQ(writer.chunk_coords(3), (std::vector<int64_t>{1, 1}));
}

TEST(SynthZarrWriter, WritesV3Metadata) {
  TempDir dir;
  ArrayWriter writer(dir / "a", small_spec(3, "zstd"));
  auto doc = read_json(dir / "a/zarr.json");
  EXPECT_EQ(doc["zarr_format"], 3);
  EXPECT_EQ(doc["node_type"], "array");
  EXPECT_EQ(doc["data_type"], "float32");
  EXPECT_EQ(doc["chunk_grid"]["configuration"]["chunk_shape"], nlohmann::json({2, 4}));
  EXPECT_EQ(doc["dimension_names"], nlohmann::json({"y", "x"}));
  ASSERT_EQ(doc["codecs"].size(), 2u);
  EXPECT_EQ(doc["codecs"][0]["name"], "bytes");
  EXPECT_EQ(doc["codecs"][1]["name"], "zstd");
  EXPECT_EQ(doc["attributes"]["units"], "K");
}

TEST(SynthZarrWriter, WriteAllSplitsIntoPaddedChunksV2) {
  TempDir dir;
  ArrayWriter writer(dir / "a", small_spec(2));
  auto data = iota(15);
  writer.write_all(std::as_bytes(std::span(data)));
  // Chunk (1, 1) holds row 2, columns 4..7 of a 3x5 array: value 14 then padding.
  EXPECT_EQ(written_floats(dir / "a/1.1"), (std::vector<float>{14, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(written_floats(dir / "a/0.0"), (std::vector<float>{0, 1, 2, 3, 5, 6, 7, 8}));
  EXPECT_EQ(written_floats(dir / "a/1.0"), (std::vector<float>{10, 11, 12, 13, 0, 0, 0, 0}));
}

TEST(SynthZarrWriter, V3ChunkKeysUseFolders) {
  TempDir dir;
  ArrayWriter writer(dir / "a", small_spec(3));
  auto data = iota(15);
  writer.write_all(std::as_bytes(std::span(data)));
  EXPECT_EQ(written_floats(dir / "a/c/0/1"), (std::vector<float>{4, 0, 0, 0, 9, 0, 0, 0}));
}

TEST(SynthZarrWriter, ZeroDimensionalArray) {
  TempDir dir;
  ArraySpec spec = small_spec(2);
  spec.shape = {};
  spec.chunk_shape = {};
  spec.dimension_names = {};
  ArrayWriter writer(dir / "s", spec);
  float value = 3.5f;
  writer.write_all(std::as_bytes(std::span(&value, 1)));
  EXPECT_EQ(written_floats(dir / "s/0"), (std::vector<float>{3.5f}));
}

TEST(SynthZarrWriter, RejectsBadSpecsAndExistingArrays) {
  TempDir dir;
  ArraySpec spec = small_spec(2);
  spec.chunk_shape = {2};
  EXPECT_THROW(ArrayWriter(dir / "a", spec), Error);
  spec = small_spec(4);
  EXPECT_THROW(ArrayWriter(dir / "a", spec), Error);
  spec = small_spec(2, "snappy");
  EXPECT_THROW(ArrayWriter(dir / "a", spec), Error);
  ArrayWriter first(dir / "b", small_spec(2));
  EXPECT_THROW(ArrayWriter(dir / "b", small_spec(2)), Error);
  std::vector<std::byte> wrong(7);
  CodecScratch scratch;
  ByteBuffer out;
  std::vector<int64_t> coords = {0, 0};
  EXPECT_THROW(first.write_chunk(coords, wrong, scratch, out), Error);
}

TEST(SynthZarrWriter, CodecPresets) {
  for (const auto& name : codec_preset_names()) EXPECT_EQ(codec_preset(name).name, name);
  EXPECT_TRUE(codec_preset("none").compressors.empty());
  EXPECT_TRUE(codec_preset("none").v2_compressor.is_null());
  EXPECT_EQ(codec_preset("gzip").v2_compressor["id"], "gzip");
  try {
    codec_preset("lzma");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("lzma"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("blosc-lz4"), std::string::npos);
  }
}

TEST(SynthZarrWriter, ConsolidatesV2) {
  TempDir dir;
  write_group(dir.path(), 2, {{"title", "t"}});
  write_group(dir / "sub", 2);
  ArrayWriter a(dir / "a", small_spec(2));
  ArrayWriter b(dir / "sub/b", small_spec(2));
  consolidate_metadata(dir.path(), 2);
  auto z = read_json(dir / ".zmetadata");
  EXPECT_EQ(z["zarr_consolidated_format"], 1);
  const auto& m = z["metadata"];
  for (const char* key : {".zgroup", ".zattrs", "a/.zarray", "a/.zattrs", "sub/.zgroup",
                          "sub/b/.zarray", "sub/b/.zattrs"}) {
    EXPECT_TRUE(m.contains(key)) << key;
  }
  EXPECT_EQ(m["a/.zarray"], a.documents()[".zarray"]);
  EXPECT_EQ(m[".zattrs"]["title"], "t");
}

TEST(SynthZarrWriter, ConsolidatesV3) {
  TempDir dir;
  write_group(dir.path(), 3, {{"title", "t"}});
  write_group(dir / "sub", 3);
  ArrayWriter a(dir / "a", small_spec(3));
  ArrayWriter b(dir / "sub/b", small_spec(3));
  consolidate_metadata(dir.path(), 3);
  auto root = read_json(dir / "zarr.json");
  EXPECT_EQ(root["node_type"], "group");
  EXPECT_EQ(root["attributes"]["title"], "t");
  const auto& c = root["consolidated_metadata"];
  EXPECT_EQ(c["kind"], "inline");
  EXPECT_EQ(c["metadata"]["a"], a.documents()["zarr.json"]);
  EXPECT_EQ(c["metadata"]["sub/b"]["node_type"], "array");
  EXPECT_EQ(c["metadata"]["sub"]["node_type"], "group");
  EXPECT_FALSE(c["metadata"].contains(""));
}

}  // namespace
}  // namespace chute::synth
