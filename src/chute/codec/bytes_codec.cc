// The v3 `bytes` codec: the chunk's elements in C order, little or big endian.

#include <cstring>

#include "chute/codec/codec.h"
#include "chute/util/error.h"

namespace chute {
namespace {

template <size_t N>
void swap_units(const std::byte* in, std::byte* out, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    std::byte unit[N];
    std::memcpy(unit, in + i * N, N);
    for (size_t k = 0; k < N; ++k) out[i * N + k] = unit[N - 1 - k];
  }
}

/// Reverses every `unit`-byte group of `in` into `out` (which may equal `in`).
void byte_swap(std::span<const std::byte> in, std::span<std::byte> out, size_t unit) {
  const size_t count = in.size() / unit;
  switch (unit) {
    case 2:
      return swap_units<2>(in.data(), out.data(), count);
    case 4:
      return swap_units<4>(in.data(), out.data(), count);
    case 8:
      return swap_units<8>(in.data(), out.data(), count);
    default:
      fail(ErrorCode::kInternal, "byte swap of {}-byte units", unit);
  }
}

class BytesCodec final : public ArrayToBytesCodec {
 public:
  BytesCodec(const ChunkLayout& layout, bool big_endian)
      : nbytes_(layout.nbytes()),
        // Complex numbers swap each of their two parts.
        swap_unit_(layout.dtype.kind == DTypeKind::kComplex ? layout.dtype.size / 2
                                                            : layout.dtype.size),
        big_endian_(big_endian) {}

  void decode(std::span<const std::byte> encoded, std::span<std::byte> decoded,
              CodecScratch&) const override {
    if (encoded.size() != decoded.size()) {
      fail(ErrorCode::kCorruptData, "bytes: expected {} bytes, got {}", decoded.size(),
           encoded.size());
    }
    if (needs_swap()) {
      byte_swap(encoded, decoded, swap_unit_);
    } else if (!encoded.empty()) {
      std::memcpy(decoded.data(), encoded.data(), encoded.size());
    }
  }

  void encode(std::span<const std::byte> decoded, ByteBuffer& out, CodecScratch&) const override {
    out.resize(decoded.size());
    if (needs_swap()) {
      byte_swap(decoded, out.span(), swap_unit_);
    } else if (!decoded.empty()) {
      std::memcpy(out.data(), decoded.data(), decoded.size());
    }
  }

  std::optional<int64_t> fixed_encoded_nbytes() const override { return nbytes_; }
  bool is_identity() const override { return !needs_swap(); }
  std::string describe() const override {
    if (swap_unit_ == 1) return "bytes";
    return big_endian_ ? "bytes(big)" : "bytes(little)";
  }

 private:
  bool needs_swap() const { return big_endian_ && swap_unit_ > 1; }

  int64_t nbytes_;
  size_t swap_unit_;
  bool big_endian_;
};

}  // namespace

std::unique_ptr<ArrayToBytesCodec> make_bytes_codec(const nlohmann::json& config,
                                                    const ChunkLayout& decoded) {
  bool big = false;
  auto it = config.find("endian");
  if (it != config.end() && !it->is_null()) {
    if (*it == "big") {
      big = true;
    } else if (*it != "little") {
      fail(ErrorCode::kInvalidMetadata, "bytes: endian must be \"little\" or \"big\", got {}",
           it->dump());
    }
  }
  return std::make_unique<BytesCodec>(decoded, big);
}

}  // namespace chute
