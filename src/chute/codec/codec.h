#pragma once
// Internal to codec/: the three Zarr codec kinds a CodecChain is made of, and the factories that
// build them from a CodecSpec. Each codec is configured once per array (its layout fixed at
// creation) and then used for every chunk from many threads: codecs are immutable, all
// per-thread state lives in CodecScratch.

#include <zlib.h>
#include <zstd.h>

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "chute/codec/codec_chain.h"
#include "chute/codec/sharding.h"
#include "chute/vocab/dtype.h"

struct libdeflate_decompressor;

namespace chute {

/// The element type and shape of an array flowing between array->array codecs.
struct ChunkLayout {
  DataType dtype;
  std::vector<int64_t> shape;

  int64_t num_elements() const;
  int64_t nbytes() const { return num_elements() * dtype.size; }
};

/// Per-thread contexts reused across chunks, created on first use.
struct CodecScratch::Contexts {
  Contexts() = default;
  Contexts(const Contexts&) = delete;
  Contexts& operator=(const Contexts&) = delete;
  ~Contexts();

  ZSTD_DCtx* zstd_dctx();
  ZSTD_CCtx* zstd_cctx();
  /// An inflate stream initialised for `window_bits` (15 zlib, 31 gzip), reset for a new input.
  z_stream* inflater(int window_bits);
  /// libdeflate's whole-buffer decompressor (zlib, gzip and raw deflate streams).
  libdeflate_decompressor* deflate_decompressor();
  /// Scratch for a nested chain (the inner chunks of a shard), so it never shares buffers with
  /// the outer chain.
  CodecScratch& nested();

 private:
  ZSTD_DCtx* zstd_dctx_ = nullptr;
  ZSTD_CCtx* zstd_cctx_ = nullptr;
  std::unique_ptr<z_stream> inflate_zlib_;
  std::unique_ptr<z_stream> inflate_gzip_;
  libdeflate_decompressor* deflate_ = nullptr;
  std::unique_ptr<CodecScratch> nested_;

 public:
  std::vector<ShardIndexEntry> shard_index;  // a whole-shard decode's index
};

/// Buffers of CodecScratch: kStageA/kStageB ping-pong between chain stages; kCodecTemp is for a
/// codec's own temporary (never an input or output of a stage); kCaller is for the code that
/// calls the chain (the sharding codec's tile).
enum ScratchBuffer : size_t { kStageA = 0, kStageB = 1, kCodecTemp = 2, kCaller = 3 };

class ArrayToArrayCodec {
 public:
  virtual ~ArrayToArrayCodec() = default;
  /// The layout this codec produces when encoding arrays of the layout it was created for.
  virtual const ChunkLayout& encoded_layout() const = 0;
  /// `encoded` holds encoded_layout().nbytes(), `decoded` the creation layout's nbytes().
  virtual void decode(std::span<const std::byte> encoded, std::span<std::byte> decoded) const = 0;
  virtual void encode(std::span<const std::byte> decoded, std::span<std::byte> encoded) const = 0;
  virtual std::string describe() const = 0;
};

class ArrayToBytesCodec {
 public:
  virtual ~ArrayToBytesCodec() = default;
  /// `decoded` holds exactly the layout's nbytes(); throws kCorruptData on bad input.
  virtual void decode(std::span<const std::byte> encoded, std::span<std::byte> decoded,
                      CodecScratch& scratch) const = 0;
  virtual void encode(std::span<const std::byte> decoded, ByteBuffer& out,
                      CodecScratch& scratch) const = 0;
  /// The encoded size when it does not depend on the data.
  virtual std::optional<int64_t> fixed_encoded_nbytes() const { return std::nullopt; }
  /// True when the encoded bytes equal the decoded bytes (native byte order, no reordering).
  virtual bool is_identity() const { return false; }
  virtual const ShardingCodec* sharding() const { return nullptr; }
  virtual std::string describe() const = 0;
};

class BytesToBytesCodec {
 public:
  virtual ~BytesToBytesCodec() = default;
  /// Decodes `in` into exactly out.size() bytes; throws kCorruptData when the stream is corrupt or
  /// holds a different size ("expected N bytes, got M").
  virtual void decode_exact(std::span<const std::byte> in, std::span<std::byte> out,
                            CodecScratch& scratch) const = 0;
  /// Decodes `in` when its decoded size is not known in advance (out is resized); throws
  /// kCorruptData when it would exceed `limit` bytes.
  virtual void decode_any(std::span<const std::byte> in, ByteBuffer& out, size_t limit,
                          CodecScratch& scratch) const = 0;
  /// Encodes `in` into `out` (resized). `in` must not alias `out`.
  virtual void encode(std::span<const std::byte> in, ByteBuffer& out,
                      CodecScratch& scratch) const = 0;
  /// Decodes at least the decoded bytes [begin, end) of `in` into the same bytes of `out`,
  /// which holds the whole decoded size; bytes outside the range are unspecified. Returns
  /// false, having written nothing, when only a whole decode would save work (the caller then
  /// calls decode_exact). Throws as decode_exact does.
  virtual bool decode_part(std::span<const std::byte> in, size_t begin, size_t end,
                           std::span<std::byte> out, CodecScratch& scratch) const {
    return false;
  }
  /// True when decode_part and read_part may do less than a whole decode.
  virtual bool decodes_parts() const { return false; }
  /// See CodecChain::part_alignment.
  virtual size_t part_alignment(std::span<const std::byte> in) const { return 0; }
  /// See CodecChain::read_part: reads only what decoding [begin, end) needs through `read`.
  /// Returns false when this stream cannot be split (the chain then reads it whole).
  virtual bool read_part(const StreamReader& read, size_t stored_nbytes, size_t begin, size_t end,
                         ByteBuffer& stream, std::span<std::byte> out,
                         CodecScratch& scratch) const {
    return false;
  }
  /// The encoded size for a decoded size, when it does not depend on the data.
  virtual std::optional<int64_t> fixed_encoded_nbytes(int64_t decoded_nbytes) const {
    return std::nullopt;
  }
  virtual std::string describe() const = 0;
};

// Factories. `config` is the codec's configuration object (never null: {} when absent). They
// throw kInvalidMetadata for a bad configuration. `element_size` is the size of the elements
// the bytes stream is made of (the array->bytes codec's input type), used by shuffles.
std::unique_ptr<ArrayToArrayCodec> make_transpose_codec(const nlohmann::json& config,
                                                        const ChunkLayout& decoded);
/// numcodecs filters acting on the flattened chunk: delta, fixedscaleoffset, astype, quantize,
/// shuffle (as array->array when it precedes the array->bytes codec).
std::unique_ptr<ArrayToArrayCodec> make_numcodecs_filter(const std::string& id,
                                                         const nlohmann::json& config,
                                                         const ChunkLayout& decoded);
std::unique_ptr<ArrayToBytesCodec> make_bytes_codec(const nlohmann::json& config,
                                                    const ChunkLayout& decoded);
/// sharding_indexed for shards of `decoded`; `fill_value` (data_type.size bytes, or empty for
/// zeros) is what a whole-shard decode writes into empty inner chunks.
std::unique_ptr<ArrayToBytesCodec> make_sharding_codec(const nlohmann::json& config,
                                                       const ChunkLayout& decoded,
                                                       std::span<const std::byte> fill_value);
std::unique_ptr<BytesToBytesCodec> make_blosc_codec(const nlohmann::json& config, int element_size);
std::unique_ptr<BytesToBytesCodec> make_zstd_codec(const nlohmann::json& config);
std::unique_ptr<BytesToBytesCodec> make_gzip_codec(const nlohmann::json& config, bool gzip);
std::unique_ptr<BytesToBytesCodec> make_lz4_codec(const nlohmann::json& config);
std::unique_ptr<BytesToBytesCodec> make_crc32c_codec(const nlohmann::json& config);
std::unique_ptr<BytesToBytesCodec> make_shuffle_codec(const nlohmann::json& config,
                                                      int element_size);
/// HDF5's fletcher32 filter (3): the data followed by its Fletcher-32 checksum (4 bytes).
std::unique_ptr<BytesToBytesCodec> make_fletcher32_codec(const nlohmann::json& config);
/// The HDF5 LZ4 filter (32004): big-endian original size (8 bytes) and block size (4), then per
/// block a big-endian compressed size (4) and the LZ4 block (stored raw when it did not shrink).
std::unique_ptr<BytesToBytesCodec> make_hdf5_lz4_codec(const nlohmann::json& config);
/// HDF5 filters, configured from the filter's client data as format/hdf5_filters.cc maps a
/// dataset's pipeline: bzip2 (307), LZF (32000), szip (4), bitshuffle (32008), n-bit (5) and
/// scale-offset (6); each in its own <name>_codec.cc.
std::unique_ptr<BytesToBytesCodec> make_bzip2_codec(const nlohmann::json& config);
std::unique_ptr<BytesToBytesCodec> make_lzf_codec(const nlohmann::json& config);
std::unique_ptr<BytesToBytesCodec> make_szip_codec(const nlohmann::json& config);
std::unique_ptr<BytesToBytesCodec> make_bitshuffle_codec(const nlohmann::json& config,
                                                         int element_size);
std::unique_ptr<BytesToBytesCodec> make_nbit_codec(const nlohmann::json& config);
std::unique_ptr<BytesToBytesCodec> make_scaleoffset_codec(const nlohmann::json& config);

// Helpers shared by the codec files.

/// The encoded size of every chunk through `chain`, when it does not depend on the data.
std::optional<int64_t> fixed_encoded_nbytes(const CodecChain& chain);

/// "expected N bytes, got M" failures for decoded sizes.
[[noreturn]] void fail_size(const char* codec, uint64_t expected, uint64_t got);
/// A parsed numpy dtype string ("<f8", "|u1", "int16", "float32") of a filter configuration.
DataType parse_filter_dtype(const nlohmann::json& config, const char* key, const char* codec);
/// A short name for messages: "float32", "uint8".
std::string dtype_label(const DataType& dtype);
/// Reads an integer member of `config`, or `fallback` when absent; kInvalidMetadata when not one.
int64_t config_int(const nlohmann::json& config, const char* key, int64_t fallback,
                   const char* codec);
/// Byte-shuffles `in` (count elements of `element_size` bytes) into `out` (numcodecs Shuffle);
/// trailing bytes that do not fill an element are copied unchanged.
void byte_shuffle(std::span<const std::byte> in, std::span<std::byte> out, size_t element_size);
void byte_unshuffle(std::span<const std::byte> in, std::span<std::byte> out, size_t element_size);
/// byte_unshuffle of `count` elements of streams.size() bytes whose byte j is at streams[j]
/// (each stream `count` bytes, anywhere): element i's byte j is streams[j][i], into `out`.
void byte_unshuffle_streams(std::span<const std::byte* const> streams, size_t count,
                            std::byte* out);

}  // namespace chute
