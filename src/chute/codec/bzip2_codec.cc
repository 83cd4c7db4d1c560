// The bzip2 HDF5 filter (registered id 307, PyTables' and hdf5plugin's): the chunk is one bzip2
// stream, no header. Decoded with libbz2.

#include <bzlib.h>

#include <climits>

#include "chute/codec/codec.h"
#include "chute/util/error.h"

namespace chute {
namespace {

const char* bzip2_error_name(int rc) {
  switch (rc) {
    case BZ_DATA_ERROR:
      return "corrupt data";
    case BZ_DATA_ERROR_MAGIC:
      return "not a bzip2 stream";
    case BZ_UNEXPECTED_EOF:
      return "truncated stream";
    case BZ_OUTBUFF_FULL:
      return "more decoded bytes than expected";
    case BZ_MEM_ERROR:
      return "out of memory";
    default:
      return "error";
  }
}

/// Decompresses `in` into `out` (at most `limit` bytes); returns the decoded size.
size_t bzip2_decompress(std::span<const std::byte> in, ByteBuffer& out, size_t limit, bool exact) {
  bz_stream stream{};
  if (BZ2_bzDecompressInit(&stream, 0, 0) != BZ_OK) {
    fail(ErrorCode::kInternal, "bzip2: cannot initialise a decompressor");
  }
  struct Ender {
    bz_stream* s;
    ~Ender() { BZ2_bzDecompressEnd(s); }
  } ender{&stream};
  size_t in_pos = 0, out_pos = 0;
  for (;;) {
    if (out_pos == out.size()) {
      if (exact || out.size() >= limit) {
        fail(ErrorCode::kCorruptData, "bzip2: the stream decodes to more than {} bytes",
             out.size());
      }
      out.resize(std::min(limit, std::max<size_t>(out.size() * 2, 1 << 16)));
    }
    const size_t in_step = std::min<size_t>(in.size() - in_pos, UINT_MAX);
    const size_t out_step = std::min<size_t>(out.size() - out_pos, UINT_MAX);
    stream.next_in = const_cast<char*>(reinterpret_cast<const char*>(in.data() + in_pos));
    stream.avail_in = static_cast<unsigned>(in_step);
    stream.next_out = reinterpret_cast<char*>(out.data() + out_pos);
    stream.avail_out = static_cast<unsigned>(out_step);
    const int rc = BZ2_bzDecompress(&stream);
    in_pos += in_step - stream.avail_in;
    out_pos += out_step - stream.avail_out;
    if (rc == BZ_STREAM_END) return out_pos;
    if (rc != BZ_OK) {
      fail(ErrorCode::kCorruptData, "bzip2: {} (code {}) after {} of {} bytes",
           bzip2_error_name(rc), rc, in_pos, in.size());
    }
    if (in_pos == in.size() && stream.avail_out != 0) {
      fail(ErrorCode::kCorruptData, "bzip2: truncated stream ({} bytes, {} decoded)", in.size(),
           out_pos);
    }
  }
}

class Bzip2Codec final : public BytesToBytesCodec {
 public:
  explicit Bzip2Codec(int level) : level_(level) {}

  void decode_exact(std::span<const std::byte> in, std::span<std::byte> out,
                    CodecScratch& scratch) const override {
    ByteBuffer& tmp = scratch.buffer(kCodecTemp);
    tmp.resize_for_overwrite(out.size() + 1);  // one spare byte to see a longer stream
    const size_t n = bzip2_decompress(in, tmp, out.size() + 1, /*exact=*/true);
    if (n != out.size()) fail_size("bzip2", out.size(), n);
    std::copy_n(tmp.data(), n, out.data());
  }

  void decode_any(std::span<const std::byte> in, ByteBuffer& out, size_t limit,
                  CodecScratch&) const override {
    out.resize_for_overwrite(std::min(limit, std::max<size_t>(in.size() * 4, 1 << 16)));
    out.resize(bzip2_decompress(in, out, limit, /*exact=*/false));
  }

  void encode(std::span<const std::byte> in, ByteBuffer& out, CodecScratch&) const override {
    if (in.size() > UINT_MAX / 2) {
      fail(ErrorCode::kInvalidArgument, "bzip2: a chunk of {} bytes is too large", in.size());
    }
    unsigned n = static_cast<unsigned>(in.size() + in.size() / 100 + 600);
    out.resize_for_overwrite(n);
    const int rc =
        BZ2_bzBuffToBuffCompress(reinterpret_cast<char*>(out.data()), &n,
                                 const_cast<char*>(reinterpret_cast<const char*>(in.data())),
                                 static_cast<unsigned>(in.size()), level_, 0, 0);
    if (rc != BZ_OK) fail(ErrorCode::kInternal, "bzip2: compression failed (code {})", rc);
    out.resize(n);
  }

  std::string describe() const override { return fmt::format("bzip2(level {})", level_); }

 private:
  int level_;
};

}  // namespace

std::unique_ptr<BytesToBytesCodec> make_bzip2_codec(const nlohmann::json& config) {
  const int64_t level = config_int(config, "level", 9, "bzip2");
  if (level < 1 || level > 9) {
    fail(ErrorCode::kInvalidMetadata, "bzip2: level must be in [1, 9], got {}", level);
  }
  return std::make_unique<Bzip2Codec>(static_cast<int>(level));
}

}  // namespace chute
