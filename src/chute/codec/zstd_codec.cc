// zstd as a bytes->bytes codec (v3 `zstd`, numcodecs `zstd`), one reused context per worker.

#include <zstd_errors.h>

#include "chute/codec/codec.h"
#include "chute/util/error.h"

namespace chute {
namespace {

class ZstdCodec final : public BytesToBytesCodec {
 public:
  ZstdCodec(int level, bool checksum) : level_(level), checksum_(checksum) {}

  void decode_exact(std::span<const std::byte> in, std::span<std::byte> out,
                    CodecScratch& scratch) const override {
    const unsigned long long claimed = claimed_size(in);
    if (claimed != ZSTD_CONTENTSIZE_UNKNOWN && claimed != out.size()) {
      fail_size("zstd", out.size(), claimed);
    }
    ZSTD_DCtx* dctx = scratch.contexts().zstd_dctx();
    const size_t n = ZSTD_decompressDCtx(dctx, out.data(), out.size(), in.data(), in.size());
    if (ZSTD_isError(n)) {
      if (ZSTD_getErrorCode(n) == ZSTD_error_dstSize_tooSmall) {
        fail(ErrorCode::kCorruptData, "zstd: expected {} decoded bytes, got more", out.size());
      }
      fail(ErrorCode::kCorruptData, "zstd: corrupt data ({})", ZSTD_getErrorName(n));
    }
    if (n != out.size()) fail_size("zstd", out.size(), n);
  }

  void decode_any(std::span<const std::byte> in, ByteBuffer& out, size_t limit,
                  CodecScratch& scratch) const override {
    const unsigned long long claimed = claimed_size(in);
    if (claimed != ZSTD_CONTENTSIZE_UNKNOWN) {
      if (claimed > limit) {
        fail(ErrorCode::kCorruptData,
             "zstd: frame claims {} decoded bytes, more than the {} allowed", claimed, limit);
      }
      out.resize_for_overwrite(static_cast<size_t>(claimed));
      decode_exact(in, out.span(), scratch);
      return;
    }
    // No content size in the frame: stream into a growing buffer.
    ZSTD_DCtx* dctx = scratch.contexts().zstd_dctx();
    ZSTD_DCtx_reset(dctx, ZSTD_reset_session_only);
    ZSTD_inBuffer input{in.data(), in.size(), 0};
    size_t produced = 0;
    out.resize(std::min(limit, std::max<size_t>(in.size() * 4, 4096)));
    while (true) {
      ZSTD_outBuffer output{out.data(), out.size(), produced};
      const size_t r = ZSTD_decompressStream(dctx, &output, &input);
      if (ZSTD_isError(r)) {
        fail(ErrorCode::kCorruptData, "zstd: corrupt data ({})", ZSTD_getErrorName(r));
      }
      produced = output.pos;
      if (r == 0 && input.pos == input.size) break;
      if (produced == out.size()) {
        if (out.size() >= limit) {
          fail(ErrorCode::kCorruptData, "zstd: decodes to more than the {} bytes allowed", limit);
        }
        out.resize(std::min(limit, out.size() * 2));
      } else if (input.pos == input.size) {
        fail(ErrorCode::kCorruptData, "zstd: truncated frame after {} decoded bytes", produced);
      }
    }
    out.resize(produced);
  }

  void encode(std::span<const std::byte> in, ByteBuffer& out,
              CodecScratch& scratch) const override {
    ZSTD_CCtx* cctx = scratch.contexts().zstd_cctx();
    ZSTD_CCtx_reset(cctx, ZSTD_reset_session_and_parameters);
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, level_);
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, checksum_ ? 1 : 0);
    out.resize(ZSTD_compressBound(in.size()));
    const size_t n = ZSTD_compress2(cctx, out.data(), out.size(), in.data(), in.size());
    if (ZSTD_isError(n)) {
      fail(ErrorCode::kInternal, "zstd: compression failed ({})", ZSTD_getErrorName(n));
    }
    out.resize(n);
  }

  std::string describe() const override {
    return checksum_ ? fmt::format("zstd(level {}, checksum)", level_)
                     : fmt::format("zstd(level {})", level_);
  }

 private:
  /// The decoded size the frame header claims, or ZSTD_CONTENTSIZE_UNKNOWN when it has none or
  /// the input holds several frames.
  static unsigned long long claimed_size(std::span<const std::byte> in) {
    const unsigned long long claimed = ZSTD_getFrameContentSize(in.data(), in.size());
    if (claimed == ZSTD_CONTENTSIZE_ERROR) {
      fail(ErrorCode::kCorruptData, "zstd: invalid or truncated frame header ({} bytes)",
           in.size());
    }
    if (claimed == ZSTD_CONTENTSIZE_UNKNOWN) return claimed;
    const size_t frame = ZSTD_findFrameCompressedSize(in.data(), in.size());
    if (ZSTD_isError(frame)) {
      fail(ErrorCode::kCorruptData, "zstd: truncated frame ({} bytes, {})", in.size(),
           ZSTD_getErrorName(frame));
    }
    return frame == in.size() ? claimed : ZSTD_CONTENTSIZE_UNKNOWN;
  }

  int level_;
  bool checksum_;
};

}  // namespace

std::unique_ptr<BytesToBytesCodec> make_zstd_codec(const nlohmann::json& config) {
  const int64_t level = config_int(config, "level", 1, "zstd");
  if (level < ZSTD_minCLevel() || level > ZSTD_maxCLevel()) {
    fail(ErrorCode::kInvalidMetadata, "zstd: level must be in [{}, {}], got {}", ZSTD_minCLevel(),
         ZSTD_maxCLevel(), level);
  }
  bool checksum = false;
  if (auto it = config.find("checksum"); it != config.end() && !it->is_null()) {
    if (!it->is_boolean()) {
      fail(ErrorCode::kInvalidMetadata, "zstd: checksum must be true or false, got {}", it->dump());
    }
    checksum = it->get<bool>();
  }
  return std::make_unique<ZstdCodec>(static_cast<int>(level), checksum);
}

}  // namespace chute
