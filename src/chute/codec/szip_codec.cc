// HDF5's szip filter (4): the decoded size as a little-endian uint32, then the szip stream,
// decoded with libaec through its szlib-compatible API. The parameters come from the filter's
// client data (options mask, pixels per block, bits per pixel, pixels per scanline).

// szlib.h declares its functions without extern "C".
extern "C" {
#include <szlib.h>
}

#include <cstring>

#include "chute/codec/codec.h"
#include "chute/codec/hdf5_bits.h"
#include "chute/util/error.h"

namespace chute {
namespace {

constexpr size_t kSzipHeader = 4;

uint32_t szip_read_le32(const std::byte* p) {
  return static_cast<uint32_t>(hdf5_load_value(p, 4, /*big_endian=*/false));
}

class SzipCodec final : public BytesToBytesCodec {
 public:
  explicit SzipCodec(SZ_com_t params) : params_(params) {}

  void decode_exact(std::span<const std::byte> in, std::span<std::byte> out,
                    CodecScratch&) const override {
    if (in.size() < kSzipHeader) {
      fail(ErrorCode::kCorruptData, "szip: expected a header of 4 bytes, got {}", in.size());
    }
    const uint32_t total = szip_read_le32(in.data());
    if (total != out.size()) fail_size("szip", out.size(), total);
    decompress(in.subspan(kSzipHeader), out);
  }

  void decode_any(std::span<const std::byte> in, ByteBuffer& out, size_t limit,
                  CodecScratch&) const override {
    const uint32_t total = in.size() >= kSzipHeader ? szip_read_le32(in.data()) : 0;
    if (in.size() < kSzipHeader || total > limit) {
      fail(ErrorCode::kCorruptData,
           "szip: header claims {} decoded bytes, more than the {} allowed", total, limit);
    }
    out.resize_for_overwrite(total);
    decompress(in.subspan(kSzipHeader), out.span());
  }

  void encode(std::span<const std::byte> in, ByteBuffer& out, CodecScratch&) const override {
    if (in.size() > UINT32_MAX) {
      fail(ErrorCode::kInvalidArgument, "szip: a chunk of {} bytes is too large", in.size());
    }
    // libaec may need a little more than the input when the data does not compress.
    size_t n = in.size() + in.size() / 8 + 256;
    out.resize_for_overwrite(kSzipHeader + n);
    for (size_t i = 0; i < 4; ++i) out.data()[i] = std::byte((in.size() >> (8 * i)) & 0xff);
    SZ_com_t params = params_;
    const int rc =
        SZ_BufftoBuffCompress(out.data() + kSzipHeader, &n, in.data(), in.size(), &params);
    if (rc != SZ_OK) fail(ErrorCode::kInternal, "szip: compression failed (code {})", rc);
    out.resize(kSzipHeader + n);
  }

  std::string describe() const override {
    return fmt::format("szip({} bits, {} pixels per block)", params_.bits_per_pixel,
                       params_.pixels_per_block);
  }

 private:
  void decompress(std::span<const std::byte> in, std::span<std::byte> out) const {
    size_t n = out.size();
    SZ_com_t params = params_;
    const int rc = SZ_BufftoBuffDecompress(out.data(), &n, in.data(), in.size(), &params);
    if (rc != SZ_OK) {
      fail(ErrorCode::kCorruptData, "szip: {} (code {}) in a stream of {} bytes",
           rc == SZ_OUTBUFF_FULL ? "the stream decodes to more bytes than expected"
                                 : "corrupt stream",
           rc, in.size());
    }
    if (n != out.size()) fail_size("szip", out.size(), n);
  }

  SZ_com_t params_;
};

}  // namespace

std::unique_ptr<BytesToBytesCodec> make_szip_codec(const nlohmann::json& config) {
  const auto param = [&](const char* key, int64_t low, int64_t high) {
    const int64_t v = config_int(config, key, -1, "szip");
    if (v < low || v > high) {
      fail(ErrorCode::kInvalidMetadata, "szip: {} must be in [{}, {}], got {}", key, low, high, v);
    }
    return static_cast<int>(v);
  };
  SZ_com_t params{};
  params.options_mask = param("options_mask", 0, 0xffff);
  params.bits_per_pixel = param("bits_per_pixel", 1, 64);
  if (params.bits_per_pixel > 32 && params.bits_per_pixel != 64) {  // what libaec decodes
    fail(ErrorCode::kInvalidMetadata, "szip: bits_per_pixel must be 1 to 32 or 64, got {}",
         params.bits_per_pixel);
  }
  params.pixels_per_block = param("pixels_per_block", 2, SZ_MAX_PIXELS_PER_BLOCK);
  // libhdf5's limit too; a larger value would have libaec allocate its size per chunk.
  params.pixels_per_scanline = param("pixels_per_scanline", 1, SZ_MAX_PIXELS_PER_SCANLINE);
  return std::make_unique<SzipCodec>(params);
}

}  // namespace chute
