#pragma once
// The sharding_indexed codec: a shard holds chunks_per_shard inner chunks, each encoded with the
// inner codec chain, plus an index of (offset, nbytes) pairs (uint64 little endian, encoded with
// the index codecs) at the start or the end of the shard. Empty inner chunks have
// offset = nbytes = 2^64-1 and read as the fill value.

#include <cstdint>
#include <span>
#include <vector>

#include "chute/codec/codec_chain.h"

namespace chute {

struct ShardIndexEntry {
  uint64_t offset = ~uint64_t{0};
  uint64_t nbytes = ~uint64_t{0};
  bool is_empty() const { return offset == ~uint64_t{0} && nbytes == ~uint64_t{0}; }
};

class ShardingCodec {
 public:
  std::vector<int64_t> shard_shape;
  std::vector<int64_t> inner_chunk_shape;
  std::vector<int64_t> chunks_per_shard;  // shard_shape / inner_chunk_shape, per dimension
  CodecChainPtr inner;                    // decodes one inner chunk
  CodecChainPtr index_codecs;             // decodes the index (bytes + usually crc32c)
  bool index_at_end = true;
  /// One element in native byte order, written into empty inner chunks by a whole-shard
  /// decode (CodecChain::decode); empty means zeros. Set from CodecChain::create's fill_value.
  std::vector<std::byte> fill_value;

  int64_t inner_chunk_count() const;
  /// Bytes the encoded index occupies in the shard.
  uint64_t index_encoded_nbytes() const { return index_nbytes_; }
  /// Where the encoded index starts in a shard of `shard_nbytes` bytes (precondition:
  /// shard_nbytes >= index_encoded_nbytes()).
  uint64_t index_offset(uint64_t shard_nbytes) const {
    return index_at_end ? shard_nbytes - index_encoded_nbytes() : 0;
  }
  /// Decodes and validates an index read from a shard of `shard_nbytes` bytes: every non-empty
  /// entry must lie inside the shard (outside the index). Throws kCorruptData otherwise.
  void decode_index(std::span<const std::byte> encoded, uint64_t shard_nbytes,
                    std::vector<ShardIndexEntry>& out, CodecScratch& scratch) const;
  /// Row-major position of an inner chunk inside its shard.
  int64_t inner_position(std::span<const int64_t> inner_coords_in_shard) const;

  /// Set by CodecChain::create: the index chain's fixed encoded size.
  uint64_t index_nbytes_ = 0;
};

}  // namespace chute
