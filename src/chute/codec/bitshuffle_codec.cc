// The bitshuffle HDF5 filter (registered id 32008, as the bitshuffle package and hdf5plugin
// write it). Elements are taken in blocks (a multiple of 8 elements; by default about 8 KiB);
// within a block, bit k of byte j of every element is gathered into one row of n/8 bytes (row
// 8j + k, element i at byte i/8, bit i%8). The elements past the last multiple of 8 are stored
// as they are, after the blocks. Without compression the blocks follow each other; with LZ4 or
// Zstandard the chunk starts with the decoded size (big-endian uint64) and the block size in
// bytes (big-endian uint32), and each block is a big-endian uint32 compressed size and the
// compressed shuffled block.

#include <lz4.h>
#include <zstd.h>

#include <cstring>

#include "chute/codec/codec.h"
#include "chute/codec/hdf5_bits.h"
#include "chute/util/error.h"

namespace chute {
namespace {

enum BitshuffleCompression : int { kBshufNone = 0, kBshufLz4 = 2, kBshufZstd = 3 };
constexpr size_t kBshufHeader = 12;
constexpr size_t kBshufTargetBlockBytes = 8192;

/// Transposes the 8x8 bit matrix held in x (byte r, bit c) into (byte c, bit r).
uint64_t transpose_bits_8x8(uint64_t x) {
  uint64_t t = (x ^ (x >> 7)) & 0x00AA00AA00AA00AAull;
  x = x ^ t ^ (t << 7);
  t = (x ^ (x >> 14)) & 0x0000CCCC0000CCCCull;
  x = x ^ t ^ (t << 14);
  t = (x ^ (x >> 28)) & 0x00000000F0F0F0F0ull;
  return x ^ t ^ (t << 28);
}

/// Element bytes -> bit rows, for `n` (a multiple of 8) elements of `size` bytes.
void bitshuffle_block(const std::byte* in, std::byte* out, size_t n, size_t size) {
  const size_t row = n / 8;
  for (size_t j = 0; j < size; ++j) {
    for (size_t g = 0; g < row; ++g) {
      uint64_t x = 0;
      for (size_t b = 0; b < 8; ++b)
        x |= static_cast<uint64_t>(in[(g * 8 + b) * size + j]) << (8 * b);
      x = transpose_bits_8x8(x);
      for (size_t k = 0; k < 8; ++k) out[(j * 8 + k) * row + g] = std::byte((x >> (8 * k)) & 0xff);
    }
  }
}

/// Bit rows -> element bytes: the inverse of bitshuffle_block.
void bitunshuffle_block(const std::byte* in, std::byte* out, size_t n, size_t size) {
  const size_t row = n / 8;
  for (size_t j = 0; j < size; ++j) {
    for (size_t g = 0; g < row; ++g) {
      uint64_t x = 0;
      for (size_t k = 0; k < 8; ++k)
        x |= static_cast<uint64_t>(in[(j * 8 + k) * row + g]) << (8 * k);
      x = transpose_bits_8x8(x);
      for (size_t b = 0; b < 8; ++b) out[(g * 8 + b) * size + j] = std::byte((x >> (8 * b)) & 0xff);
    }
  }
}

class BitshuffleCodec final : public BytesToBytesCodec {
 public:
  BitshuffleCodec(size_t element_size, size_t block_elements, int compression, int level)
      : element_size_(element_size),
        block_elements_(block_elements),
        compression_(compression),
        level_(level) {}

  void decode_exact(std::span<const std::byte> in, std::span<std::byte> out,
                    CodecScratch& scratch) const override {
    if (out.size() % element_size_ != 0) {
      fail(ErrorCode::kCorruptData, "bitshuffle: {} bytes are not whole elements of {} bytes",
           out.size(), element_size_);
    }
    const size_t count = out.size() / element_size_;
    if (compression_ == kBshufNone) {
      if (in.size() != out.size()) fail_size("bitshuffle", out.size(), in.size());
      for_each_block(count, block_elements_, [&](size_t first, size_t n) {
        bitunshuffle_block(in.data() + first * element_size_, out.data() + first * element_size_, n,
                           element_size_);
      });
      copy_leftover(in.data() + in.size(), out, count);
      return;
    }
    if (in.size() < kBshufHeader) {
      fail(ErrorCode::kCorruptData, "bitshuffle: expected a header of {} bytes, got {}",
           kBshufHeader, in.size());
    }
    const uint64_t total = hdf5_load_value(in.data(), 8, /*big_endian=*/true);
    if (total != out.size()) fail_size("bitshuffle", out.size(), total);
    const uint64_t block_bytes = hdf5_load_value(in.data() + 8, 4, /*big_endian=*/true);
    const uint64_t block = block_bytes / element_size_;
    if (block == 0 || block_bytes % element_size_ != 0 || block % 8 != 0) {
      fail(ErrorCode::kCorruptData,
           "bitshuffle: a block of {} bytes is not a multiple of 8 elements of {} bytes",
           block_bytes, element_size_);
    }
    ByteBuffer& tmp = scratch.buffer(kCodecTemp);
    tmp.resize_for_overwrite(static_cast<size_t>(std::min<uint64_t>(block, count) * element_size_));
    size_t pos = kBshufHeader;
    for_each_block(count, static_cast<size_t>(block), [&](size_t first, size_t n) {
      const size_t want = n * element_size_;
      if (in.size() - pos < 4) {
        fail(ErrorCode::kCorruptData, "bitshuffle: truncated at byte {} of {} (block header)", pos,
             in.size());
      }
      const uint64_t stored = hdf5_load_value(in.data() + pos, 4, /*big_endian=*/true);
      pos += 4;
      if (stored > in.size() - pos) {
        fail(ErrorCode::kCorruptData,
             "bitshuffle: a block of {} bytes at byte {} overruns the {} bytes of the chunk",
             stored, pos, in.size());
      }
      decompress_block(in.subspan(pos, static_cast<size_t>(stored)), {tmp.data(), want}, pos,
                       scratch);
      bitunshuffle_block(tmp.data(), out.data() + first * element_size_, n, element_size_);
      pos += static_cast<size_t>(stored);
    });
    const size_t leftover = (count % 8) * element_size_;
    if (in.size() - pos != leftover) {
      fail(ErrorCode::kCorruptData,
           "bitshuffle: {} bytes follow the blocks, expected the {} unshuffled trailing bytes",
           in.size() - pos, leftover);
    }
    copy_leftover(in.data() + in.size(), out, count);
  }

  void decode_any(std::span<const std::byte> in, ByteBuffer& out, size_t limit,
                  CodecScratch& scratch) const override {
    size_t total = in.size();
    if (compression_ == kBshufNone && total > limit) {
      fail(ErrorCode::kCorruptData, "bitshuffle: {} bytes, more than the {} allowed", total, limit);
    }
    if (compression_ != kBshufNone) {
      const uint64_t claimed =
          in.size() >= kBshufHeader ? hdf5_load_value(in.data(), 8, /*big_endian=*/true) : 0;
      if (in.size() < kBshufHeader || claimed > limit) {
        fail(ErrorCode::kCorruptData,
             "bitshuffle: header claims {} decoded bytes, more than the {} allowed", claimed,
             limit);
      }
      total = static_cast<size_t>(claimed);
    }
    out.resize_for_overwrite(total);
    decode_exact(in, out.span(), scratch);
  }

  void encode(std::span<const std::byte> in, ByteBuffer& out, CodecScratch&) const override {
    if (in.size() % element_size_ != 0) {
      fail(ErrorCode::kInvalidArgument, "bitshuffle: {} bytes are not whole elements of {} bytes",
           in.size(), element_size_);
    }
    const size_t count = in.size() / element_size_;
    if (compression_ == kBshufNone) {
      out.resize_for_overwrite(in.size());
      for_each_block(count, block_elements_, [&](size_t first, size_t n) {
        bitshuffle_block(in.data() + first * element_size_, out.data() + first * element_size_, n,
                         element_size_);
      });
      const size_t leftover = (count % 8) * element_size_;
      std::memcpy(out.data() + in.size() - leftover, in.data() + in.size() - leftover, leftover);
      return;
    }
    const size_t block_bytes = block_elements_ * element_size_;
    const size_t bound = compression_ == kBshufLz4
                             ? static_cast<size_t>(LZ4_compressBound(static_cast<int>(block_bytes)))
                             : ZSTD_compressBound(block_bytes);
    const size_t blocks = count / block_elements_ + 1;
    out.resize(kBshufHeader + blocks * (4 + bound) + (count % 8) * element_size_);
    hdf5_store_value(out.data(), in.size(), 8, true);
    hdf5_store_value(out.data() + 8, block_bytes, 4, true);
    std::vector<std::byte> shuffled(block_bytes);
    size_t pos = kBshufHeader;
    for_each_block(count, block_elements_, [&](size_t first, size_t n) {
      bitshuffle_block(in.data() + first * element_size_, shuffled.data(), n, element_size_);
      const size_t want = n * element_size_;
      size_t c = 0;
      if (compression_ == kBshufLz4) {
        const int r = LZ4_compress_default(reinterpret_cast<const char*>(shuffled.data()),
                                           reinterpret_cast<char*>(out.data() + pos + 4),
                                           static_cast<int>(want), static_cast<int>(bound));
        if (r <= 0) fail(ErrorCode::kInternal, "bitshuffle: LZ4 compression failed");
        c = static_cast<size_t>(r);
      } else {
        c = ZSTD_compress(out.data() + pos + 4, bound, shuffled.data(), want, level_);
        if (ZSTD_isError(c)) fail(ErrorCode::kInternal, "bitshuffle: zstd compression failed");
      }
      hdf5_store_value(out.data() + pos, c, 4, true);
      pos += 4 + c;
    });
    const size_t leftover = (count % 8) * element_size_;
    std::memcpy(out.data() + pos, in.data() + in.size() - leftover, leftover);
    out.resize(pos + leftover);
  }

  std::string describe() const override {
    const char* name = compression_ == kBshufLz4    ? "lz4"
                       : compression_ == kBshufZstd ? "zstd"
                                                    : "none";
    return fmt::format("bitshuffle({}, {} bytes)", name, element_size_);
  }

 private:
  /// Calls f(first element, count) for each whole block and then for the last partial block
  /// rounded down to a multiple of 8 elements.
  template <typename F>
  static void for_each_block(size_t count, size_t block, F&& f) {
    size_t first = 0;
    for (; first + block <= count; first += block) f(first, block);
    const size_t last = (count - first) / 8 * 8;
    if (last > 0) f(first, last);
  }

  void copy_leftover(const std::byte* in_end, std::span<std::byte> out, size_t count) const {
    const size_t leftover = (count % 8) * element_size_;
    std::memcpy(out.data() + out.size() - leftover, in_end - leftover, leftover);
  }

  void decompress_block(std::span<const std::byte> in, std::span<std::byte> out, size_t at,
                        CodecScratch& scratch) const {
    if (compression_ == kBshufLz4) {
      const int n = LZ4_decompress_safe(reinterpret_cast<const char*>(in.data()),
                                        reinterpret_cast<char*>(out.data()),
                                        static_cast<int>(in.size()), static_cast<int>(out.size()));
      if (n < 0 || static_cast<size_t>(n) != out.size()) {
        fail(ErrorCode::kCorruptData,
             "bitshuffle: corrupt LZ4 block at byte {} (expected {} bytes)", at, out.size());
      }
      return;
    }
    const size_t n = ZSTD_decompressDCtx(scratch.contexts().zstd_dctx(), out.data(), out.size(),
                                         in.data(), in.size());
    if (ZSTD_isError(n) || n != out.size()) {
      fail(ErrorCode::kCorruptData, "bitshuffle: corrupt zstd block at byte {} (expected {} bytes)",
           at, out.size());
    }
  }

  size_t element_size_;
  size_t block_elements_;  // used without compression, and when encoding
  int compression_;
  int level_;
};

}  // namespace

std::unique_ptr<BytesToBytesCodec> make_bitshuffle_codec(const nlohmann::json& config,
                                                         int element_size) {
  const int64_t size = config_int(config, "elementsize", element_size, "bitshuffle");
  if (size < 1 || size > (1 << 20)) {
    fail(ErrorCode::kInvalidMetadata, "bitshuffle: elementsize must be in [1, 2^20], got {}", size);
  }
  int64_t block = config_int(config, "blocksize", 0, "bitshuffle");
  if (block == 0) {
    block = std::max<int64_t>(static_cast<int64_t>(kBshufTargetBlockBytes) / size / 8 * 8, 128);
  }
  if (block < 8 || block % 8 != 0 || block > (int64_t{1} << 28) / size) {
    fail(ErrorCode::kInvalidMetadata,
         "bitshuffle: blocksize must be a positive multiple of 8 elements, got {}", block);
  }
  const int64_t compression = config_int(config, "compression", kBshufNone, "bitshuffle");
  if (compression != kBshufNone && compression != kBshufLz4 && compression != kBshufZstd) {
    fail(ErrorCode::kUnsupported,
         "bitshuffle: compression {} is not supported (0 none, 2 LZ4, 3 Zstandard)", compression);
  }
  const int64_t level = config_int(config, "level", 3, "bitshuffle");
  return std::make_unique<BitshuffleCodec>(static_cast<size_t>(size), static_cast<size_t>(block),
                                           static_cast<int>(compression), static_cast<int>(level));
}

}  // namespace chute
