// gzip (v3 `gzip`, numcodecs `gzip`: a gzip stream) and zlib (numcodecs `zlib`, HDF5's deflate
// filter: a zlib stream). A chunk of known decoded size is inflated in one call by libdeflate
// (whole-buffer, 2-3x zlib's speed); zlib's streaming inflate decodes chunks of unknown size and
// re-decodes any chunk libdeflate rejects, so the error names what is wrong (truncated, too
// long, corrupt) as zlib tells it.

#include <libdeflate.h>

#include <climits>

#include "chute/codec/codec.h"
#include "chute/util/error.h"

namespace chute {
namespace {

class GzipCodec final : public BytesToBytesCodec {
 public:
  GzipCodec(int level, bool gzip) : level_(level), gzip_(gzip) {}

  void decode_exact(std::span<const std::byte> in, std::span<std::byte> out,
                    CodecScratch& scratch) const override {
    libdeflate_decompressor* d = scratch.contexts().deflate_decompressor();
    std::byte dummy{};
    std::byte* const out_data = out.empty() ? &dummy : out.data();
    size_t produced = 0;
    size_t consumed = 0;
    // A gzip chunk may hold several members (numcodecs and zarr-python read them all, in order).
    while (true) {
      size_t in_used = 0;
      size_t got = 0;
      const libdeflate_result rc =
          gzip_ ? libdeflate_gzip_decompress_ex(d, in.data() + consumed, in.size() - consumed,
                                                out_data + produced, out.size() - produced,
                                                &in_used, &got)
                : libdeflate_zlib_decompress(d, in.data(), in.size(), out_data, out.size(), &got);
      if (rc != LIBDEFLATE_SUCCESS) break;
      produced += got;
      consumed += in_used;
      if (!gzip_ || produced == out.size() || consumed >= in.size()) {
        if (produced != out.size()) fail_size(name(), out.size(), produced);
        if (gzip_ && another_gzip_member(in.subspan(consumed))) break;  // zlib says "got more"
        return;
      }
    }
    decode_streaming(in, out, scratch);
  }

  void decode_any(std::span<const std::byte> in, ByteBuffer& out, size_t limit,
                  CodecScratch& scratch) const override {
    check_input_size(in);
    z_stream* z = scratch.contexts().inflater(window_bits());
    z->next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(in.data()));
    z->avail_in = static_cast<uInt>(in.size());
    out.resize(std::min(limit, std::max<size_t>(in.size() * 4, 4096)));
    size_t produced = 0;
    while (true) {
      z->next_out = reinterpret_cast<Bytef*>(out.data() + produced);
      z->avail_out = static_cast<uInt>(std::min<size_t>(out.size() - produced, UINT_MAX));
      const int rc = inflate(z, Z_NO_FLUSH);
      produced = static_cast<size_t>(reinterpret_cast<std::byte*>(z->next_out) - out.data());
      if (rc == Z_STREAM_END) {
        if (!gzip_ || !another_gzip_member(remaining(*z))) break;
        if (inflateReset(z) != Z_OK) fail(ErrorCode::kInternal, "inflateReset failed");
        continue;
      }
      if (rc != Z_OK && rc != Z_BUF_ERROR) {
        fail(ErrorCode::kCorruptData, "{}: corrupt stream ({})", name(),
             z->msg ? z->msg : zError(rc));
      }
      if (produced == out.size()) {
        if (out.size() >= limit) {
          fail(ErrorCode::kCorruptData, "{}: decodes to more than the {} bytes allowed", name(),
               limit);
        }
        out.resize(std::min(limit, out.size() * 2));
      } else if (z->avail_in == 0) {
        fail(ErrorCode::kCorruptData, "{}: truncated stream after {} decoded bytes", name(),
             produced);
      }
    }
    out.resize(produced);
  }

  void encode(std::span<const std::byte> in, ByteBuffer& out, CodecScratch&) const override {
    check_input_size(in);
    z_stream z{};
    if (deflateInit2(&z, level_, Z_DEFLATED, window_bits(), 8, Z_DEFAULT_STRATEGY) != Z_OK) {
      fail(ErrorCode::kInternal, "{}: deflateInit2 failed", name());
    }
    out.resize(deflateBound(&z, static_cast<uLong>(in.size())) + 32);
    z.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(in.data()));
    z.avail_in = static_cast<uInt>(in.size());
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = static_cast<uInt>(out.size());
    const int rc = deflate(&z, Z_FINISH);
    const size_t n = z.total_out;
    deflateEnd(&z);
    if (rc != Z_STREAM_END) fail(ErrorCode::kInternal, "{}: deflate failed ({})", name(), rc);
    out.resize(n);
  }

  std::string describe() const override { return fmt::format("{}(level {})", name(), level_); }

 private:
  const char* name() const { return gzip_ ? "gzip" : "zlib"; }
  int window_bits() const { return gzip_ ? 15 + 16 : 15; }
  void check_input_size(std::span<const std::byte> in) const {  // zlib counts in 32 bits
    if (in.size() > UINT_MAX) {
      fail(ErrorCode::kUnsupported, "{}: chunks of more than 4 GiB ({} bytes)", name(), in.size());
    }
  }
  static std::span<const std::byte> remaining(const z_stream& z) {
    return {reinterpret_cast<const std::byte*>(z.next_in), z.avail_in};
  }
  // Bytes after a gzip member are another member when they start with the gzip magic; anything
  // else after the stream is ignored, as zlib and Python's gzip module do with zero padding.
  static bool another_gzip_member(std::span<const std::byte> rest) {
    return rest.size() >= 2 && rest[0] == std::byte{0x1f} && rest[1] == std::byte{0x8b};
  }

  /// zlib's inflate into exactly `out`: the path for chunks libdeflate rejects, which names the
  /// fault (or decodes the rare stream libdeflate refuses and zlib accepts).
  void decode_streaming(std::span<const std::byte> in, std::span<std::byte> out,
                        CodecScratch& scratch) const {
    check_input_size(in);
    check_input_size(out);
    z_stream* z = scratch.contexts().inflater(window_bits());
    std::byte dummy{};
    z->next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(in.data()));
    z->avail_in = static_cast<uInt>(in.size());
    z->next_out = reinterpret_cast<Bytef*>(out.empty() ? &dummy : out.data());
    z->avail_out = static_cast<uInt>(out.size());
    size_t produced = 0;
    while (true) {
      const uLong before = z->total_out;
      const int rc = inflate(z, Z_FINISH);
      produced += z->total_out - before;
      if (rc == Z_STREAM_END) {
        if (gzip_ && another_gzip_member(remaining(*z))) {
          if (produced == out.size()) {
            fail(ErrorCode::kCorruptData, "{}: expected {} decoded bytes, got more", name(),
                 out.size());
          }
          if (inflateReset(z) != Z_OK) fail(ErrorCode::kInternal, "inflateReset failed");
          continue;
        }
        if (produced != out.size()) fail_size(name(), out.size(), produced);
        return;
      }
      if (rc == Z_BUF_ERROR || rc == Z_OK) {
        if (z->avail_out == 0 && z->avail_in > 0) {
          fail(ErrorCode::kCorruptData, "{}: expected {} decoded bytes, got more", name(),
               out.size());
        }
        fail(ErrorCode::kCorruptData, "{}: truncated stream: expected {} decoded bytes, got {}",
             name(), out.size(), produced);
      }
      fail(ErrorCode::kCorruptData, "{}: corrupt stream ({})", name(),
           z->msg ? z->msg : zError(rc));
    }
  }

  int level_;
  bool gzip_;
};

}  // namespace

std::unique_ptr<BytesToBytesCodec> make_gzip_codec(const nlohmann::json& config, bool gzip) {
  const char* name = gzip ? "gzip" : "zlib";
  const int64_t level = config_int(config, "level", 1, name);
  if (level < 0 || level > 9) {
    fail(ErrorCode::kInvalidMetadata, "{}: level must be in [0, 9], got {}", name, level);
  }
  return std::make_unique<GzipCodec>(static_cast<int>(level), gzip);
}

}  // namespace chute
