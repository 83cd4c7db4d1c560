// HDF5's scale-offset filter (6). Client data, as libhdf5 writes them at dataset creation:
// [scale type (0 float D-scaling, 1 float E-scaling, 2 integer), scale factor, elements per
// chunk, class (0 integer, 1 float), size, sign (0 unsigned, 1 signed), byte order (0 little,
// 1 big), fill value defined, fill value bytes from index 8 (little-endian words)].
//
// A chunk is a 21-byte header (the bit width `minbits` as a little-endian uint32, the byte count
// of `minval`, `minval` little-endian) and then each element's offset from the minimum in
// `minbits` bits, most significant first. Integers decode as offset + minval; floats as
// offset / 10^scale + min (min: minval's bytes as a float), computed in the element's own
// precision as libhdf5 does. When a fill value is defined, the all-ones offset stands for it.
// With `minbits` equal to the element width the elements follow the header as they are, in
// the writer's byte order (little endian, as libhdf5 on every machine that writes such files).

#include <cmath>
#include <cstring>

#include "chute/codec/codec.h"
#include "chute/codec/hdf5_bits.h"
#include "chute/util/error.h"

namespace chute {
namespace {

constexpr size_t kScaleOffsetHeader = 21;

struct ScaleOffsetParams {
  bool is_float = false;
  bool big_endian = false;
  bool pass_through = false;  // an integer scale factor of the full width: stored as is
  unsigned size = 0;
  int decimal_scale = 0;
  float divisor_f = 1;  // 10^decimal_scale in the values' own precision (libhdf5's pow)
  double divisor_d = 1;
  uint64_t elements = 0;
  bool fill_defined = false;
  uint64_t fill_bits = 0;  // the fill value's bytes, little endian
};

uint64_t low_mask(unsigned bits) { return bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1; }

template <typename F, typename I>
uint64_t float_value(I offset, uint64_t minval, F divisor, bool is_fill, uint64_t fill_bits) {
  F result;
  if (is_fill) {
    std::memcpy(&result, &fill_bits, sizeof(F));
  } else {
    F min;
    std::memcpy(&min, &minval, sizeof(F));
    result = static_cast<F>(offset) / divisor + min;
  }
  uint64_t bits = 0;
  std::memcpy(&bits, &result, sizeof(F));
  return bits;
}

class ScaleOffsetCodec final : public BytesToBytesCodec {
 public:
  explicit ScaleOffsetCodec(ScaleOffsetParams p) : p_(p) {}

  void decode_exact(std::span<const std::byte> in, std::span<std::byte> out,
                    CodecScratch&) const override {
    if (p_.pass_through) {
      if (in.size() != out.size()) fail_size("scaleoffset", out.size(), in.size());
      std::memcpy(out.data(), in.data(), in.size());
      return;
    }
    const size_t size = p_.size;
    if (p_.elements * size != out.size()) {
      fail(ErrorCode::kCorruptData,
           "scaleoffset: the filter describes {} elements of {} bytes, not {} bytes", p_.elements,
           size, out.size());
    }
    if (in.size() < kScaleOffsetHeader) {
      fail(ErrorCode::kCorruptData, "scaleoffset: expected a header of {} bytes, got {}",
           kScaleOffsetHeader, in.size());
    }
    const uint64_t minbits = hdf5_load_value(in.data(), 4, false);
    const size_t minval_size = std::min<size_t>(8, static_cast<size_t>(in[4]));
    const uint64_t minval = hdf5_load_value(in.data() + 5, minval_size, false);
    if (minbits > size * 8) {
      fail(ErrorCode::kCorruptData, "scaleoffset: {} bits per value for {}-byte elements", minbits,
           size);
    }
    const std::span<const std::byte> packed = in.subspan(kScaleOffsetHeader);
    if (minbits == size * 8) {
      if (packed.size() < out.size()) {
        fail(ErrorCode::kCorruptData, "scaleoffset: expected {} bytes after the header, got {}",
             out.size(), packed.size());
      }
      for (size_t i = 0; i < p_.elements; ++i) {
        hdf5_store_value(out.data() + i * size,
                         hdf5_load_value(packed.data() + i * size, size, false), size,
                         p_.big_endian);
      }
      return;
    }
    const auto bits = static_cast<unsigned>(minbits);
    const uint64_t fill_code = low_mask(bits);
    const uint64_t mask = low_mask(size * 8);
    Hdf5BitReader reader(packed, "scaleoffset");
    for (size_t i = 0; i < p_.elements; ++i) {
      const uint64_t offset = bits == 0 ? 0 : reader.read(bits);
      const bool is_fill = p_.fill_defined && offset == fill_code;
      uint64_t value;
      if (p_.is_float) {
        value = size == 4 ? float_value<float>(static_cast<int32_t>(offset), minval, p_.divisor_f,
                                               is_fill, p_.fill_bits)
                          : float_value<double>(static_cast<int64_t>(offset), minval, p_.divisor_d,
                                                is_fill, p_.fill_bits);
      } else {
        value = is_fill ? p_.fill_bits : offset + minval;  // wraps in the element's width
      }
      hdf5_store_value(out.data() + i * size, value & mask, size, p_.big_endian);
    }
  }

  void decode_any(std::span<const std::byte> in, ByteBuffer& out, size_t limit,
                  CodecScratch& scratch) const override {
    const uint64_t total = p_.pass_through ? in.size() : p_.elements * p_.size;
    if (total > limit) {
      fail(ErrorCode::kCorruptData, "scaleoffset: {} decoded bytes, more than the {} allowed",
           total, limit);
    }
    out.resize_for_overwrite(static_cast<size_t>(total));
    decode_exact(in, out.span(), scratch);
  }

  void encode(std::span<const std::byte> in, ByteBuffer& out, CodecScratch&) const override {
    if (!p_.pass_through) {
      fail(ErrorCode::kUnsupported,
           "scaleoffset: chute decodes the scale-offset filter but does not encode it");
    }
    out.resize_for_overwrite(in.size());
    std::memcpy(out.data(), in.data(), in.size());
  }

  std::string describe() const override {
    if (p_.is_float) return fmt::format("scaleoffset(float, scale 10^{})", p_.decimal_scale);
    return "scaleoffset(integer)";
  }

 private:
  ScaleOffsetParams p_;
};

}  // namespace

std::unique_ptr<BytesToBytesCodec> make_scaleoffset_codec(const nlohmann::json& config) {
  const nlohmann::json* cd = config.contains("cd") ? &config["cd"] : nullptr;
  if (cd == nullptr || !cd->is_array() || cd->size() < 8 || cd->size() > 20) {
    fail(ErrorCode::kInvalidMetadata,
         "scaleoffset: expected the filter's client data (8 to 20 values)");
  }
  std::vector<uint32_t> v;
  for (const auto& x : *cd) {
    if (!x.is_number_unsigned() || x.get<uint64_t>() > UINT32_MAX) {
      fail(ErrorCode::kInvalidMetadata,
           "scaleoffset: client data must be 32-bit unsigned integers");
    }
    v.push_back(x.get<uint32_t>());
  }
  v.resize(20, 0);
  ScaleOffsetParams p;
  p.is_float = v[3] == 1;
  p.size = v[4];
  p.big_endian = v[6] == 1;
  p.elements = v[2];
  p.fill_defined = v[7] == 1;
  p.fill_bits = static_cast<uint64_t>(v[8]) | (static_cast<uint64_t>(v[9]) << 32);
  if (v[3] > 1 || v[6] > 1 ||
      (p.is_float ? p.size != 4 && p.size != 8
                  : p.size != 1 && p.size != 2 && p.size != 4 && p.size != 8)) {
    fail(ErrorCode::kInvalidMetadata, "scaleoffset: bad type (class {}, size {}, order {})", v[3],
         p.size, v[6]);
  }
  if (p.size < 8) p.fill_bits &= low_mask(p.size * 8);
  const auto factor = static_cast<int32_t>(v[1]);
  if (p.is_float) {
    if (v[0] == 1) {
      fail(ErrorCode::kUnsupported,
           "scaleoffset: the E-scaling method is not supported (libhdf5 does not implement it)");
    }
    if (v[0] != 0) {
      fail(ErrorCode::kInvalidMetadata, "scaleoffset: scale type {} for floats", v[0]);
    }
    p.decimal_scale = factor;
    p.divisor_f = std::pow(10.0f, static_cast<float>(factor));
    p.divisor_d = std::pow(10.0, static_cast<double>(factor));
  } else {
    if (v[0] != 2)
      fail(ErrorCode::kInvalidMetadata, "scaleoffset: scale type {} for integers", v[0]);
    if (factor > static_cast<int32_t>(p.size * 8)) {
      fail(ErrorCode::kInvalidMetadata, "scaleoffset: {} bits for {}-byte integers", factor,
           p.size);
    }
    p.pass_through = factor == static_cast<int32_t>(p.size * 8);
  }
  if (!p.pass_through && (p.elements == 0 || p.elements > (uint64_t{1} << 40))) {
    fail(ErrorCode::kInvalidMetadata, "scaleoffset: {} elements per chunk", p.elements);
  }
  return std::make_unique<ScaleOffsetCodec>(p);
}

}  // namespace chute
