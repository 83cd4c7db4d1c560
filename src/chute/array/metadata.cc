#include "chute/array/metadata.h"

namespace chute {

std::string chunk_key(const ChunkKeyEncoding& encoding, std::span<const int64_t> coords) {
  std::string key;
  if (encoding.kind == ChunkKeyKind::kDefault) {
    key = "c";
    for (int64_t c : coords) {
      key += encoding.separator;
      key += std::to_string(c);
    }
    return key;
  }
  if (coords.empty()) return "0";
  for (size_t i = 0; i < coords.size(); ++i) {
    if (i > 0) key += encoding.separator;
    key += std::to_string(coords[i]);
  }
  return key;
}

int64_t ArrayMetadata::num_elements() const {
  int64_t n = 1;
  for (int64_t extent : shape) n *= extent;
  return n;
}

int64_t ArrayMetadata::chunk_nbytes() const {
  int64_t n = data_type.size;
  for (int64_t extent : chunk_shape) n *= extent;
  return n;
}

}  // namespace chute
