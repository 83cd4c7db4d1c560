// HDF5 filter pipelines as codec chains, and the two codecs HDF5 brings (fletcher32, the lz4
// plugin's framing). Reads of files h5py writes are tested in python/tests/test_hdf5.py.

#include "chute/format/hdf5_filters.h"

#include "chute/codec/codec_chain.h"
#include "chute/codec/codec_test_util.h"

namespace chute {
namespace {

using testing::pattern;

CodecChainPtr chain_of(const std::vector<Hdf5Filter>& filters, Endian endian = Endian::kLittle,
                       unsigned mask = 0, std::vector<int64_t> shape = {32, 33}) {
  return CodecChain::create(hdf5_codec_specs(filters, kFloat32, endian, mask, "f.h5 /x"), kFloat32,
                            shape);
}

void expect_round_trip(const CodecChain& chain) {
  const auto decoded = pattern(static_cast<size_t>(chain.decoded_nbytes()));
  const auto encoded = testing::encode(chain, decoded);
  std::vector<std::byte> back(decoded.size());
  CodecScratch scratch;
  chain.decode(encoded, back, scratch);
  EXPECT_EQ(back, decoded) << chain.describe();
}

TEST(Hdf5Filters, MapsThePipelineInOrder) {
  auto specs =
      hdf5_codec_specs({{kHdf5Shuffle, "", {}}, {kHdf5Deflate, "", {4}}, {kHdf5Fletcher32, "", {}}},
                       kFloat32, Endian::kBig, 0, "f.h5 /x");
  ASSERT_EQ(specs.size(), 4u);
  EXPECT_EQ(specs[0].name, "bytes");
  EXPECT_EQ(specs[0].configuration["endian"], "big");
  EXPECT_EQ(specs[1].name, "shuffle");
  EXPECT_EQ(specs[1].configuration["elementsize"], 4);
  EXPECT_EQ(specs[2].name, "zlib");
  EXPECT_EQ(specs[2].configuration["level"], 4);
  EXPECT_EQ(specs[3].name, "fletcher32");
  // A filter skipped for a chunk (its mask bit set) is left out of that chunk's chain.
  auto skipped = hdf5_codec_specs({{kHdf5Shuffle, "", {}}, {kHdf5Deflate, "", {4}}}, kFloat32,
                                  Endian::kLittle, 0b10, "f.h5 /x");
  ASSERT_EQ(skipped.size(), 2u);
  EXPECT_EQ(skipped[1].name, "shuffle");
}

TEST(Hdf5Filters, EveryDecodedPipelineRoundTrips) {
  expect_round_trip(*chain_of({{kHdf5Shuffle, "", {}}, {kHdf5Deflate, "", {6}}}));
  expect_round_trip(*chain_of({{kHdf5Deflate, "", {1}}, {kHdf5Fletcher32, "", {}}}, Endian::kBig));
  expect_round_trip(*chain_of({{kHdf5Lz4, "", {}}}));
  expect_round_trip(*chain_of({{kHdf5Lz4, "", {1000}}}));  // several blocks, the last short
  expect_round_trip(*chain_of({{kHdf5Zstd, "", {3}}}));
  expect_round_trip(*chain_of({{kHdf5Blosc, "", {2, 2, 4, 4224, 5, 1, 1}}}));
  expect_round_trip(*chain_of({{kHdf5Shuffle, "", {}}, {kHdf5Bzip2, "", {9}}}));
  expect_round_trip(*chain_of({{kHdf5Lzf, "", {}}, {kHdf5Fletcher32, "", {}}}));
  expect_round_trip(*chain_of({{kHdf5Szip, "", {169, 16, 32, 17}}}));
  expect_round_trip(*chain_of({{kHdf5Bitshuffle, "", {0, 4, 4, 0, 2}}}, Endian::kBig));
  expect_round_trip(*chain_of({{kHdf5Bitshuffle, "", {0, 4, 4, 16, 3}}}));
}

TEST(Hdf5Filters, UnsupportedFiltersNameFileDatasetAndFilter) {
  EXPECT_CHUTE_ERROR(hdf5_codec_specs({{kHdf5Blosc2, "", {}}}, kFloat32, Endian::kLittle, 0,
                                      "HDF5 file 'f.h5', dataset 'x'"),
                     ErrorCode::kUnsupported,
                     "HDF5 file 'f.h5', dataset 'x': unsupported HDF5 filter 32026 ('blosc2')");
  EXPECT_CHUTE_ERROR(
      hdf5_codec_specs({{32013, "zfp", {}}}, kFloat32, Endian::kLittle, 0, "f.h5 /x"),
      ErrorCode::kUnsupported, "filter 32013 ('zfp')");
  EXPECT_CHUTE_ERROR(hdf5_codec_specs({{kHdf5Nbit, "", {8, 0, 5, 1, 4, 0, 20, 0}}}, kFloat32,
                                      Endian::kLittle, 0, "f.h5 /x"),
                     ErrorCode::kUnsupported, "f.h5 /x: HDF5 filter 5 ('nbit'): floats");
  EXPECT_CHUTE_ERROR(hdf5_codec_specs({{kHdf5ScaleOffset, "", {1, 2, 5, 1, 4, 0, 0, 0}}}, kFloat32,
                                      Endian::kLittle, 0, "f.h5 /x"),
                     ErrorCode::kUnsupported, "E-scaling");
  EXPECT_CHUTE_ERROR(hdf5_codec_specs({{kHdf5Bitshuffle, "", {0, 4, 4, 0, 7}}}, kFloat32,
                                      Endian::kLittle, 0, "f.h5 /x"),
                     ErrorCode::kUnsupported, "compression 7");
}

TEST(Hdf5Filters, MapsTheNewFiltersFromTheirClientData) {
  auto specs = hdf5_codec_specs({{kHdf5Szip, "", {141, 16, 32, 7}},
                                 {kHdf5Bzip2, "", {9}},
                                 {kHdf5Lzf, "", {4, 261, 4000}},
                                 {kHdf5Bitshuffle, "", {0, 4, 4, 0, 2}},
                                 {kHdf5Nbit, "", {8, 0, 5, 1, 4, 0, 16, 0}},
                                 {kHdf5ScaleOffset, "", {0, 2, 5, 1, 4, 0, 0, 1}}},
                                kInt32, Endian::kLittle, 0, "f.h5 /x");
  ASSERT_EQ(specs.size(), 7u);
  EXPECT_EQ(specs[1].name, "szip");
  EXPECT_EQ(specs[1].configuration["pixels_per_block"], 16);
  EXPECT_EQ(specs[1].configuration["bits_per_pixel"], 32);
  EXPECT_EQ(specs[2].name, "bzip2");
  EXPECT_EQ(specs[3].name, "lzf");
  EXPECT_EQ(specs[4].name, "bitshuffle");
  EXPECT_EQ(specs[4].configuration["compression"], 2);
  EXPECT_EQ(specs[5].name, "nbit");
  EXPECT_EQ(specs[5].configuration["kind"], "int");
  EXPECT_EQ(specs[6].name, "scaleoffset");
  EXPECT_EQ(specs[6].configuration["cd"].size(), 8u);
}

TEST(Fletcher32, MatchesHdf5AndCatchesCorruption) {
  auto chain = chain_of({{kHdf5Fletcher32, "", {}}}, Endian::kLittle, 0, {3});
  // H5_checksum_fletcher32 of the bytes 01 02 03 04 05 06 07 08 09 0a 0b 0c (odd bytes padded).
  std::vector<std::byte> data;
  for (int i = 1; i <= 12; ++i) data.push_back(std::byte(i));
  auto encoded = testing::encode(*chain, data);
  ASSERT_EQ(encoded.size(), 16u);
  // sum1 = 0x0102 + 0x0304 + ... + 0x0b0c = 0x242a, sum2 = their running sums = 0x5b70.
  EXPECT_EQ(testing::to_hex(std::span(encoded).subspan(12)), "2a24705b");
  std::vector<std::byte> out(12);
  CodecScratch scratch;
  encoded[3] ^= std::byte{1};
  EXPECT_CHUTE_ERROR(chain->decode(encoded, out, scratch), ErrorCode::kCorruptData,
                     "fletcher32: checksum mismatch");
  encoded[3] ^= std::byte{1};
  std::swap(encoded[12], encoded[14]);  // halves swapped, as HDF5 1.6.0-1.6.2 wrote them
  std::swap(encoded[13], encoded[15]);
  chain->decode(encoded, out, scratch);
  EXPECT_EQ(out, data);
}

TEST(Hdf5Lz4, RejectsTruncatedAndOverrunningBlocks) {
  auto chain = chain_of({{kHdf5Lz4, "", {512}}});
  const auto decoded = pattern(static_cast<size_t>(chain->decoded_nbytes()));
  auto encoded = testing::encode(*chain, decoded);
  std::vector<std::byte> out(decoded.size());
  CodecScratch scratch;
  auto cut = encoded;
  cut.resize(cut.size() - 3);
  EXPECT_CHUTE_ERROR(chain->decode(cut, out, scratch), ErrorCode::kCorruptData, "hdf5 lz4");
  auto big = encoded;
  big[12] = std::byte{0x7f};  // first block's size: far past the end
  EXPECT_CHUTE_ERROR(chain->decode(big, out, scratch), ErrorCode::kCorruptData, "overruns");
  auto wrong = encoded;
  wrong[7] ^= std::byte{4};  // the original size
  EXPECT_CHUTE_ERROR(chain->decode(wrong, out, scratch), ErrorCode::kCorruptData, "expected");
}

}  // namespace
}  // namespace chute
