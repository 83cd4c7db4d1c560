// The HDF5 filter codecs: bzip2, LZF and szip round trip through their libraries and reject
// corrupt streams; bitshuffle matches a bit-by-bit reference of its layout; n-bit and
// scale-offset decode streams packed here as libhdf5 packs them.

#include <bzlib.h>
#include <lzf.h>

#include <cmath>
#include <cstring>

#include "chute/codec/codec_test_util.h"

namespace chute {
namespace {

using testing::as_bytes_of;
using testing::chain;
using testing::decode;
using testing::encode;
using testing::pattern;

void expect_filter_round_trip(const CodecChain& c, uint32_t seed = 1) {
  const auto decoded = pattern(static_cast<size_t>(c.decoded_nbytes()), seed);
  EXPECT_EQ(decode(c, encode(c, decoded)), decoded) << c.describe();
}

TEST(Hdf5Bzip2, DecodesWhatLibbz2WritesAndRejectsCorruptStreams) {
  auto c = chain(R"([{"name":"bytes","configuration":{"endian":"little"}},
                     {"name":"bzip2","configuration":{"level":9}}])",
                 kFloat32, {33, 7});
  expect_filter_round_trip(*c);
  // A stream libbz2 wrote itself.
  const auto decoded = pattern(static_cast<size_t>(c->decoded_nbytes()), 3);
  std::vector<std::byte> stream(decoded.size() * 2 + 600);
  unsigned n = static_cast<unsigned>(stream.size());
  ASSERT_EQ(
      BZ2_bzBuffToBuffCompress(reinterpret_cast<char*>(stream.data()), &n,
                               const_cast<char*>(reinterpret_cast<const char*>(decoded.data())),
                               static_cast<unsigned>(decoded.size()), 1, 0, 0),
      BZ_OK);
  stream.resize(n);
  EXPECT_EQ(decode(*c, stream), decoded);
  auto truncated = stream;
  truncated.resize(n / 2);
  EXPECT_CHUTE_ERROR(decode(*c, truncated), ErrorCode::kCorruptData, "bzip2");
  auto garbage = stream;
  for (size_t i = 10; i < 40; ++i) garbage[i] = std::byte{0x55};
  EXPECT_CHUTE_ERROR(decode(*c, garbage), ErrorCode::kCorruptData, "bzip2");
  // A stream of a larger chunk: more bytes than the chunk holds.
  auto small = chain(R"([{"name":"bytes","configuration":{"endian":"little"}},{"name":"bzip2"}])",
                     kFloat32, {4});
  EXPECT_CHUTE_ERROR(decode(*small, stream), ErrorCode::kCorruptData, "bzip2");
}

TEST(Hdf5Lzf, DecodesWhatLiblzfWritesAndRejectsCorruptStreams) {
  auto c = chain(R"([{"name":"bytes","configuration":{"endian":"little"}},{"name":"lzf"}])", kInt16,
                 {100, 9});
  expect_filter_round_trip(*c);
  const auto decoded = pattern(static_cast<size_t>(c->decoded_nbytes()), 5);
  std::vector<std::byte> stream(decoded.size());
  const unsigned n = lzf_compress(decoded.data(), static_cast<unsigned>(decoded.size()),
                                  stream.data(), static_cast<unsigned>(stream.size()));
  ASSERT_GT(n, 0u);
  stream.resize(n);
  EXPECT_EQ(decode(*c, stream), decoded);
  auto truncated = stream;
  truncated.resize(n - 3);
  EXPECT_CHUTE_ERROR(decode(*c, truncated), ErrorCode::kCorruptData, "lzf");
  std::vector<std::byte> back_reference = {std::byte{0xe0}, std::byte{0xff}, std::byte{0xff}};
  EXPECT_CHUTE_ERROR(decode(*c, back_reference), ErrorCode::kCorruptData, "lzf");
  // Behind fletcher32 the decoded size is not known: decode_any grows its guess.
  auto behind = chain(R"([{"name":"bytes","configuration":{"endian":"little"}},{"name":"lzf"},
                          {"name":"fletcher32"}])",
                      kInt16, {100, 9});
  expect_filter_round_trip(*behind);
}

TEST(Hdf5Szip, RoundTripsThroughLibaecAndChecksTheHeader) {
  // HDF5's parameters for little-endian float32 chunks of 64 x 9: NN, raw, LSB.
  auto c = chain(R"([{"name":"bytes","configuration":{"endian":"little"}},
                     {"name":"szip","configuration":{"options_mask":168,"bits_per_pixel":32,
                      "pixels_per_block":16,"pixels_per_scanline":576}}])",
                 kFloat32, {64, 9});
  expect_filter_round_trip(*c);
  auto c8 = chain(R"([{"name":"bytes"},{"name":"szip","configuration":{"options_mask":132,
                      "bits_per_pixel":8,"pixels_per_block":8,"pixels_per_scanline":64}}])",
                  kUInt8, {300});
  expect_filter_round_trip(*c8);
  const auto decoded = pattern(static_cast<size_t>(c->decoded_nbytes()));
  auto stream = encode(*c, decoded);
  stream[0] = std::byte{1};  // the decoded size in the header
  EXPECT_CHUTE_ERROR(decode(*c, stream), ErrorCode::kCorruptData, "szip: expected");
  stream = encode(*c, decoded);
  stream.resize(stream.size() / 2);
  EXPECT_CHUTE_ERROR(decode(*c, stream), ErrorCode::kCorruptData, "szip");
  EXPECT_CHUTE_ERROR(chain(R"([{"name":"bytes"},{"name":"szip","configuration":{}}])", kUInt8, {8}),
                     ErrorCode::kInvalidMetadata, "szip: options_mask");
  // Values libaec refuses, or would allocate for before checking: refused when the chain is made.
  EXPECT_CHUTE_ERROR(chain(R"([{"name":"bytes"},{"name":"szip","configuration":{"options_mask":132,
                      "bits_per_pixel":40,"pixels_per_block":8,"pixels_per_scanline":64}}])",
                           kUInt8, {8}),
                     ErrorCode::kInvalidMetadata, "bits_per_pixel must be 1 to 32 or 64");
  EXPECT_CHUTE_ERROR(chain(R"([{"name":"bytes"},{"name":"szip","configuration":{"options_mask":132,
                      "bits_per_pixel":8,"pixels_per_block":8,"pixels_per_scanline":100000}}])",
                           kUInt8, {8}),
                     ErrorCode::kInvalidMetadata, "pixels_per_scanline must be in [1, 4096]");
}

/// Bit k of byte j of element i goes to row 8j + k, bit i of the row (rows of n/8 bytes).
std::vector<std::byte> reference_bitshuffle(const std::vector<std::byte>& in, size_t size,
                                            size_t block) {
  std::vector<std::byte> out(in.size());
  const size_t count = in.size() / size;
  size_t first = 0;
  auto shuffle = [&](size_t n) {
    for (size_t i = 0; i < n; ++i) {
      for (size_t j = 0; j < size; ++j) {
        for (size_t k = 0; k < 8; ++k) {
          const int bit = (static_cast<int>(in[(first + i) * size + j]) >> k) & 1;
          const size_t at = first * size + (j * 8 + k) * (n / 8) + i / 8;
          out[at] |= std::byte(bit << (i % 8));
        }
      }
    }
    first += n;
  };
  while (first + block <= count) shuffle(block);
  if ((count - first) / 8 * 8 > 0) shuffle((count - first) / 8 * 8);
  std::memcpy(out.data() + first * size, in.data() + first * size, (count - first) * size);
  return out;
}

TEST(Hdf5Bitshuffle, MatchesTheReferenceLayoutAndRoundTrips) {
  for (size_t size : {1u, 2u, 4u, 8u}) {
    const DataType dtype = size == 1   ? kUInt8
                           : size == 2 ? kInt16
                           : size == 4 ? kFloat32
                                       : kFloat64;
    // 77 elements in blocks of 16: four blocks, a block of 8 and 5 elements left as they are.
    auto c = chain(R"([{"name":"bytes","configuration":{"endian":"little"}},
                       {"name":"bitshuffle","configuration":{"blocksize":16}}])",
                   dtype, {7, 11});
    const auto decoded = pattern(77 * size, static_cast<uint32_t>(size));
    const auto shuffled = encode(*c, decoded);
    EXPECT_EQ(shuffled, reference_bitshuffle(decoded, size, 16)) << size;
    EXPECT_EQ(decode(*c, shuffled), decoded) << size;
    for (int compression : {2, 3}) {
      auto compressed =
          chain(fmt::format(R"([{{"name":"bytes","configuration":{{"endian":"little"}}}},
                       {{"name":"bitshuffle","configuration":{{"blocksize":16,"compression":{}}}}}])",
                            compression),
                dtype, {7, 11});
      expect_filter_round_trip(*compressed, static_cast<uint32_t>(size));
    }
  }
}

TEST(Hdf5Bitshuffle, RejectsCorruptCompressedStreams) {
  auto c = chain(R"([{"name":"bytes","configuration":{"endian":"little"}},
                     {"name":"bitshuffle","configuration":{"compression":2}}])",
                 kFloat64, {300});
  const auto decoded = pattern(2400);
  auto stream = encode(*c, decoded);
  EXPECT_EQ(decode(*c, stream), decoded);
  auto bad = stream;
  bad[7] = std::byte{1};  // total size
  EXPECT_CHUTE_ERROR(decode(*c, bad), ErrorCode::kCorruptData, "bitshuffle: expected");
  bad = stream;
  bad[11] = std::byte{3};  // a block size that is not whole elements
  EXPECT_CHUTE_ERROR(decode(*c, bad), ErrorCode::kCorruptData, "not a multiple");
  bad = stream;
  bad[12] = std::byte{0x7f};  // the first block's compressed size
  EXPECT_CHUTE_ERROR(decode(*c, bad), ErrorCode::kCorruptData, "overruns");
  bad = stream;
  bad.resize(bad.size() - 1);
  EXPECT_CHUTE_ERROR(decode(*c, bad), ErrorCode::kCorruptData, "bitshuffle");
  EXPECT_CHUTE_ERROR(
      chain(R"([{"name":"bytes"},{"name":"bitshuffle","configuration":{"compression":5}}])", kUInt8,
            {8}),
      ErrorCode::kUnsupported, "compression 5");
}

/// Packs `bits`-bit values most significant bit first, as libhdf5 does.
std::vector<std::byte> pack_bits(const std::vector<uint64_t>& values, unsigned bits) {
  std::vector<std::byte> out((values.size() * bits + 7) / 8 + 1);
  size_t at = 0;
  for (uint64_t v : values) {
    for (unsigned b = bits; b-- > 0; ++at) {
      if ((v >> b) & 1) out[at / 8] |= std::byte(0x80 >> (at % 8));
    }
  }
  return out;
}

TEST(Hdf5Nbit, UnpacksIntegersOfReducedPrecisionAtAnOffset) {
  // int16 of 12 bits at bit offset 4, big endian, 5 elements per chunk.
  const std::vector<int16_t> expected = {-2048, -1, 0, 1, 2047};
  std::vector<uint64_t> fields;
  for (int16_t v : expected) fields.push_back(static_cast<uint64_t>(v) & 0xfff);
  auto c = chain(R"([{"name":"bytes","configuration":{"endian":"big"}},
                     {"name":"nbit","configuration":{"cd":[8,0,5,1,2,1,12,4],"kind":"int"}}])",
                 kInt16, {5});
  EXPECT_EQ(decode(*c, pack_bits(fields, 12)), as_bytes_of(expected));
  // The same values as unsigned 12-bit fields of a little-endian uint32 at offset 8.
  auto u = chain(R"([{"name":"bytes","configuration":{"endian":"little"}},
                     {"name":"nbit","configuration":{"cd":[8,0,5,1,4,0,12,8],"kind":"uint"}}])",
                 DataType{DTypeKind::kUInt, 4}, {5});
  std::vector<uint32_t> unsigned_expected;
  for (uint64_t f : fields) unsigned_expected.push_back(static_cast<uint32_t>(f));
  EXPECT_EQ(decode(*u, pack_bits(fields, 12)), as_bytes_of(unsigned_expected));
  auto short_stream = pack_bits(fields, 12);
  short_stream.resize(5);
  EXPECT_CHUTE_ERROR(decode(*c, short_stream), ErrorCode::kCorruptData, "ends too early");
  // Full precision: libhdf5 flags the filter a no-op.
  auto noop = chain(R"([{"name":"bytes","configuration":{"endian":"little"}},
                        {"name":"nbit","configuration":{"cd":[8,1,5,1,4,0,32,0]}}])",
                    kFloat32, {5});
  expect_filter_round_trip(*noop);
  EXPECT_CHUTE_ERROR(
      chain(
          R"([{"name":"bytes"},{"name":"nbit","configuration":{"cd":[8,0,5,1,4,0,20,0],"kind":"float"}}])",
          kFloat32, {5}),
      ErrorCode::kUnsupported, "reduced precision");
  EXPECT_CHUTE_ERROR(
      chain(R"([{"name":"bytes"},{"name":"nbit","configuration":{"cd":[8,0,5,1,2,0,12,8]}}])",
            kInt16, {5}),
      ErrorCode::kInvalidMetadata, "bad type");
  EXPECT_CHUTE_ERROR(
      chain(
          R"([{"name":"bytes"},{"name":"nbit","configuration":{"cd":[8,0,5,1,4,0,12,8],"kind":7}}])",
          kInt32, {5}),
      ErrorCode::kInvalidMetadata, "'kind' must be");
}

std::vector<std::byte> scaleoffset_chunk(uint32_t minbits, uint64_t minval,
                                         const std::vector<uint64_t>& offsets) {
  std::vector<std::byte> out(21);
  for (size_t i = 0; i < 4; ++i) out[i] = std::byte((minbits >> (8 * i)) & 0xff);
  out[4] = std::byte{8};
  for (size_t i = 0; i < 8; ++i) out[5 + i] = std::byte((minval >> (8 * i)) & 0xff);
  const auto packed = pack_bits(offsets, minbits);
  out.insert(out.end(), packed.begin(), packed.end());
  return out;
}

TEST(Hdf5ScaleOffset, DecodesIntegersWithTheirMinimumAndFillValue) {
  // int16, signed, big endian, fill value 99 defined; minimum -5 in 3 bits (7 is the fill).
  auto c = chain(R"([{"name":"bytes","configuration":{"endian":"big"}},
                     {"name":"scaleoffset","configuration":{"cd":[2,0,4,0,2,1,1,1,99,0,0,0,0,0,0,0,0,0,0,0]}}])",
                 kInt16, {4});
  const auto chunk = scaleoffset_chunk(3, static_cast<uint64_t>(int64_t{-5}), {0, 6, 7, 3});
  EXPECT_EQ(decode(*c, chunk), as_bytes_of(std::vector<int16_t>{-5, 1, 99, -2}));
  // The full width: the elements follow the header little endian.
  std::vector<std::byte> full = scaleoffset_chunk(16, 0, {});
  full.resize(21);
  for (int16_t v : {7, -8, 300, -300}) {
    full.push_back(std::byte(static_cast<uint16_t>(v) & 0xff));
    full.push_back(std::byte(static_cast<uint16_t>(v) >> 8));
  }
  EXPECT_EQ(decode(*c, full), as_bytes_of(std::vector<int16_t>{7, -8, 300, -300}));
  auto bad = chunk;
  bad[0] = std::byte{40};
  EXPECT_CHUTE_ERROR(decode(*c, bad), ErrorCode::kCorruptData, "40 bits per value");
  bad = chunk;
  bad.resize(10);
  EXPECT_CHUTE_ERROR(decode(*c, bad), ErrorCode::kCorruptData, "header");
  // An integer scale factor of the full width stores the chunk as is.
  auto as_is = chain(R"([{"name":"bytes","configuration":{"endian":"little"}},
                         {"name":"scaleoffset","configuration":{"cd":[2,16,4,0,2,1,0,0]}}])",
                     kInt16, {4});
  expect_filter_round_trip(*as_is);
}

TEST(Hdf5ScaleOffset, DecodesDecimalScaledFloatsInTheirOwnPrecision) {
  const float min = -1.25f;
  uint32_t min_bits = 0;
  std::memcpy(&min_bits, &min, 4);
  // float32, little endian, scale 10^2, fill value defined (0), 5 bits (31 is the fill).
  auto c = chain(R"([{"name":"bytes","configuration":{"endian":"little"}},
                     {"name":"scaleoffset","configuration":{"cd":[0,2,3,1,4,0,0,1,0,0,0,0,0,0,0,0,0,0,0,0]}}])",
                 kFloat32, {3});
  const auto out = decode(*c, scaleoffset_chunk(5, min_bits, {0, 17, 31}));
  std::vector<float> expected = {static_cast<float>(0) / std::pow(10.0f, 2.0f) + min,
                                 static_cast<float>(17) / std::pow(10.0f, 2.0f) + min, 0.0f};
  EXPECT_EQ(out, as_bytes_of(expected));
  EXPECT_CHUTE_ERROR(
      chain(R"([{"name":"bytes"},{"name":"scaleoffset","configuration":{"cd":[1,2,3,1,4,0,0,1]}}])",
            kFloat32, {3}),
      ErrorCode::kUnsupported, "E-scaling");
}

}  // namespace
}  // namespace chute
