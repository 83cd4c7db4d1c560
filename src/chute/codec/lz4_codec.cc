// numcodecs `lz4`: a 4-byte little-endian decoded size followed by one LZ4 block.

#include <lz4.h>

#include <cstring>

#include "chute/codec/codec.h"
#include "chute/util/error.h"

namespace chute {
namespace {

class Lz4Codec final : public BytesToBytesCodec {
 public:
  explicit Lz4Codec(int acceleration) : acceleration_(acceleration) {}

  void decode_exact(std::span<const std::byte> in, std::span<std::byte> out,
                    CodecScratch&) const override {
    const uint32_t claimed = claimed_size(in);
    if (claimed != out.size()) fail_size("lz4", out.size(), claimed);
    const int n = LZ4_decompress_safe(reinterpret_cast<const char*>(in.data() + 4),
                                      reinterpret_cast<char*>(out.data()),
                                      static_cast<int>(in.size() - 4), static_cast<int>(claimed));
    if (n < 0) {
      fail(ErrorCode::kCorruptData, "lz4: corrupt or truncated block ({} bytes)", in.size() - 4);
    }
    if (static_cast<size_t>(n) != out.size()) fail_size("lz4", out.size(), n);
  }

  void decode_any(std::span<const std::byte> in, ByteBuffer& out, size_t limit,
                  CodecScratch& scratch) const override {
    const uint32_t claimed = claimed_size(in);
    if (claimed > limit) {
      fail(ErrorCode::kCorruptData, "lz4: header claims {} decoded bytes, more than the {} allowed",
           claimed, limit);
    }
    out.resize_for_overwrite(claimed);
    decode_exact(in, out.span(), scratch);
  }

  void encode(std::span<const std::byte> in, ByteBuffer& out, CodecScratch&) const override {
    if (in.size() > static_cast<size_t>(LZ4_MAX_INPUT_SIZE)) {
      fail(ErrorCode::kInvalidArgument, "lz4: cannot compress {} bytes (at most {})", in.size(),
           LZ4_MAX_INPUT_SIZE);
    }
    const int bound = LZ4_compressBound(static_cast<int>(in.size()));
    out.resize(4 + static_cast<size_t>(bound));
    const uint32_t size = static_cast<uint32_t>(in.size());
    std::memcpy(out.data(), &size, 4);  // little-endian host
    const int n = LZ4_compress_fast(reinterpret_cast<const char*>(in.data()),
                                    reinterpret_cast<char*>(out.data() + 4),
                                    static_cast<int>(in.size()), bound, acceleration_);
    if (n <= 0) fail(ErrorCode::kInternal, "lz4: compression failed");
    out.resize(4 + static_cast<size_t>(n));
  }

  std::string describe() const override {
    return fmt::format("lz4(acceleration {})", acceleration_);
  }

 private:
  static uint32_t claimed_size(std::span<const std::byte> in) {
    if (in.size() < 4) {
      fail(ErrorCode::kCorruptData, "lz4: truncated header: expected at least 4 bytes, got {}",
           in.size());
    }
    uint32_t claimed;
    std::memcpy(&claimed, in.data(), 4);
    if (claimed > static_cast<uint32_t>(LZ4_MAX_INPUT_SIZE)) {
      fail(ErrorCode::kCorruptData, "lz4: header claims {} decoded bytes (at most {})", claimed,
           LZ4_MAX_INPUT_SIZE);
    }
    return claimed;
  }

  int acceleration_;
};

}  // namespace

std::unique_ptr<BytesToBytesCodec> make_lz4_codec(const nlohmann::json& config) {
  const int64_t acceleration = config_int(config, "acceleration", 1, "lz4");
  if (acceleration < 1 || acceleration > 65537) {
    fail(ErrorCode::kInvalidMetadata, "lz4: acceleration must be in [1, 65537], got {}",
         acceleration);
  }
  return std::make_unique<Lz4Codec>(static_cast<int>(acceleration));
}

}  // namespace chute
