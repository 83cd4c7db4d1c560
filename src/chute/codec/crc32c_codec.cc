// The v3 `crc32c` codec (and numcodecs `crc32c`): the payload followed (or, for numcodecs with
// location "start", preceded) by its CRC-32C, 4 bytes little endian.

#include <cstring>

#include "chute/codec/codec.h"
#include "chute/util/crc32c.h"
#include "chute/util/error.h"

namespace chute {
namespace {

class Crc32cCodec final : public BytesToBytesCodec {
 public:
  explicit Crc32cCodec(bool at_start) : at_start_(at_start) {}

  void decode_exact(std::span<const std::byte> in, std::span<std::byte> out,
                    CodecScratch&) const override {
    if (in.size() < 4) {
      fail(ErrorCode::kCorruptData, "crc32c: expected at least 4 bytes, got {}", in.size());
    }
    if (in.size() - 4 != out.size()) fail_size("crc32c", out.size(), in.size() - 4);
    const std::span<const std::byte> payload = in.subspan(at_start_ ? 4 : 0, in.size() - 4);
    uint32_t stored;
    std::memcpy(&stored, in.data() + (at_start_ ? 0 : in.size() - 4), 4);
    const uint32_t computed = crc32c(payload);
    if (stored != computed) {
      fail(ErrorCode::kCorruptData, "crc32c mismatch: stored 0x{:08x}, computed 0x{:08x}", stored,
           computed);
    }
    if (!payload.empty()) std::memcpy(out.data(), payload.data(), payload.size());
  }

  void decode_any(std::span<const std::byte> in, ByteBuffer& out, size_t,
                  CodecScratch& scratch) const override {
    if (in.size() < 4) {
      fail(ErrorCode::kCorruptData, "crc32c: expected at least 4 bytes, got {}", in.size());
    }
    out.resize(in.size() - 4);
    decode_exact(in, out.span(), scratch);
  }

  void encode(std::span<const std::byte> in, ByteBuffer& out, CodecScratch&) const override {
    out.resize(in.size() + 4);
    const uint32_t crc = crc32c(in);
    std::byte* payload = out.data() + (at_start_ ? 4 : 0);
    if (!in.empty()) std::memcpy(payload, in.data(), in.size());
    std::memcpy(out.data() + (at_start_ ? 0 : in.size()), &crc, 4);
  }

  std::optional<int64_t> fixed_encoded_nbytes(int64_t decoded_nbytes) const override {
    return decoded_nbytes + 4;
  }

  std::string describe() const override { return at_start_ ? "crc32c(start)" : "crc32c"; }

 private:
  bool at_start_;
};

class ShuffleCodec final : public BytesToBytesCodec {
 public:
  explicit ShuffleCodec(size_t element_size) : element_size_(element_size) {}

  void decode_exact(std::span<const std::byte> in, std::span<std::byte> out,
                    CodecScratch&) const override {
    if (in.size() != out.size()) fail_size("shuffle", out.size(), in.size());
    byte_unshuffle(in, out, element_size_);
  }
  void decode_any(std::span<const std::byte> in, ByteBuffer& out, size_t,
                  CodecScratch& scratch) const override {
    out.resize(in.size());
    decode_exact(in, out.span(), scratch);
  }
  void encode(std::span<const std::byte> in, ByteBuffer& out, CodecScratch&) const override {
    out.resize(in.size());
    byte_shuffle(in, out.span(), element_size_);
  }
  std::optional<int64_t> fixed_encoded_nbytes(int64_t decoded_nbytes) const override {
    return decoded_nbytes;
  }
  std::string describe() const override { return fmt::format("shuffle({})", element_size_); }

 private:
  size_t element_size_;
};

}  // namespace

std::unique_ptr<BytesToBytesCodec> make_crc32c_codec(const nlohmann::json& config) {
  bool at_start = false;
  if (auto it = config.find("location"); it != config.end() && !it->is_null()) {
    if (*it == "start") {
      at_start = true;
    } else if (*it != "end") {
      fail(ErrorCode::kInvalidMetadata, "crc32c: location must be \"start\" or \"end\", got {}",
           it->dump());
    }
  }
  return std::make_unique<Crc32cCodec>(at_start);
}

std::unique_ptr<BytesToBytesCodec> make_shuffle_codec(const nlohmann::json& config,
                                                      int element_size) {
  const int64_t size = config_int(config, "elementsize", element_size, "shuffle");
  if (size < 1 || size > (1 << 16)) {
    fail(ErrorCode::kInvalidMetadata, "shuffle: elementsize must be in [1, 65536], got {}", size);
  }
  return std::make_unique<ShuffleCodec>(static_cast<size_t>(size));
}

}  // namespace chute
