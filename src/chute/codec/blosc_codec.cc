// blosc (c-blosc 1.x) as a bytes->bytes codec: v2 numcodecs configuration (shuffle 0/1/2/-1) and
// v3 (shuffle "noshuffle"/"shuffle"/"bitshuffle", typesize). Runs single-threaded through the
// context API: chute parallelises over chunks.

#include <blosc.h>

#include "chute/codec/codec.h"
#include "chute/util/error.h"

namespace chute {
namespace {

const char* shuffle_name(int shuffle) {
  switch (shuffle) {
    case BLOSC_NOSHUFFLE:
      return "noshuffle";
    case BLOSC_SHUFFLE:
      return "shuffle";
    default:
      return "bitshuffle";
  }
}

class BloscCodec final : public BytesToBytesCodec {
 public:
  BloscCodec(std::string cname, int clevel, int shuffle, int typesize, int blocksize)
      : cname_(std::move(cname)),
        clevel_(clevel),
        shuffle_(shuffle),
        typesize_(typesize),
        blocksize_(blocksize) {}

  void decode_exact(std::span<const std::byte> in, std::span<std::byte> out,
                    CodecScratch&) const override {
    const size_t claimed = validate(in);
    if (claimed != out.size()) fail_size("blosc", out.size(), claimed);
    if (out.empty()) return;
    int n = blosc_decompress_ctx(in.data(), out.data(), out.size(), /*numinternalthreads=*/1);
    if (n < 0 || static_cast<size_t>(n) != out.size()) {
      fail(ErrorCode::kCorruptData, "blosc: corrupt data (decompression returned {}, expected {})",
           n, out.size());
    }
  }

  /// blosc compresses fixed-size blocks independently: blosc_getitem decodes only the blocks
  /// that hold the range (through its own block buffer, then a copy of the range).
  bool decode_part(std::span<const std::byte> in, size_t begin, size_t end,
                   std::span<std::byte> out, CodecScratch&) const override {
    const size_t claimed = validate(in);
    if (claimed != out.size()) fail_size("blosc", out.size(), claimed);
    size_t nbytes = 0, cbytes = 0, blocksize = 0, typesize = 0;
    int flags = 0;
    blosc_cbuffer_sizes(in.data(), &nbytes, &cbytes, &blocksize);
    blosc_cbuffer_metainfo(in.data(), &typesize, &flags);
    if (begin >= end || typesize == 0 || blocksize == 0) return false;
    const size_t first = begin / typesize;                // items
    const size_t last = (end + typesize - 1) / typesize;  // exclusive
    if (last * typesize > nbytes) return false;           // a trailing partial item
    const size_t blocks = (nbytes + blocksize - 1) / blocksize;
    const size_t touched = (last * typesize - 1) / blocksize - first * typesize / blocksize + 1;
    if (touched >= blocks) return false;  // every block: decoding in place saves getitem's copy
    const int n = blosc_getitem(in.data(), static_cast<int>(first), static_cast<int>(last - first),
                                out.data() + first * typesize);
    if (n < 0 || static_cast<size_t>(n) != (last - first) * typesize) {
      fail(ErrorCode::kCorruptData,
           "blosc: corrupt data (decoding bytes [{}, {}) returned {}, expected {} bytes)",
           first * typesize, last * typesize, n, (last - first) * typesize);
    }
    return true;
  }

  void decode_any(std::span<const std::byte> in, ByteBuffer& out, size_t limit,
                  CodecScratch& scratch) const override {
    const size_t claimed = validate(in);
    if (claimed > limit) {
      fail(ErrorCode::kCorruptData,
           "blosc: header claims {} decoded bytes, more than the {} allowed", claimed, limit);
    }
    out.resize(claimed);
    decode_exact(in, out.span(), scratch);
  }

  void encode(std::span<const std::byte> in, ByteBuffer& out, CodecScratch&) const override {
    if (in.size() > static_cast<size_t>(BLOSC_MAX_BUFFERSIZE)) {
      fail(ErrorCode::kInvalidArgument, "blosc: cannot compress {} bytes (at most {})", in.size(),
           BLOSC_MAX_BUFFERSIZE);
    }
    int shuffle = shuffle_;
    if (shuffle < 0) shuffle = typesize_ == 1 ? BLOSC_BITSHUFFLE : BLOSC_SHUFFLE;
    out.resize(in.size() + BLOSC_MAX_OVERHEAD);
    int n = blosc_compress_ctx(clevel_, shuffle, static_cast<size_t>(typesize_), in.size(),
                               in.data(), out.data(), out.size(), cname_.c_str(),
                               static_cast<size_t>(blocksize_), /*numinternalthreads=*/1);
    if (n <= 0) fail(ErrorCode::kInternal, "blosc: compression failed ({})", n);
    out.resize(static_cast<size_t>(n));
  }

  std::string describe() const override {
    const char* shuffle = shuffle_ < 0 ? "autoshuffle" : shuffle_name(shuffle_);
    return fmt::format("blosc({}, {}, clevel {})", cname_, shuffle, clevel_);
  }

 private:
  /// Checks the header against the input size; returns the decoded size it claims.
  static size_t validate(std::span<const std::byte> in) {
    if (in.size() < BLOSC_MIN_HEADER_LENGTH) {
      fail(ErrorCode::kCorruptData, "blosc: truncated header: expected at least {} bytes, got {}",
           BLOSC_MIN_HEADER_LENGTH, in.size());
    }
    size_t nbytes = 0;
    size_t cbytes = 0;
    size_t blocksize = 0;
    blosc_cbuffer_sizes(in.data(), &nbytes, &cbytes, &blocksize);
    if (cbytes != in.size()) {
      fail(ErrorCode::kCorruptData, "blosc: header claims {} compressed bytes, got {}", cbytes,
           in.size());
    }
    if (blosc_cbuffer_validate(in.data(), in.size(), &nbytes) < 0) {
      fail(ErrorCode::kCorruptData, "blosc: invalid header (claims {} decoded bytes)", nbytes);
    }
    return nbytes;
  }

  std::string cname_;
  int clevel_;
  int shuffle_;  // BLOSC_NOSHUFFLE / SHUFFLE / BITSHUFFLE, or -1: bit for 1-byte types, else byte
  int typesize_;
  int blocksize_;
};

int parse_shuffle(const nlohmann::json& config) {
  auto it = config.find("shuffle");
  if (it == config.end() || it->is_null()) return BLOSC_SHUFFLE;
  if (it->is_string()) {
    if (*it == "noshuffle") return BLOSC_NOSHUFFLE;
    if (*it == "shuffle") return BLOSC_SHUFFLE;
    if (*it == "bitshuffle") return BLOSC_BITSHUFFLE;
  } else if (it->is_number_integer()) {
    int v = it->get<int>();
    if (v >= -1 && v <= 2) return v;
  }
  fail(ErrorCode::kInvalidMetadata,
       "blosc: shuffle must be 0, 1, 2, -1, \"noshuffle\", \"shuffle\" or \"bitshuffle\", got {}",
       it->dump());
}

}  // namespace

std::unique_ptr<BytesToBytesCodec> make_blosc_codec(const nlohmann::json& config,
                                                    int element_size) {
  std::string cname = "lz4";
  if (auto it = config.find("cname"); it != config.end() && !it->is_null()) {
    if (!it->is_string()) {
      fail(ErrorCode::kInvalidMetadata, "blosc: cname must be a string, got {}", it->dump());
    }
    cname = it->get<std::string>();
  }
  int code = blosc_compname_to_compcode(cname.c_str());
  if (code < 0) fail(ErrorCode::kUnsupported, "blosc: unsupported compressor '{}'", cname);
  const int64_t clevel = config_int(config, "clevel", 5, "blosc");
  if (clevel < 0 || clevel > 9) {
    fail(ErrorCode::kInvalidMetadata, "blosc: clevel must be in [0, 9], got {}", clevel);
  }
  int64_t typesize = config_int(config, "typesize", element_size, "blosc");
  if (typesize <= 0) typesize = element_size;
  if (typesize > 255) {
    fail(ErrorCode::kInvalidMetadata, "blosc: typesize must be in [1, 255], got {}", typesize);
  }
  const int64_t blocksize = config_int(config, "blocksize", 0, "blosc");
  if (blocksize < 0 || blocksize > (int64_t{1} << 31)) {
    fail(ErrorCode::kInvalidMetadata, "blosc: blocksize must be >= 0, got {}", blocksize);
  }
  return std::make_unique<BloscCodec>(cname, static_cast<int>(clevel), parse_shuffle(config),
                                      static_cast<int>(typesize), static_cast<int>(blocksize));
}

}  // namespace chute
