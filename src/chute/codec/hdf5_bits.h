#pragma once
// Internal to codec/: the packed bit stream of HDF5's n-bit and scale-offset filters: values of
// a few bits each, most significant bit first, one after the other across byte boundaries.

#include <cstddef>
#include <cstdint>
#include <span>

#include "chute/util/error.h"

namespace chute {

class Hdf5BitReader {
 public:
  Hdf5BitReader(std::span<const std::byte> in, const char* codec) : in_(in), codec_(codec) {}

  /// The next `bits` (at most 64) bits as an unsigned value; kCorruptData past the end.
  uint64_t read(unsigned bits) {
    uint64_t v = 0;
    while (bits > 0) {
      if (at_ >= in_.size()) {
        fail(ErrorCode::kCorruptData, "{}: the packed stream of {} bytes ends too early", codec_,
             in_.size());
      }
      const unsigned take = bits < left_ ? bits : left_;
      const auto byte = static_cast<unsigned>(in_[at_]);
      const uint64_t part = (byte >> (left_ - take)) & ((1u << take) - 1u);
      v = take == 64 ? part : (v << take) | part;
      left_ -= take;
      bits -= take;
      if (left_ == 0) {
        ++at_;
        left_ = 8;
      }
    }
    return v;
  }

 private:
  std::span<const std::byte> in_;
  const char* codec_;
  size_t at_ = 0;
  unsigned left_ = 8;  // bits not yet read in in_[at_]
};

/// Writes the low `size` bytes of `v` at `out` in little- or big-endian order.
inline void hdf5_store_value(std::byte* out, uint64_t v, size_t size, bool big_endian) {
  for (size_t i = 0; i < size; ++i) {
    out[big_endian ? size - 1 - i : i] = std::byte((v >> (8 * i)) & 0xff);
  }
}

}  // namespace chute
