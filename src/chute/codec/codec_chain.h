#pragma once
// A chain of Zarr codecs, built and validated once per array (tensorstore's "prepare"), then
// used for every chunk. Decoding writes the chunk in C order and native byte order straight into
// caller memory; per-worker state (decompression contexts, scratch buffers) lives in
// CodecScratch so the steady state allocates nothing.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "chute/util/byte_buffer.h"
#include "chute/vocab/codec_spec.h"
#include "chute/vocab/dtype.h"

namespace chute {

class ShardingCodec;

/// Reads into.size() bytes of a stored value starting at `offset`; throws when it cannot.
using StreamReader = std::function<void(uint64_t offset, std::span<std::byte> into)>;

/// Per-worker reusable state: one per thread, never shared between threads.
class CodecScratch {
 public:
  CodecScratch();
  ~CodecScratch();
  CodecScratch(CodecScratch&&) noexcept;
  CodecScratch& operator=(CodecScratch&&) noexcept;

  ByteBuffer& buffer(size_t i);  // i in [0, 4): ping-pong buffers between stages
  struct Contexts;               // zstd/blosc contexts, created lazily by the codecs
  Contexts& contexts();

 private:
  ByteBuffer buffers_[4];
  std::unique_ptr<Contexts> contexts_;
};

class CodecChain {
 public:
  /// Validates `codecs` for chunks of `chunk_shape` elements of `data_type`; throws kUnsupported
  /// naming an unknown codec, kInvalidMetadata for a bad configuration or an inconsistent chain.
  static std::shared_ptr<const CodecChain> create(std::span<const CodecSpec> codecs,
                                                  const DataType& data_type,
                                                  std::span<const int64_t> chunk_shape);
  /// As above; `fill_value` (data_type.size bytes in native order, or empty for zeros) is what a
  /// whole-shard decode of a sharded chain writes into empty inner chunks.
  static std::shared_ptr<const CodecChain> create(std::span<const CodecSpec> codecs,
                                                  const DataType& data_type,
                                                  std::span<const int64_t> chunk_shape,
                                                  std::span<const std::byte> fill_value);
  virtual ~CodecChain() = default;

  /// Decodes one stored chunk into `out`, which must hold exactly decoded_nbytes() bytes.
  /// Throws kCorruptData (truncated, corrupt, size mismatch, checksum) with a message that states
  /// expected and found; sizes claimed by headers are checked before anything is allocated.
  virtual void decode(std::span<const std::byte> encoded, std::span<std::byte> out,
                      CodecScratch& scratch) const = 0;

  /// Decodes at least bytes [begin, end) of the decoded chunk into the same bytes of `out`
  /// (decoded_nbytes() bytes); bytes outside the range are unspecified. Chains whose stream is
  /// the chunk's bytes as they are (no array->array codec, native byte order), uncompressed or
  /// behind one codec that can decode part of it (blosc: only the blocks that hold the range),
  /// decode just that part; any other chain decodes the whole chunk. Returns true when only
  /// part was decoded.
  /// Throws as decode() does.
  virtual bool decode_part(std::span<const std::byte> encoded, size_t begin, size_t end,
                           std::span<std::byte> out, CodecScratch& scratch) const = 0;

  /// True when decode_part and read_part can do less than a whole chunk's work.
  virtual bool decodes_parts() const = 0;

  /// True when the stored stream is the chunk's bytes as they are (C order, native byte order,
  /// no compressor): any byte range of the decoded chunk is the same range of the stored one.
  virtual bool stored_as_is() const = 0;

  /// The decoded byte counts at which decode_part can split this stored chunk without decoding
  /// anything twice (blosc: its block size), so that threads can decode parts of one chunk
  /// side by side; 0 when it cannot.
  virtual size_t part_alignment(std::span<const std::byte> encoded) const = 0;

  /// The decoded bytes that a part decode of [begin, end) produces: the range rounded out to
  /// whole blocks of part_alignment (blosc decodes whole blocks), at most decoded_nbytes().
  size_t part_decoded_nbytes(std::span<const std::byte> encoded, size_t begin, size_t end) const {
    const size_t align = part_alignment(encoded);
    const auto nbytes = static_cast<size_t>(decoded_nbytes());
    if (align == 0 || begin >= end) return end - begin;
    return std::min(nbytes, (end + align - 1) / align * align) - begin / align * align;
  }

  /// As decode_part, but reads the stored chunk (`stored_nbytes` bytes) itself through `read`,
  /// only the parts that decoding [begin, end) needs: uncompressed, that range straight into
  /// `out`; blosc, its header, its block table and the blocks of the range into `stream`
  /// (resized to stored_nbytes; what is not needed is not read). Other chains, and streams
  /// that cannot be split, are read into `stream` whole and decoded whole. Returns true when
  /// only part was read and decoded. Throws as decode() does, and whatever `read` throws.
  virtual bool read_part(const StreamReader& read, size_t stored_nbytes, size_t begin, size_t end,
                         ByteBuffer& stream, std::span<std::byte> out,
                         CodecScratch& scratch) const = 0;

  /// Encodes one chunk (C order, native byte order, decoded_nbytes() bytes) into `out`.
  virtual void encode(std::span<const std::byte> decoded, ByteBuffer& out,
                      CodecScratch& scratch) const = 0;

  virtual int64_t decoded_nbytes() const = 0;

  /// Non-null when the array->bytes codec is sharding_indexed and the shard is stored as is (no
  /// array->array or bytes->bytes codec around it): then the array reads inner chunks through it
  /// (partial reads) instead of calling decode() on whole shards. A chain with codecs around the
  /// sharding codec returns null here and decodes whole shards.
  virtual const ShardingCodec* sharding() const = 0;

  /// e.g. "bytes(little) | blosc(lz4, shuffle, clevel 5)".
  virtual std::string describe() const = 0;
};

using CodecChainPtr = std::shared_ptr<const CodecChain>;

}  // namespace chute
