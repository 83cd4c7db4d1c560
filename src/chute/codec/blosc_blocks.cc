// decode_blosc_blocks: the block layout of c-blosc 1.x (blosc.c's blosc_d). A stream is a
// 16-byte header (version, compressor version, flags, typesize, decoded size, block size,
// stored size), a table of each block's start, and the blocks. A block is one or `typesize`
// splits (one per byte of the element), each a 32-bit stored size then that many bytes: LZ4
// data, or the split as is when the size equals the split's.

#include "chute/codec/blosc_blocks.h"

#include <blosc.h>
#include <lz4.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "chute/codec/codec.h"
#include "chute/util/error.h"

namespace chute {
namespace {

[[noreturn]] void fail_block(size_t block) {
  fail(ErrorCode::kCorruptData, "blosc: corrupt data (block {} does not decode to its size)",
       block);
}

constexpr uint8_t kDontSplit = 0x10;    // c-blosc's flag: blocks are not split by byte
constexpr size_t kMaxSplits = 16;       // c-blosc's MAX_SPLITS
constexpr size_t kMinSplitItems = 128;  // c-blosc's MIN_BUFFERSIZE

}  // namespace

bool decode_blosc_blocks(std::span<const std::byte> stream, size_t first, size_t last,
                         std::span<std::byte> out, ByteBuffer& tmp) {
  if (stream.size() < BLOSC_MIN_HEADER_LENGTH) return false;
  const auto* s = reinterpret_cast<const uint8_t*>(stream.data());
  const uint8_t flags = s[2];  // all of them (blosc_cbuffer_metainfo keeps the low three)
  const size_t typesize = s[3];
  const size_t nbytes = blosc_le32(stream.data() + 4);
  const size_t blocksize = blosc_le32(stream.data() + 8);
  const size_t cbytes = blosc_le32(stream.data() + 12);
  if (s[0] != BLOSC_VERSION_FORMAT || (flags >> 5) != BLOSC_LZ4_FORMAT ||
      s[1] != BLOSC_LZ4_VERSION_FORMAT) {
    return false;
  }
  if ((flags & (BLOSC_MEMCPYED | BLOSC_DOBITSHUFFLE)) != 0) return false;
  // c-blosc never writes a block larger than the data; a header that claims one is left to
  // c-blosc's own checks (and must not size the scratch: the fuzzer's 4 GiB block).
  if (typesize == 0 || blocksize == 0 || blocksize > nbytes || blocksize % typesize != 0 ||
      nbytes != out.size() || cbytes != stream.size()) {
    return false;
  }
  const size_t blocks = (nbytes + blocksize - 1) / blocksize;
  const size_t table_end = BLOSC_MIN_HEADER_LENGTH + 4 * blocks;
  if (first > last || last >= blocks || table_end > stream.size()) return false;
  const bool shuffled = (flags & BLOSC_DOSHUFFLE) != 0 && typesize > 1;
  if (shuffled) tmp.resize_for_overwrite(blocksize);
  for (size_t b = first; b <= last; ++b) {
    const size_t offset = b * blocksize;
    const size_t bsize = std::min(blocksize, nbytes - offset);
    // c-blosc splits a block by byte under exactly these conditions (blosc_d): the reader must
    // agree with whatever compressor wrote it.
    const bool split = (flags & kDontSplit) == 0 && typesize <= kMaxSplits &&
                       bsize / typesize >= kMinSplitItems && bsize == blocksize;
    const size_t splits = split ? typesize : 1;
    const size_t split_nbytes = bsize / splits;
    // Where each split's bytes end up: decoded into `tmp` (`out` when not shuffled), or, stored
    // as is and shuffled, read by the unshuffle straight from the stream.
    const std::byte* streams[kMaxSplits];
    std::byte* dst = shuffled ? tmp.data() : out.data() + offset;
    size_t at = blosc_le32(stream.data() + BLOSC_MIN_HEADER_LENGTH + 4 * b);
    for (size_t k = 0; k < splits; ++k) {
      if (at < table_end || at > stream.size() - 4) fail_block(b);
      const size_t stored = blosc_le32(stream.data() + at);
      at += 4;
      if (stored > stream.size() - at) fail_block(b);
      streams[k] = dst;
      if (stored == split_nbytes) {  // stored as is
        if (shuffled) {
          streams[k] = stream.data() + at;
        } else {
          std::memcpy(dst, s + at, split_nbytes);
        }
      } else {
        const int n =
            LZ4_decompress_safe(reinterpret_cast<const char*>(s + at), reinterpret_cast<char*>(dst),
                                static_cast<int>(stored), static_cast<int>(split_nbytes));
        if (n < 0 || static_cast<size_t>(n) != split_nbytes) fail_block(b);
      }
      at += stored;
      dst += split_nbytes;
    }
    if (!shuffled) continue;
    if (split) {  // bsize is splits * split_nbytes: whole elements, one stream per byte
      byte_unshuffle_streams({streams, splits}, split_nbytes, out.data() + offset);
    } else {
      byte_unshuffle({streams[0], bsize}, out.subspan(offset, bsize), typesize);
    }
  }
  return true;
}

bool decode_blosc_stream(std::span<const std::byte> stream, std::span<std::byte> out,
                         ByteBuffer& tmp) {
  if (stream.size() < BLOSC_MIN_HEADER_LENGTH) return false;
  const size_t nbytes = blosc_le32(stream.data() + 4);
  const size_t blocksize = blosc_le32(stream.data() + 8);
  if (nbytes == 0 || blocksize == 0) return false;
  return decode_blosc_blocks(stream, 0, (nbytes - 1) / blocksize, out, tmp);
}

}  // namespace chute
