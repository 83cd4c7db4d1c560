// Decoding part of a chunk (CodecChain::decode_part): blosc decodes only the blocks that hold
// the range; chains that cannot decode part of a chunk decode all of it.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "chute/codec/codec_test_util.h"

namespace chute {
namespace {

using testing::chain;
using testing::pattern;

const DataType kF32{DTypeKind::kFloat, 4};
const DataType kF64{DTypeKind::kFloat, 8};
constexpr std::byte kUntouched{0xAB};

std::string blosc_chain(const char* shuffle, int typesize, int blocksize) {
  return fmt::format(
      R"([{{"name":"bytes","configuration":{{"endian":"little"}}}},
          {{"name":"blosc","configuration":{{"cname":"lz4","clevel":5,"shuffle":"{}",
            "typesize":{},"blocksize":{}}}}}])",
      shuffle, typesize, blocksize);
}

std::vector<std::byte> encode(const CodecChain& c, std::span<const std::byte> data) {
  CodecScratch scratch;
  ByteBuffer out;
  c.encode(data, out, scratch);
  return {out.data(), out.data() + out.size()};
}

struct Part {
  size_t begin, end;
};

TEST(DecodePart, BloscDecodesOnlyTheBlocksThatHoldTheRange) {
  for (const char* shuffle : {"noshuffle", "shuffle", "bitshuffle"}) {
    for (const auto& [dtype, elements] : {std::pair{kF32, int64_t{4096}}, {kF64, int64_t{2048}}}) {
      auto c = chain(blosc_chain(shuffle, dtype.size, 256), dtype, {elements});
      const auto data = pattern(static_cast<size_t>(c->decoded_nbytes()), 7);
      const auto encoded = encode(*c, data);
      // 16384 bytes in blocks of 256: ranges inside one block, across blocks, unaligned to
      // elements, and at either end.
      for (const Part part : {Part{0, 4}, Part{100, 700}, Part{1021, 1030}, Part{8000, 16384},
                              Part{16383, 16384}, Part{256, 512}}) {
        std::vector<std::byte> out(data.size(), kUntouched);
        CodecScratch scratch;
        EXPECT_TRUE(c->decode_part(encoded, part.begin, part.end, out, scratch))
            << shuffle << " [" << part.begin << ", " << part.end << ")";
        EXPECT_TRUE(
            std::equal(out.begin() + part.begin, out.begin() + part.end, data.begin() + part.begin))
            << shuffle << " [" << part.begin << ", " << part.end << ")";
        // Only part was decoded: a block far from the range is left as it was.
        const size_t far = part.begin >= 4096 ? 0 : 16383;
        EXPECT_EQ(out[far], kUntouched) << shuffle << " [" << part.begin << ", " << part.end << ")";
      }
    }
  }
}

TEST(DecodePart, RangesOverEveryBlockDecodeTheWholeChunk) {
  auto c = chain(blosc_chain("shuffle", 4, 256), kF32, {4096});
  const auto data = pattern(16384, 3);
  const auto encoded = encode(*c, data);
  for (const Part part : {Part{0, 16384}, Part{10, 16380}}) {
    std::vector<std::byte> out(data.size(), kUntouched);
    CodecScratch scratch;
    EXPECT_FALSE(c->decode_part(encoded, part.begin, part.end, out, scratch));
    EXPECT_EQ(out, data);
  }
}

TEST(DecodePart, OtherChainsDecodeTheWholeChunk) {
  const char* chains[] = {
      R"([{"name":"bytes","configuration":{"endian":"little"}},{"name":"zstd"}])",
      R"([{"name":"bytes","configuration":{"endian":"big"}},
          {"name":"blosc","configuration":{"cname":"lz4","typesize":4,"blocksize":256}}])",
      R"([{"name":"transpose","configuration":{"order":[1,0]}},
          {"name":"bytes","configuration":{"endian":"little"}},
          {"name":"blosc","configuration":{"cname":"lz4","typesize":4,"blocksize":256}}])",
      R"([{"name":"bytes","configuration":{"endian":"little"}},
          {"name":"blosc","configuration":{"cname":"lz4","typesize":4,"blocksize":256}},
          {"name":"crc32c"}])",
  };
  for (const char* json : chains) {
    auto c = chain(json, kF32, {64, 64});
    const auto data = pattern(16384, 5);
    const auto encoded = encode(*c, data);
    std::vector<std::byte> out(data.size(), kUntouched);
    CodecScratch scratch;
    EXPECT_FALSE(c->decode_part(encoded, 100, 200, out, scratch)) << json;
    EXPECT_EQ(out, data) << json;
  }
}

TEST(DecodePart, BadInputIsAnErrorNotGarbage) {
  auto c = chain(blosc_chain("shuffle", 4, 256), kF32, {4096});
  std::vector<float> ramp(4096);
  for (size_t i = 0; i < ramp.size(); ++i) ramp[i] = static_cast<float>(i / 64 + i % 7);
  const auto data = testing::as_bytes_of(ramp);  // compressible: blocks, not a stored copy
  auto encoded = encode(*c, data);
  std::vector<std::byte> out(data.size());
  CodecScratch scratch;
  EXPECT_CHUTE_ERROR(
      c->decode_part(std::span(encoded).first(encoded.size() - 3), 0, 8, out, scratch),
      ErrorCode::kCorruptData, "compressed bytes");
  auto small = chain(blosc_chain("shuffle", 4, 256), kF32, {1024});
  const auto other = encode(*small, pattern(4096));
  EXPECT_CHUTE_ERROR(c->decode_part(other, 0, 8, out, scratch), ErrorCode::kCorruptData,
                     "expected 16384 decoded bytes, got 4096");
  EXPECT_CHUTE_ERROR(c->decode_part(encoded, 8, 20000, out, scratch), ErrorCode::kInternal,
                     "part [8, 20000)");
  // A block start pointing past the end of the stream (the block table follows the 16-byte
  // header): refused, never read out of bounds.
  auto bad = encoded;
  for (size_t i = 16; i < 16 + 4 * 8; ++i) bad[i] = std::byte{0x7F};
  EXPECT_CHUTE_ERROR(c->decode_part(bad, 0, 8, out, scratch), ErrorCode::kCorruptData, "blosc");
}

}  // namespace
}  // namespace chute
