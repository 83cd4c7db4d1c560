#pragma once
// Helpers for the array tests: metadata for small arrays, chunks (and shards) written into a
// MemoryStore from a known generating function, and reference boxes computed from the same
// function, so every read is compared with values the test knows independently of chute.

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "chute/array/array.h"
#include "chute/array/chunk_grid.h"
#include "chute/array/read_scratch.h"
#include "chute/array/strided_copy.h"
#include "chute/codec/codec_chain.h"
#include "chute/store/memory_store.h"
#include "chute/util/element_count.h"
#include "chute/util/error.h"
#include "chute/util/thread_pool.h"

namespace chute::testing {

using Coords = std::vector<int64_t>;
/// Whether the chunk (or inner chunk) at these coordinates is stored.
using Present = std::function<bool(std::span<const int64_t>)>;

inline bool all_present(std::span<const int64_t>) { return true; }

inline CodecSpec bytes_codec() { return {"bytes", {{"endian", "little"}}}; }

template <typename T>
DataType dtype_of() {
  if constexpr (std::is_same_v<T, float>) return {DTypeKind::kFloat, 4};
  if constexpr (std::is_same_v<T, double>) return {DTypeKind::kFloat, 8};
  if constexpr (std::is_same_v<T, int32_t>) return {DTypeKind::kInt, 4};
  if constexpr (std::is_same_v<T, int16_t>) return {DTypeKind::kInt, 2};
  if constexpr (std::is_same_v<T, uint8_t>) return {DTypeKind::kUInt, 1};
  if constexpr (std::is_same_v<T, uint64_t>) return {DTypeKind::kUInt, 8};
}

inline StridedView view_of(std::vector<float>& buffer, Coords shape) {
  return StridedView::contiguous(reinterpret_cast<std::byte*>(buffer.data()), std::move(shape),
                                 sizeof(float));
}

/// The value at a global index: distinct for every element of arrays below 2^23 elements (so
/// exact in float32), never the fill values the tests use.
template <typename T>
T generate(std::span<const int64_t> index) {
  int64_t h = 0;
  for (int64_t i : index) h = h * 1000 + i;
  if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(static_cast<double>((h * 7919) % 8388593) * 0.5 + 1.0);
  } else {
    return static_cast<T>((h * 7919) % 8388593 % 250 + 1);
  }
}

template <typename T>
ArrayMetadata make_metadata(Coords shape, Coords chunks, std::vector<CodecSpec> codecs = {},
                            T fill = T{0}) {
  ArrayMetadata m;
  m.shape = std::move(shape);
  m.chunk_shape = std::move(chunks);
  m.data_type = dtype_of<T>();
  m.fill_value.resize(sizeof(T));
  std::memcpy(m.fill_value.data(), &fill, sizeof(T));
  m.codecs = codecs.empty() ? std::vector<CodecSpec>{bytes_codec()} : std::move(codecs);
  return m;
}

/// Advances `index` through the box [0, shape) in C order; false after the last.
inline bool next_index(std::vector<int64_t>& index, std::span<const int64_t> shape) {
  for (size_t d = index.size(); d-- > 0;) {
    if (++index[d] < shape[d]) return true;
    index[d] = 0;
  }
  return false;
}

/// The decoded bytes (C order, full size) of the chunk at `coords` of a grid of `chunk`-sized
/// chunks over `shape`; elements past the array's edge hold junk, as Zarr allows.
template <typename T>
std::vector<std::byte> chunk_bytes(std::span<const int64_t> shape, std::span<const int64_t> chunk,
                                   std::span<const int64_t> coords) {
  std::vector<T> values;
  values.reserve(static_cast<size_t>(element_count(chunk)));
  std::vector<int64_t> local(chunk.size(), 0), global(chunk.size());
  do {
    bool inside = true;
    for (size_t d = 0; d < chunk.size(); ++d) {
      global[d] = coords[d] * chunk[d] + local[d];
      inside = inside && global[d] < shape[d];
    }
    values.push_back(inside ? generate<T>(global) : static_cast<T>(99));
  } while (!chunk.empty() && next_index(local, chunk));
  std::vector<std::byte> bytes(values.size() * sizeof(T));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

/// Writes every present chunk of `m` under `prefix`, encoded with the array's own codec chain.
template <typename T>
void write_chunks(MemoryStore& store, const std::string& prefix, const ArrayMetadata& m,
                  const Present& present = all_present) {
  auto chain = CodecChain::create(m.codecs, m.data_type, m.chunk_shape);
  CodecScratch scratch;
  ByteBuffer encoded;
  Coords grid = chunk_grid_shape(m.shape, m.chunk_shape);
  if (element_count(grid) == 0) return;
  Coords coords(grid.size(), 0);
  do {
    if (!present(coords)) continue;
    auto bytes = chunk_bytes<T>(m.shape, m.chunk_shape, coords);
    chain->encode(bytes, encoded, scratch);
    std::string key = join_key(prefix, chunk_key(m.chunk_key_encoding, coords));
    store.set(key, std::vector<std::byte>(encoded.data(), encoded.data() + encoded.size()));
  } while (!grid.empty() && next_index(coords, grid));
}

/// Metadata of a sharded array: shards of `shard` elements holding inner chunks of `inner`,
/// stored with the `bytes` codec; the index is encoded with `bytes` only (plus crc32c when
/// `crc`).
template <typename T>
ArrayMetadata make_sharded_metadata(Coords shape, Coords shard, Coords inner, bool index_at_end,
                                    T fill = T{0}, bool crc = false) {
  nlohmann::json index_codecs =
      nlohmann::json::array({{{"name", "bytes"}, {"configuration", {{"endian", "little"}}}}});
  if (crc) index_codecs.push_back({{"name", "crc32c"}});
  CodecSpec sharding{
      "sharding_indexed",
      {{"chunk_shape", inner},
       {"codecs",
        nlohmann::json::array({{{"name", "bytes"}, {"configuration", {{"endian", "little"}}}}})},
       {"index_codecs", index_codecs},
       {"index_location", index_at_end ? "end" : "start"}}};
  return make_metadata<T>(std::move(shape), std::move(shard), {sharding}, fill);
}

/// Writes shards by hand (independently of chute's sharding encoder): the present inner chunks
/// in row-major order, then (or before) an index of little-endian (offset, nbytes) pairs.
/// Shards with no present inner chunk are not written. Requires index codecs = [bytes].
template <typename T>
void write_shards(MemoryStore& store, const std::string& prefix, const ArrayMetadata& m,
                  const Coords& inner, bool index_at_end, const Present& present_inner) {
  const size_t rank = m.shape.size();
  Coords per_shard(rank);
  for (size_t d = 0; d < rank; ++d) per_shard[d] = m.chunk_shape[d] / inner[d];
  const int64_t n = element_count(per_shard);
  const uint64_t index_nbytes = static_cast<uint64_t>(n) * 16;
  Coords grid = chunk_grid_shape(m.shape, m.chunk_shape);
  if (element_count(grid) == 0) return;
  Coords shard(rank, 0);
  do {
    std::vector<std::byte> data;
    std::vector<uint64_t> index(static_cast<size_t>(2 * n), ~uint64_t{0});
    Coords local(rank, 0), coords(rank);
    int64_t position = 0;
    bool any = false;
    do {
      for (size_t d = 0; d < rank; ++d) coords[d] = shard[d] * per_shard[d] + local[d];
      if (present_inner(coords)) {
        auto bytes = chunk_bytes<T>(m.shape, inner, coords);
        index[2 * position] = data.size() + (index_at_end ? 0 : index_nbytes);
        index[2 * position + 1] = bytes.size();
        data.insert(data.end(), bytes.begin(), bytes.end());
        any = true;
      }
      ++position;
    } while (rank > 0 && next_index(local, per_shard));
    if (!any) continue;
    std::vector<std::byte> index_bytes(index_nbytes);
    std::memcpy(index_bytes.data(), index.data(), index_nbytes);
    if (index_at_end) {
      data.insert(data.end(), index_bytes.begin(), index_bytes.end());
    } else {
      data.insert(data.begin(), index_bytes.begin(), index_bytes.end());
    }
    store.set(join_key(prefix, chunk_key(m.chunk_key_encoding, shard)), std::move(data));
  } while (rank > 0 && next_index(shard, grid));
}

/// The expected contents (C order) of box [start, start+shape): generated values where the
/// element's chunk of `chunk` elements is present, else `fill`.
template <typename T>
std::vector<T> expected_box(std::span<const int64_t> start, std::span<const int64_t> shape,
                            std::span<const int64_t> chunk, T fill,
                            const Present& present = all_present) {
  std::vector<T> out;
  if (element_count(shape) == 0) return out;
  std::vector<int64_t> local(shape.size(), 0), global(shape.size()), coords(shape.size());
  do {
    for (size_t d = 0; d < shape.size(); ++d) {
      global[d] = start[d] + local[d];
      coords[d] = global[d] / chunk[d];
    }
    out.push_back(present(coords) ? generate<T>(global) : fill);
  } while (!shape.empty() && next_index(local, shape));
  return out;
}

/// Compares element bytes (so NaN fill values compare equal to themselves).
template <typename T>
::testing::AssertionResult same_elements(const std::vector<T>& expected,
                                         const std::vector<T>& actual) {
  if (expected.size() != actual.size()) {
    return ::testing::AssertionFailure()
           << "sizes differ: expected " << expected.size() << ", got " << actual.size();
  }
  for (size_t i = 0; i < expected.size(); ++i) {
    if (std::memcmp(&expected[i], &actual[i], sizeof(T)) != 0) {
      return ::testing::AssertionFailure()
             << "element " << i << ": expected " << +expected[i] << ", got " << +actual[i];
    }
  }
  return ::testing::AssertionSuccess();
}

/// Reads box [start, start+shape) into a fresh C-contiguous buffer.
template <typename T>
std::vector<T> read_box(const Array& array, std::span<const int64_t> start, Coords shape,
                        ThreadPool* pool = nullptr, ReadStats* stats = nullptr) {
  std::vector<T> out(static_cast<size_t>(element_count(shape)), static_cast<T>(-5));
  auto view = StridedView::contiguous(reinterpret_cast<std::byte*>(out.data()), std::move(shape),
                                      sizeof(T));
  array.read(start, view, pool, stats);
  return out;
}

/// A random box inside `shape` (extents >= 1 where the shape allows).
inline std::pair<Coords, Coords> random_box(std::mt19937_64& rng, std::span<const int64_t> shape) {
  Coords start(shape.size()), extent(shape.size());
  for (size_t d = 0; d < shape.size(); ++d) {
    start[d] = std::uniform_int_distribution<int64_t>(0, shape[d] - 1)(rng);
    extent[d] = std::uniform_int_distribution<int64_t>(1, shape[d] - start[d])(rng);
  }
  return {start, extent};
}

}  // namespace chute::testing
