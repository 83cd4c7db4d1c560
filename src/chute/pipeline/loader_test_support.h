#pragma once
// Fixtures for the dataset, pipeline and loader tests: small float32 arrays written chunk by
// chunk (raw `bytes` codec) into a MemoryStore, with values known from a formula so tests
// compute what every batch must hold without asking chute.

#include <cstring>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "chute/array/array.h"
#include "chute/array/metadata.h"
#include "chute/codec/codec_chain.h"
#include "chute/dataset/packed_dataset.h"
#include "chute/format/open.h"
#include "chute/store/memory_store.h"
#include "chute/util/element_count.h"

namespace chute::loader_testing {

/// The value of element `index` of array number `id`: exact in float32, distinct across ids.
inline float value_at(int id, std::span<const int64_t> index) {
  int64_t h = id + 1;
  for (int64_t i : index) h = h * 1009 + i;
  return static_cast<float>(((h * 7919) % 4194301) * 0.25 - 1000.0);
}

/// Steps `index` through [0, shape) in C order; false after the last.
inline bool step(std::vector<int64_t>& index, std::span<const int64_t> shape) {
  for (size_t d = index.size(); d-- > 0;) {
    if (++index[d] < shape[d]) return true;
    index[d] = 0;
  }
  return false;
}

/// Writes a float32 array of `shape` in chunks of `chunks` under `prefix` of `store`, holding
/// value_at(id, index) (or `values` in C order when given), and opens it.
inline ArrayPtr make_float_array(const std::shared_ptr<MemoryStore>& store,
                                 const std::string& prefix, std::vector<int64_t> shape,
                                 std::vector<int64_t> chunks, int id,
                                 const std::vector<float>* values = nullptr) {
  ArrayMetadata m;
  m.shape = shape;
  m.chunk_shape = chunks;
  m.data_type = DataType{DTypeKind::kFloat, 4};
  m.fill_value.assign(4, std::byte{0});
  m.codecs = {CodecSpec{"bytes", {{"endian", "little"}}}};
  auto chain = CodecChain::create(m.codecs, m.data_type, m.chunk_shape);
  CodecScratch scratch;
  ByteBuffer encoded;
  const size_t rank = shape.size();
  std::vector<int64_t> grid(rank);
  for (size_t d = 0; d < rank; ++d) grid[d] = (shape[d] + chunks[d] - 1) / chunks[d];
  std::vector<int64_t> coords(rank, 0);
  do {
    std::vector<float> chunk;
    std::vector<int64_t> local(rank, 0), global(rank);
    do {
      bool inside = true;
      int64_t linear = 0;
      for (size_t d = 0; d < rank; ++d) {
        global[d] = coords[d] * chunks[d] + local[d];
        inside = inside && global[d] < shape[d];
        linear = linear * shape[d] + global[d];
      }
      float v = -77.0f;
      if (inside) v = values ? (*values)[static_cast<size_t>(linear)] : value_at(id, global);
      chunk.push_back(v);
    } while (rank > 0 && step(local, chunks));
    chain->encode(std::as_bytes(std::span(chunk)), encoded, scratch);
    store->set(join_key(prefix, chunk_key(m.chunk_key_encoding, coords)),
               std::vector<std::byte>(encoded.data(), encoded.data() + encoded.size()));
  } while (rank > 0 && step(coords, grid));
  return std::make_shared<Array>(store, prefix, m, prefix);
}

/// Reads the whole box [start, start+shape) of `array` into a vector (the direct reference).
inline std::vector<float> read_floats(const Array& array, std::vector<int64_t> start,
                                      std::vector<int64_t> shape) {
  std::vector<float> out(static_cast<size_t>(element_count(shape)));
  array.read(start, StridedView::contiguous(reinterpret_cast<std::byte*>(out.data()), shape, 4));
  return out;
}

/// Packed-samples fixture: "inputs" (n, 3, 4, 5) in chunks (1, 3, 4, 2) and "targets" (n, 3, 4, 2)
/// in whole-sample chunks (1, 3, 4, 2).
struct PackedFixture {
  std::shared_ptr<MemoryStore> store = std::make_shared<MemoryStore>();
  ArrayPtr inputs;
  ArrayPtr targets;
  explicit PackedFixture(int64_t n) {
    inputs = make_float_array(store, "inputs", {n, 3, 4, 5}, {1, 3, 4, 2}, 1);
    targets = make_float_array(store, "targets", {n, 3, 4, 2}, {1, 3, 4, 2}, 2);
  }
};

/// The fixture's two arrays as a packed dataset, "inputs" and "targets".
inline std::shared_ptr<PackedDataset> packed_dataset(const PackedFixture& f) {
  return std::make_shared<PackedDataset>(
      std::vector<std::pair<std::string, ArrayPtr>>{{"inputs", f.inputs}, {"targets", f.targets}});
}

/// A small weather group ("memory/w2"): z (time, level, lat, lon) and t2m (time, lat, lon) float32
/// holding value_at(), the level coordinate and per-level statistics arrays.
namespace small_weather {
inline constexpr int64_t kT = 8, kL = 3, kH = 4, kW = 5;
inline const std::vector<float> kLevels = {500, 700, 850};
inline const std::vector<float> kZMean = {1.5f, -2.0f, 3.0f}, kZStd = {2.0f, 0.5f, 4.0f};
inline const std::vector<float> kT2mMean = {-7.0f}, kT2mStd = {3.0f};

inline Group make_group() {
  auto store = std::make_shared<MemoryStore>();
  Group group;
  group.name = "memory/w2";
  group.arrays["z"] = make_float_array(store, "z", {kT, kL, kH, kW}, {1, kL, kH, kW}, 1);
  group.arrays["t2m"] = make_float_array(store, "t2m", {kT, kH, kW}, {1, 2, kW}, 2);
  group.arrays["level"] = make_float_array(store, "level", {kL}, {kL}, 0, &kLevels);
  group.arrays["z_mean"] = make_float_array(store, "z_mean", {kL}, {kL}, 0, &kZMean);
  group.arrays["z_std"] = make_float_array(store, "z_std", {kL}, {kL}, 0, &kZStd);
  group.arrays["t2m_mean"] = make_float_array(store, "t2m_mean", {1}, {1}, 0, &kT2mMean);
  group.arrays["t2m_std"] = make_float_array(store, "t2m_std", {1}, {1}, 0, &kT2mStd);
  return group;
}
}  // namespace small_weather

}  // namespace chute::loader_testing
