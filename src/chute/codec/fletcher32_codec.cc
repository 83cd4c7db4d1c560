// HDF5's fletcher32 filter (H5Z_FILTER_FLETCHER32 = 3; numcodecs `fletcher32` writes the same):
// the data followed by the Fletcher-32 checksum of its bytes, 4 bytes little endian. Decoding
// verifies it; HDF5 also accepts the checksum with its two halves swapped (files written by
// HDF5 1.6.0-1.6.2), and so does chute.

#include <cstring>

#include "chute/codec/codec.h"
#include "chute/util/error.h"

namespace chute {

/// H5_checksum_fletcher32: 16-bit big-endian words, sums reduced every 360 words.
uint32_t fletcher32(std::span<const std::byte> data) {
  const auto* p = reinterpret_cast<const uint8_t*>(data.data());
  size_t len = data.size() / 2;
  uint32_t sum1 = 0, sum2 = 0;
  while (len) {
    size_t tlen = len > 360 ? 360 : len;
    len -= tlen;
    do {
      sum1 += static_cast<uint32_t>((static_cast<uint32_t>(p[0]) << 8) | p[1]);
      p += 2;
      sum2 += sum1;
    } while (--tlen);
    sum1 = (sum1 & 0xffff) + (sum1 >> 16);
    sum2 = (sum2 & 0xffff) + (sum2 >> 16);
  }
  if (data.size() % 2) {
    sum1 += static_cast<uint32_t>(*p) << 8;
    sum2 += sum1;
    sum1 = (sum1 & 0xffff) + (sum1 >> 16);
    sum2 = (sum2 & 0xffff) + (sum2 >> 16);
  }
  sum1 = (sum1 & 0xffff) + (sum1 >> 16);
  sum2 = (sum2 & 0xffff) + (sum2 >> 16);
  return (sum2 << 16) | sum1;
}

namespace {

class Fletcher32Codec final : public BytesToBytesCodec {
 public:
  void decode_exact(std::span<const std::byte> in, std::span<std::byte> out,
                    CodecScratch&) const override {
    if (in.size() < 4) {
      fail(ErrorCode::kCorruptData, "fletcher32: expected at least 4 bytes (the checksum), got {}",
           in.size());
    }
    if (in.size() - 4 != out.size()) fail_size("fletcher32", out.size(), in.size() - 4);
    const std::span<const std::byte> data = in.first(in.size() - 4);
    uint32_t stored = 0;
    for (size_t i = 0; i < 4; ++i) stored |= static_cast<uint32_t>(in[data.size() + i]) << (8 * i);
    const uint32_t computed = fletcher32(data);
    const uint32_t swapped = (computed << 16) | (computed >> 16);
    if (stored != computed && stored != swapped) {
      fail(ErrorCode::kCorruptData,
           "fletcher32: checksum mismatch (stored {:#010x}, computed "
           "{:#010x} over {} bytes)",
           stored, computed, data.size());
    }
    std::memcpy(out.data(), data.data(), data.size());
  }
  void decode_any(std::span<const std::byte> in, ByteBuffer& out, size_t limit,
                  CodecScratch& scratch) const override {
    if (in.size() < 4 || in.size() - 4 > limit) {
      fail(ErrorCode::kCorruptData, "fletcher32: a stream of {} bytes", in.size());
    }
    out.resize(in.size() - 4);
    decode_exact(in, out.span(), scratch);
  }
  void encode(std::span<const std::byte> in, ByteBuffer& out, CodecScratch&) const override {
    out.resize(in.size() + 4);
    std::memcpy(out.data(), in.data(), in.size());
    const uint32_t sum = fletcher32(in);
    for (size_t i = 0; i < 4; ++i) out.data()[in.size() + i] = std::byte(sum >> (8 * i));
  }
  std::optional<int64_t> fixed_encoded_nbytes(int64_t decoded_nbytes) const override {
    return decoded_nbytes + 4;
  }
  std::string describe() const override { return "fletcher32"; }
};

}  // namespace

std::unique_ptr<BytesToBytesCodec> make_fletcher32_codec(const nlohmann::json&) {
  return std::make_unique<Fletcher32Codec>();
}

}  // namespace chute
