#pragma once
// Array metadata parsed into plain validated structs before any chunk is read. Zarr v2 metadata
// is mapped onto the v3 form (one codec list), so everything below format/ sees one model.

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "chute/vocab/codec_spec.h"
#include "chute/vocab/dtype.h"

namespace chute {

enum class ChunkKeyKind : uint8_t {
  kDefault,  // v3 default: "c/1/2" (separator '/' or '.': "c.1.2"); 0-d: "c"
  kV2,       // v2 style: "1.2" (separator '.' or '/': "1/2"); 0-d: "0"
};

struct ChunkKeyEncoding {
  ChunkKeyKind kind = ChunkKeyKind::kDefault;
  char separator = '/';
};

/// The key of the chunk at grid coordinates `coords` (relative to the array's folder).
std::string chunk_key(const ChunkKeyEncoding& encoding, std::span<const int64_t> coords);

struct ArrayMetadata {
  std::string format = "zarr";  // the format that opened it: "zarr", "hdf5", "npy"
  int zarr_format = 3;          // 2 or 3 for Zarr, 0 for other formats
  std::vector<int64_t> shape;
  std::vector<int64_t> chunk_shape;  // the chunk grid (for sharded arrays: the shard shape)
  DataType data_type;
  /// data_type.size bytes in native byte order (zeros when the metadata says null).
  std::vector<std::byte> fill_value;
  bool fill_value_null = false;  // v2 metadata said null (xarray then masks nothing)
  /// Encode order: array->array codecs, one array->bytes codec, bytes->bytes codecs.
  /// v2 maps to [transpose if order F] + filters + [bytes(endian)] + [compressor if any].
  std::vector<CodecSpec> codecs;
  ChunkKeyEncoding chunk_key_encoding;
  /// Empty, or one per dimension ("" where unnamed); from dimension_names or _ARRAY_DIMENSIONS.
  std::vector<std::string> dimension_names;
  nlohmann::json attributes = nlohmann::json::object();
  /// The stored type of numeric attributes whose format records one (HDF5, NetCDF-4: a float32
  /// scale_factor), by name; none for Zarr, whose attributes are JSON numbers. CF decoding picks
  /// its result type from them as xarray does.
  std::map<std::string, DataType> attribute_types;

  size_t rank() const { return shape.size(); }
  int64_t num_elements() const;
  /// Bytes of one decoded chunk of the grid (chunk_shape product × element size).
  int64_t chunk_nbytes() const;
};

}  // namespace chute
