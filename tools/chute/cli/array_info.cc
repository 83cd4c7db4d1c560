#include "array_info.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "chute/array/chunk_source.h"
#include "chute/codec/codec_chain.h"
#include "chute/codec/sharding.h"
#include "chute/util/element_count.h"

namespace chute::cli {
using nlohmann::json;

namespace {

json float_json(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  return v;
}

template <typename T>
T load(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

double half_to_double(uint16_t h) {
  int exponent = (h >> 10) & 0x1f;
  int mantissa = h & 0x3ff;
  double sign = (h & 0x8000) ? -1.0 : 1.0;
  if (exponent == 0) return sign * std::ldexp(mantissa, -24);
  if (exponent == 31) {
    return mantissa ? std::numeric_limits<double>::quiet_NaN()
                    : sign * std::numeric_limits<double>::infinity();
  }
  return sign * std::ldexp(mantissa + 1024, exponent - 25);
}

json scalar_json(const DataType& type, const std::byte* p) {
  switch (type.kind) {
    case DTypeKind::kBool:
      return *p != std::byte{0};
    case DTypeKind::kInt:
      switch (type.size) {
        case 1:
          return load<int8_t>(p);
        case 2:
          return load<int16_t>(p);
        case 4:
          return load<int32_t>(p);
        default:
          return load<int64_t>(p);
      }
    case DTypeKind::kUInt:
      switch (type.size) {
        case 1:
          return load<uint8_t>(p);
        case 2:
          return load<uint16_t>(p);
        case 4:
          return load<uint32_t>(p);
        default:
          return load<uint64_t>(p);
      }
    case DTypeKind::kFloat:
      if (type.size == 2) return float_json(half_to_double(load<uint16_t>(p)));
      if (type.size == 4) return float_json(load<float>(p));
      return float_json(load<double>(p));
    case DTypeKind::kBFloat:
      return float_json(std::bit_cast<float>(uint32_t{load<uint16_t>(p)} << 16));
    case DTypeKind::kComplex: {
      DataType half{DTypeKind::kFloat, static_cast<uint8_t>(type.size / 2)};
      return json::array({scalar_json(half, p), scalar_json(half, p + type.size / 2)});
    }
  }
  return nullptr;
}

}  // namespace

json fill_value_json(const ArrayMetadata& metadata) {
  if (metadata.fill_value.size() != metadata.data_type.size) return nullptr;
  return scalar_json(metadata.data_type, metadata.fill_value.data());
}

namespace {

constexpr int64_t kMaxCheckedChunks = 100'000;

}  // namespace

json array_info(const Array& array, const std::string& name) {
  const ArrayMetadata& m = array.metadata();
  const ShardingCodec* sharding = array.codecs().sharding();

  std::vector<int64_t> grid;
  for (size_t d = 0; d < m.rank(); ++d) {
    grid.push_back(m.chunk_shape[d] ? (m.shape[d] + m.chunk_shape[d] - 1) / m.chunk_shape[d] : 0);
  }
  const int64_t count = element_count(grid);
  // One stat() per chunk key: a grid of 2^40 chunks would take days, so only the first
  // kMaxCheckedChunks keys are looked at, and the report says so ("checked").
  const int64_t checked = std::min(count, kMaxCheckedChunks);
  int64_t stored = 0, stored_bytes = 0;
  int64_t smallest = std::numeric_limits<int64_t>::max(), largest = 0;
  std::vector<int64_t> coords(m.rank(), 0), read_coords(m.rank(), 0);
  for (int64_t c = 0; c < checked; ++c) {
    int64_t rest = c;
    for (size_t d = m.rank(); d-- > 0;) {
      coords[d] = rest % grid[d];
      rest /= grid[d];
      read_coords[d] = sharding ? coords[d] * sharding->chunks_per_shard[d] : coords[d];
    }
    if (auto size = array.source().stored_nbytes(read_coords)) {
      int64_t n = static_cast<int64_t>(*size);
      ++stored;
      stored_bytes += n;
      smallest = std::min(smallest, n);
      largest = std::max(largest, n);
    }
  }
  const int64_t logical = m.num_elements() * m.data_type.size;

  json specs = json::array();
  for (const auto& spec : m.codecs) {
    specs.push_back({{"name", spec.name}, {"configuration", spec.configuration}});
  }
  json chunks = {{"grid", grid},
                 {"count", count},
                 {"checked", checked},
                 {"stored", stored},
                 {"decoded_nbytes", m.chunk_nbytes()},
                 {"inner_decoded_nbytes", nullptr},
                 {"stored_nbytes_mean", stored ? json(double(stored_bytes) / stored) : json()},
                 {"stored_nbytes_min", stored ? json(smallest) : json()},
                 {"stored_nbytes_max", stored ? json(largest) : json()}};
  if (sharding) {
    chunks["inner_decoded_nbytes"] = element_count(sharding->inner_chunk_shape) * m.data_type.size;
  }
  return {{"name", name},
          {"node_type", "array"},
          {"format", m.format},
          {"zarr_format", m.format == "zarr" ? json(m.zarr_format) : json()},
          {"shape", m.shape},
          {"chunk_shape", m.chunk_shape},
          {"inner_chunk_shape", sharding ? json(sharding->inner_chunk_shape) : json()},
          {"dtype", m.data_type.name()},
          {"numpy_dtype", m.data_type.numpy_str()},
          {"fill_value", fill_value_json(m)},
          {"dimension_names", m.dimension_names},
          {"codecs", array.codecs().describe()},
          {"codec_specs", specs},
          {"chunks", chunks},
          {"logical_nbytes", logical},
          {"stored_nbytes", stored_bytes},
          {"ratio", stored_bytes ? json(double(logical) / stored_bytes) : json()},
          {"attributes", m.attributes}};
}

json group_info(const Group& group, const std::string& name) {
  json arrays = json::array();
  int64_t logical = 0, stored = 0;
  for (const auto& [path, array] : group.arrays) {
    json info = array_info(*array, path);
    logical += info["logical_nbytes"].get<int64_t>();
    stored += info["stored_nbytes"].get<int64_t>();
    arrays.push_back(std::move(info));
  }
  json totals = {{"arrays", group.arrays.size()},
                 {"logical_nbytes", logical},
                 {"stored_nbytes", stored},
                 {"ratio", stored ? json(double(logical) / stored) : json()}};
  return {{"name", name},
          {"node_type", "group"},
          {"format", group.format},
          {"zarr_format", group.format == "zarr" ? json(group.zarr_format) : json()},
          {"attributes", group.attributes},
          {"groups", group.groups},
          {"arrays", arrays},
          {"totals", totals}};
}

}  // namespace chute::cli
