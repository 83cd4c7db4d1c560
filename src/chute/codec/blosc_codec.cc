// blosc (c-blosc 1.x) as a bytes->bytes codec: v2 numcodecs configuration (shuffle 0/1/2/-1) and
// v3 (shuffle "noshuffle"/"shuffle"/"bitshuffle", typesize). Runs single-threaded through the
// context API: chute parallelises over chunks.

#include <blosc.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <utility>

#include "chute/codec/blosc_blocks.h"
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
                    CodecScratch& scratch) const override {
    const size_t claimed = validate(in);
    if (claimed != out.size()) fail_size("blosc", out.size(), claimed);
    if (out.empty()) return;
    if (decode_blosc_stream(in, out, scratch.buffer(kCodecTemp))) return;
    int n = blosc_decompress_ctx(in.data(), out.data(), out.size(), /*numinternalthreads=*/1);
    if (n < 0 || static_cast<size_t>(n) != out.size()) {
      fail(ErrorCode::kCorruptData, "blosc: corrupt data (decompression returned {}, expected {})",
           n, out.size());
    }
  }

  bool decodes_parts() const override { return true; }

  size_t part_alignment(std::span<const std::byte> in) const override {
    if (in.size() < BLOSC_MIN_HEADER_LENGTH) return 0;
    const Header h = header_of(in.data());
    // Whole items in every block and in the stream, so that no part ends mid-item.
    const bool whole_items =
        h.typesize > 0 && h.nbytes % h.typesize == 0 && h.blocksize % h.typesize == 0;
    return whole_items && h.blocksize > 0 && h.blocksize < h.nbytes ? h.blocksize : 0;
  }

  /// blosc compresses fixed-size blocks independently: blosc_getitem decodes only the blocks
  /// that hold the range (through its own block buffer, then a copy of the range).
  bool decode_part(std::span<const std::byte> in, size_t begin, size_t end,
                   std::span<std::byte> out, CodecScratch& scratch) const override {
    const size_t claimed = validate(in);
    if (claimed != out.size()) fail_size("blosc", out.size(), claimed);
    const std::optional<Part> part = part_of(header_of(in.data()), begin, end);
    if (!part || part->blocks_touched() >= part->blocks) return false;
    get_items(in, *part, out, scratch);
    return true;
  }

  bool read_part(const StreamReader& read, size_t stored_nbytes, size_t begin, size_t end,
                 ByteBuffer& stream, std::span<std::byte> out,
                 CodecScratch& scratch) const override {
    if (stored_nbytes < BLOSC_MIN_HEADER_LENGTH) return false;  // the whole read reports it
    // The header and, for up to 252 blocks, the whole block table in one read: each read may
    // cost an open() on a parallel file system.
    const size_t prefix = std::min(stored_nbytes, kPrefixBytes);
    stream.resize(prefix);
    read(0, stream.span());
    // Anything unexpected goes the whole-stream way, which reports it.
    size_t nbytes = 0;
    const Header h = header_of(stream.data());
    if (h.cbytes != stored_nbytes || h.nbytes != out.size() ||
        blosc_cbuffer_validate(stream.data(), stored_nbytes, &nbytes) < 0) {
      return false;
    }
    stream.resize(stored_nbytes);  // keeps the prefix; the rest is read where it is needed
    std::byte* s = stream.data();
    const std::optional<Part> part = part_of(h, begin, end);
    if (!part) return false;
    const size_t first_byte = part->first_item * part->typesize;
    const size_t part_bytes = (part->last_item - part->first_item) * part->typesize;
    if (part->memcpyed) {  // stored as is after the header
      if (BLOSC_MAX_OVERHEAD + first_byte + part_bytes > stored_nbytes) return false;
      read(BLOSC_MAX_OVERHEAD + first_byte, out.subspan(first_byte, part_bytes));
      return true;
    }
    if (part->blocks_touched() >= part->blocks) return false;
    const size_t table_end = BLOSC_MIN_HEADER_LENGTH + 4 * part->blocks;  // header + starts
    if (table_end > stored_nbytes) return false;
    if (table_end > prefix) read(prefix, {s + prefix, table_end - prefix});

    // Threaded compressors store blocks in the order they finish: a block's bytes end where
    // the next stored block (by offset) begins.
    ByteBuffer& sorted_buffer = scratch.buffer(kCodecTemp);
    sorted_buffer.resize(4 * part->blocks);
    auto* sorted = reinterpret_cast<uint32_t*>(sorted_buffer.data());
    for (size_t b = 0; b < part->blocks; ++b) sorted[b] = block_start(s, b);
    std::sort(sorted, sorted + part->blocks);
    // The blocks of the range usually lie side by side (in either order): one read from the
    // first to the end of the last. Scattered by a threaded compressor, one read per block
    // unless the span wastes no more than it needs.
    size_t lowest = stored_nbytes;
    size_t highest = 0;
    size_t needed = 0;
    for (size_t b = part->first_block; b <= part->last_block; ++b) {
      const auto [from, to] = block_bytes(s, b, sorted, *part, table_end, stored_nbytes);
      lowest = std::min(lowest, from);
      highest = std::max(highest, to);
      needed += to - from;
    }
    if (highest - lowest <= 2 * needed) {
      read(lowest, {s + lowest, highest - lowest});
    } else {
      for (size_t b = part->first_block; b <= part->last_block; ++b) {
        const auto [from, to] = block_bytes(s, b, sorted, *part, table_end, stored_nbytes);
        read(from, {s + from, to - from});
      }
    }
    get_items(stream.span(), *part, out, scratch);
    return true;
  }

  void decode_any(std::span<const std::byte> in, ByteBuffer& out, size_t limit,
                  CodecScratch& scratch) const override {
    const size_t claimed = validate(in);
    if (claimed > limit) {
      fail(ErrorCode::kCorruptData,
           "blosc: header claims {} decoded bytes, more than the {} allowed", claimed, limit);
    }
    out.resize_for_overwrite(claimed);
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

  static constexpr size_t kPrefixBytes = 1024;

  /// The items and blocks of a stream that hold decoded bytes [begin, end).
  struct Part {
    size_t typesize, blocksize, blocks;
    size_t first_item, last_item;    // [first, last)
    size_t first_block, last_block;  // [first, last]
    bool memcpyed;
    size_t blocks_touched() const { return last_block - first_block + 1; }
  };

  /// The fields of a stream's 16-byte header.
  struct Header {
    size_t nbytes = 0, cbytes = 0, blocksize = 0, typesize = 0;
    int flags = 0;
  };
  static Header header_of(const std::byte* stream) {
    Header h;
    blosc_cbuffer_sizes(stream, &h.nbytes, &h.cbytes, &h.blocksize);
    blosc_cbuffer_metainfo(stream, &h.typesize, &h.flags);
    return h;
  }

  /// nullopt when the header gives nothing to split or the range ends in a partial item.
  static std::optional<Part> part_of(const Header& h, size_t begin, size_t end) {
    if (begin >= end || end > h.nbytes || h.typesize == 0 || h.blocksize == 0) {
      return std::nullopt;
    }
    Part p{};
    p.typesize = h.typesize;
    p.blocksize = h.blocksize;
    p.first_item = begin / p.typesize;
    p.last_item = (end + p.typesize - 1) / p.typesize;
    if (p.last_item * p.typesize > h.nbytes) return std::nullopt;
    p.blocks = (h.nbytes + p.blocksize - 1) / p.blocksize;
    p.first_block = p.first_item * p.typesize / p.blocksize;
    p.last_block = (p.last_item * p.typesize - 1) / p.blocksize;
    p.memcpyed = (h.flags & BLOSC_MEMCPYED) != 0;
    return p;
  }

  /// The stored bytes [from, to) of `block`: from its start to the next stored block's start
  /// (`sorted`: every block's start, ascending) or the end of the stream.
  static std::pair<size_t, size_t> block_bytes(const std::byte* stream, size_t block,
                                               const uint32_t* sorted, const Part& part,
                                               size_t table_end, size_t stored_nbytes) {
    const size_t from = block_start(stream, block);
    if (from < table_end || from >= stored_nbytes) {
      fail(ErrorCode::kCorruptData, "blosc: block {} starts at byte {}, outside [{}, {})", block,
           from, table_end, stored_nbytes);
    }
    const uint32_t* next = std::upper_bound(sorted, sorted + part.blocks, from);
    return {from, next == sorted + part.blocks ? stored_nbytes : size_t{*next}};
  }

  static size_t block_start(const std::byte* stream, size_t block) {
    return blosc_le32(stream + BLOSC_MIN_HEADER_LENGTH + 4 * block);
  }

  /// Decodes the part's blocks into their place in `out` (whole blocks: bytes of them outside
  /// the part are written too, which decode_part's contract allows).
  static void get_items(std::span<const std::byte> stream, const Part& part,
                        std::span<std::byte> out, CodecScratch& scratch) {
    if (decode_blosc_blocks(stream, part.first_block, part.last_block, out,
                            scratch.buffer(kCodecTemp))) {
      return;
    }
    // Streams decode_blosc_blocks leaves to c-blosc: each block through its own buffer, then the
    // range copied out.
    const size_t count = part.last_item - part.first_item;
    const int n =
        blosc_getitem(stream.data(), static_cast<int>(part.first_item), static_cast<int>(count),
                      out.data() + part.first_item * part.typesize);
    if (n < 0 || static_cast<size_t>(n) != count * part.typesize) {
      fail(ErrorCode::kCorruptData,
           "blosc: corrupt data (decoding bytes [{}, {}) returned {}, expected {} bytes)",
           part.first_item * part.typesize, part.last_item * part.typesize, n,
           count * part.typesize);
    }
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
