// chute's own decoder of c-blosc 1.x blocks, for the blosc codec: LZ4 streams and byte shuffle
// decoded straight into place, without c-blosc's per-call buffers and copies.

#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "chute/util/byte_buffer.h"

namespace chute {

/// Decodes blocks [first, last] of the c-blosc 1.x stream `stream` straight into their place
/// in `out`, which holds the stream's whole decoded size: each split's LZ4 stream into `tmp`
/// (or, unshuffled, into `out`), then one byte unshuffle into `out`. It is c-blosc's own block
/// decoder (blosc_d) without blosc_getitem's copy of every block out of its own buffer, and with
/// chute's register unshuffle. Returns false, having written nothing, for streams it leaves to
/// c-blosc: another compressor than LZ4/LZ4HC, bitshuffle, stored as is, another format version,
/// a header that does not match `stream`'s and `out`'s sizes, blocks out of range. Throws
/// kCorruptData when a block's bytes do not decode to its size.
bool decode_blosc_blocks(std::span<const std::byte> stream, size_t first, size_t last,
                         std::span<std::byte> out, ByteBuffer& tmp);

/// Every block of `stream`: decode_blosc_blocks(stream, 0, last block, out, tmp).
bool decode_blosc_stream(std::span<const std::byte> stream, std::span<std::byte> out,
                         ByteBuffer& tmp);

/// The little-endian 32-bit field at `p` of a c-blosc 1.x header or block table.
inline uint32_t blosc_le32(const std::byte* p) {
  const auto* b = reinterpret_cast<const uint8_t*>(p);
  return static_cast<uint32_t>(b[0]) | static_cast<uint32_t>(b[1]) << 8 |
         static_cast<uint32_t>(b[2]) << 16 | static_cast<uint32_t>(b[3]) << 24;
}

}  // namespace chute
