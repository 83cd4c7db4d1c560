// libFuzzer target: treats arbitrary bytes as a stored HDF5 chunk and decodes it through one of
// the filter pipelines chute reads (the first byte picks it): shuffle + deflate + fletcher32,
// the lz4 plugin's framing, blosc, zstd. Any input must either decode or throw chute::Error.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "chute/codec/codec_chain.h"
#include "chute/format/hdf5_filters.h"
#include "chute/util/error.h"

namespace {

using chute::Hdf5Filter;

chute::CodecChainPtr make_chain(std::vector<Hdf5Filter> filters, chute::Endian endian) {
  const chute::DataType f32{chute::DTypeKind::kFloat, 4};
  const std::vector<int64_t> shape = {16, 17};
  return chute::CodecChain::create(chute::hdf5_codec_specs(filters, f32, endian, 0, "fuzz"), f32,
                                   shape);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  static const chute::CodecChainPtr chains[] = {
      make_chain({{chute::kHdf5Shuffle, "", {}},
                  {chute::kHdf5Deflate, "", {6}},
                  {chute::kHdf5Fletcher32, "", {}}},
                 chute::Endian::kBig),
      make_chain({{chute::kHdf5Lz4, "", {256}}}, chute::Endian::kLittle),
      make_chain({{chute::kHdf5Blosc, "", {}}}, chute::Endian::kLittle),
      make_chain({{chute::kHdf5Zstd, "", {}}}, chute::Endian::kLittle),
  };
  const chute::CodecChain& chain = *chains[data[0] % 4];
  const std::span<const std::byte> chunk(reinterpret_cast<const std::byte*>(data + 1), size - 1);
  static chute::CodecScratch scratch;
  static std::vector<std::byte> out(static_cast<size_t>(chain.decoded_nbytes()));
  try {
    chain.decode(chunk, out, scratch);
  } catch (const chute::Error&) {
  }
  return 0;
}
