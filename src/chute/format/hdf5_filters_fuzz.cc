// libFuzzer target: treats arbitrary bytes as a stored HDF5 chunk and decodes it through one of
// the filter pipelines chute reads (the first byte picks it): shuffle + deflate + fletcher32,
// the lz4 plugin's framing, blosc, zstd, szip, bzip2, LZF, bitshuffle (none, LZ4, zstd), n-bit
// and scale-offset (integers and floats). Any input must either decode or throw chute::Error.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "chute/codec/codec_chain.h"
#include "chute/format/hdf5_filters.h"
#include "chute/util/error.h"

namespace {

using chute::Hdf5Filter;

const chute::DataType kFuzzF32{chute::DTypeKind::kFloat, 4};
const chute::DataType kFuzzI32{chute::DTypeKind::kInt, 4};

/// Chunks of 16 x 17 elements of 4 bytes (272 elements), whatever the chain.
chute::CodecChainPtr make_chain(std::vector<Hdf5Filter> filters, chute::Endian endian,
                                const chute::DataType& dtype = kFuzzF32) {
  const std::vector<int64_t> shape = {16, 17};
  return chute::CodecChain::create(chute::hdf5_codec_specs(filters, dtype, endian, 0, "fuzz"),
                                   dtype, shape);
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
      make_chain({{chute::kHdf5Szip, "", {169, 16, 32, 17}}}, chute::Endian::kLittle),
      make_chain({{chute::kHdf5Bzip2, "", {9}}}, chute::Endian::kLittle),
      make_chain({{chute::kHdf5Lzf, "", {}}, {chute::kHdf5Fletcher32, "", {}}},
                 chute::Endian::kLittle),
      make_chain({{chute::kHdf5Bitshuffle, "", {0, 4, 4, 16, 0}}}, chute::Endian::kLittle),
      make_chain({{chute::kHdf5Bitshuffle, "", {0, 4, 4, 0, 2}}}, chute::Endian::kLittle),
      make_chain({{chute::kHdf5Bitshuffle, "", {0, 4, 4, 32, 3}}, {chute::kHdf5Fletcher32, "", {}}},
                 chute::Endian::kBig),
      make_chain({{chute::kHdf5Nbit, "", {8, 0, 272, 1, 4, 0, 20, 3}}}, chute::Endian::kLittle,
                 kFuzzI32),
      make_chain({{chute::kHdf5ScaleOffset, "", {0, 2, 272, 1, 4, 0, 0, 1, 0}}},
                 chute::Endian::kLittle),
      make_chain({{chute::kHdf5ScaleOffset, "", {2, 0, 272, 0, 4, 1, 1, 1, 5}},
                  {chute::kHdf5Deflate, "", {1}}},
                 chute::Endian::kBig, kFuzzI32),
  };
  constexpr size_t kChains = sizeof(chains) / sizeof(chains[0]);
  const chute::CodecChain& chain = *chains[data[0] % kChains];
  const std::span<const std::byte> chunk(reinterpret_cast<const std::byte*>(data + 1), size - 1);
  static chute::CodecScratch scratch;
  static std::vector<std::byte> out(static_cast<size_t>(chain.decoded_nbytes()));
  try {
    chain.decode(chunk, out, scratch);
  } catch (const chute::Error&) {
  }
  return 0;
}
