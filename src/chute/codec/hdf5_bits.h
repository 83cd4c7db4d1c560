#pragma once
// Internal to codec/: the packed bit stream of HDF5's n-bit and scale-offset filters (values of
// a few bits each, most significant bit first, one after the other across byte boundaries), and
// the fixed-width little- and big-endian fields of the HDF5 filters' headers.

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
    if (bits > 56) {  // more than the window holds after a refill: two reads
      const uint64_t high = read(bits - 32);
      return (high << 32) | read(32);
    }
    while (fill_ < bits) {
      if (at_ >= in_.size()) {
        fail(ErrorCode::kCorruptData, "{}: the packed stream of {} bytes ends too early", codec_,
             in_.size());
      }
      window_ = (window_ << 8) | static_cast<uint64_t>(in_[at_++]);
      fill_ += 8;
    }
    fill_ -= bits;
    return bits == 0 ? 0 : (window_ >> fill_) & (~uint64_t{0} >> (64 - bits));
  }

 private:
  std::span<const std::byte> in_;
  const char* codec_;
  size_t at_ = 0;        // the next byte to load
  uint64_t window_ = 0;  // loaded bytes; the low `fill_` bits are not read yet
  unsigned fill_ = 0;
};

/// The `size` (at most 8) bytes at `in` as an unsigned value, in little- or big-endian order.
inline uint64_t hdf5_load_value(const std::byte* in, size_t size, bool big_endian) {
  uint64_t v = 0;
  for (size_t i = 0; i < size; ++i) {
    v |= static_cast<uint64_t>(in[big_endian ? size - 1 - i : i]) << (8 * i);
  }
  return v;
}

/// Writes the low `size` bytes of `v` at `out` in little- or big-endian order.
inline void hdf5_store_value(std::byte* out, uint64_t v, size_t size, bool big_endian) {
  for (size_t i = 0; i < size; ++i) {
    out[big_endian ? size - 1 - i : i] = std::byte((v >> (8 * i)) & 0xff);
  }
}

}  // namespace chute
