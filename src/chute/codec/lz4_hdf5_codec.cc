// The HDF5 LZ4 filter (registered id 32004, as hdf5plugin and the HDF Group's plugin write it):
// the original size as a big-endian uint64, the block size as a big-endian uint32, then each
// block as a big-endian uint32 compressed size and its bytes, an LZ4 block or, when the
// compressed size equals the block's size, the block stored raw. The last block may be short.

#include <lz4.h>

#include <cstring>

#include "chute/codec/codec.h"
#include "chute/codec/hdf5_bits.h"
#include "chute/util/error.h"

namespace chute {
namespace {

constexpr size_t kHeader = 12;
constexpr uint32_t kDefaultBlock = 1u << 30;  // the plugin's default: the whole chunk

class Hdf5Lz4Codec final : public BytesToBytesCodec {
 public:
  explicit Hdf5Lz4Codec(uint32_t block_size) : block_size_(block_size) {}

  void decode_exact(std::span<const std::byte> in, std::span<std::byte> out,
                    CodecScratch&) const override {
    if (in.size() < kHeader) {
      fail(ErrorCode::kCorruptData, "hdf5 lz4: expected a header of {} bytes, got {}", kHeader,
           in.size());
    }
    const uint64_t total = hdf5_load_value(in.data(), 8, true);
    if (total != out.size()) fail_size("hdf5 lz4", out.size(), total);
    uint64_t block = hdf5_load_value(in.data() + 8, 4, true);
    if (block == 0 && total > 0) fail(ErrorCode::kCorruptData, "hdf5 lz4: a block size of 0");
    if (block > total) block = total;
    size_t pos = kHeader;
    uint64_t done = 0;
    while (done < total) {
      const uint64_t want = std::min<uint64_t>(block, total - done);
      if (in.size() - pos < 4) {
        fail(ErrorCode::kCorruptData, "hdf5 lz4: truncated at byte {} of {} (block header)", pos,
             in.size());
      }
      const uint64_t stored = hdf5_load_value(in.data() + pos, 4, true);
      pos += 4;
      if (stored > in.size() - pos) {
        fail(ErrorCode::kCorruptData,
             "hdf5 lz4: a block of {} bytes at byte {} overruns the {} "
             "bytes of the chunk",
             stored, pos, in.size());
      }
      std::byte* dst = out.data() + done;
      if (stored == want) {
        std::memcpy(dst, in.data() + pos, want);
      } else {
        const int n = LZ4_decompress_safe(reinterpret_cast<const char*>(in.data() + pos),
                                          reinterpret_cast<char*>(dst), static_cast<int>(stored),
                                          static_cast<int>(want));
        if (n < 0 || static_cast<uint64_t>(n) != want) {
          fail(ErrorCode::kCorruptData, "hdf5 lz4: corrupt block at byte {} (expected {} bytes)",
               pos, want);
        }
      }
      pos += stored;
      done += want;
    }
  }

  void decode_any(std::span<const std::byte> in, ByteBuffer& out, size_t limit,
                  CodecScratch& scratch) const override {
    const uint64_t total = in.size() >= kHeader ? hdf5_load_value(in.data(), 8, true) : 0;
    if (in.size() < kHeader || total > limit) {
      fail(ErrorCode::kCorruptData,
           "hdf5 lz4: header claims {} decoded bytes, more than the {} "
           "allowed",
           total, limit);
    }
    out.resize_for_overwrite(total);
    decode_exact(in, out.span(), scratch);
  }

  void encode(std::span<const std::byte> in, ByteBuffer& out, CodecScratch&) const override {
    const uint64_t block = std::min<uint64_t>(block_size_, std::max<size_t>(in.size(), 1));
    const size_t blocks = in.empty() ? 0 : (in.size() + block - 1) / block;
    out.resize(kHeader + blocks * (4 + static_cast<size_t>(LZ4_compressBound(int(block)))));
    hdf5_store_value(out.data(), in.size(), 8, true);
    hdf5_store_value(out.data() + 8, block, 4, true);
    size_t pos = kHeader;
    for (size_t b = 0; b < blocks; ++b) {
      const size_t n = std::min<size_t>(block, in.size() - b * block);
      const int c = LZ4_compress_default(reinterpret_cast<const char*>(in.data() + b * block),
                                         reinterpret_cast<char*>(out.data() + pos + 4),
                                         static_cast<int>(n), LZ4_compressBound(int(n)));
      if (c <= 0 || static_cast<size_t>(c) >= n) {
        std::memcpy(out.data() + pos + 4, in.data() + b * block, n);
        hdf5_store_value(out.data() + pos, n, 4, true);
        pos += 4 + n;
      } else {
        hdf5_store_value(out.data() + pos, static_cast<uint64_t>(c), 4, true);
        pos += 4 + static_cast<size_t>(c);
      }
    }
    out.resize(pos);
  }

  std::string describe() const override { return "hdf5-lz4"; }

 private:
  uint32_t block_size_;
};

}  // namespace

std::unique_ptr<BytesToBytesCodec> make_hdf5_lz4_codec(const nlohmann::json& config) {
  const int64_t block = config_int(config, "blocksize", kDefaultBlock, "hdf5_lz4");
  if (block < 1 || block > (int64_t{1} << 31)) {
    fail(ErrorCode::kInvalidMetadata, "hdf5_lz4: blocksize must be in [1, 2^31], got {}", block);
  }
  return std::make_unique<Hdf5Lz4Codec>(static_cast<uint32_t>(block));
}

}  // namespace chute
