// h5py's LZF HDF5 filter (registered id 32000): the chunk is one LZF stream, no header. The
// filter is optional: a chunk LZF did not shrink is stored as is, and HDF5 marks that in the
// chunk's filter mask (the chain for that chunk then has no lzf). Decoded with liblzf.

#include <lzf.h>

#include <cerrno>

#include "chute/codec/codec.h"
#include "chute/util/error.h"

namespace chute {
namespace {

class LzfCodec final : public BytesToBytesCodec {
 public:
  void decode_exact(std::span<const std::byte> in, std::span<std::byte> out,
                    CodecScratch&) const override {
    if (out.empty() && in.empty()) return;
    errno = 0;
    const unsigned n = lzf_decompress(in.data(), static_cast<unsigned>(in.size()), out.data(),
                                      static_cast<unsigned>(out.size()));
    if (n == 0) {
      fail(ErrorCode::kCorruptData, "lzf: {} ({} stored bytes, {} expected decoded)",
           errno == E2BIG ? "the stream decodes to more bytes than expected" : "corrupt stream",
           in.size(), out.size());
    }
    if (n != out.size()) fail_size("lzf", out.size(), n);
  }

  void decode_any(std::span<const std::byte> in, ByteBuffer& out, size_t limit,
                  CodecScratch&) const override {
    size_t guess = std::min(limit, std::max<size_t>(in.size() * 4, 1 << 16));
    for (;;) {
      out.resize_for_overwrite(guess);
      errno = 0;
      const unsigned n = lzf_decompress(in.data(), static_cast<unsigned>(in.size()), out.data(),
                                        static_cast<unsigned>(out.size()));
      if (n != 0) {
        out.resize(n);
        return;
      }
      if (errno != E2BIG || guess >= limit) {
        fail(ErrorCode::kCorruptData, "lzf: {} ({} stored bytes)",
             errno == E2BIG ? "the stream decodes to more bytes than allowed" : "corrupt stream",
             in.size());
      }
      guess = std::min(limit, guess * 2);
    }
  }

  void encode(std::span<const std::byte> in, ByteBuffer& out, CodecScratch&) const override {
    // As h5py: an output no larger than the input, else the chunk is stored raw (which a chain
    // cannot say for one chunk, so it is an error here).
    out.resize_for_overwrite(in.size());
    const unsigned n = lzf_compress(in.data(), static_cast<unsigned>(in.size()), out.data(),
                                    static_cast<unsigned>(out.size()));
    if (n == 0) {
      fail(ErrorCode::kInvalidArgument,
           "lzf: the chunk does not compress (HDF5 stores such chunks unfiltered)");
    }
    out.resize(n);
  }

  std::string describe() const override { return "lzf"; }
};

}  // namespace

std::unique_ptr<BytesToBytesCodec> make_lzf_codec(const nlohmann::json&) {
  return std::make_unique<LzfCodec>();
}

}  // namespace chute
