// sharding_indexed: shards written by zarr-python, the index and its validation, whole-shard
// decode and encode.

#include "chute/codec/sharding.h"

#include <gtest/gtest.h>

#include "chute/codec/codec_test_util.h"

namespace chute {
namespace {

using testing::chain;
using testing::from_hex;

// zarr-python 3.1: shape (4, 4) uint8, one shard of (4, 4) with inner chunks (2, 2), codecs
// [bytes], fill_value 7; data arange(16) with the block [2:4, 0:2] set to 7 (so that inner
// chunk is not written).
const char* kShardEnd =
    "00010405020306070a0b0e0f0000000000000000040000000000000004000000000000000400000000000000"
    "ffffffffffffffffffffffffffffffff08000000000000000400000000000000932c3595";
const char* kShardStart =
    "4400000000000000040000000000000048000000000000000400000000000000ffffffffffffffffffffffff"
    "ffffffff4c000000000000000400000000000000b7c0123c00010405020306070a0b0e0f";

std::string sharding_json(const char* location, const char* inner = R"([{"name":"bytes"}])") {
  return fmt::format(R"([{{"name":"sharding_indexed","configuration":{{"chunk_shape":[2,2],
      "codecs":{},"index_codecs":[{{"name":"bytes","configuration":{{"endian":"little"}}}},
      {{"name":"crc32c"}}],"index_location":"{}"}}}}])",
                     inner, location);
}

std::vector<std::byte> expected_array() {
  std::vector<std::byte> d(16);
  for (int i = 0; i < 16; ++i) d[i] = static_cast<std::byte>(i);
  for (int r = 2; r < 4; ++r) {
    for (int c = 0; c < 2; ++c) d[r * 4 + c] = std::byte{7};
  }
  return d;
}

TEST(Sharding, DecodesWholeZarrPythonShardsWithIndexAtEitherEnd) {
  const std::byte fill{7};
  for (auto [location, hex] : {std::pair{"end", kShardEnd}, std::pair{"start", kShardStart}}) {
    auto c = chain(sharding_json(location), kUInt8, {4, 4}, std::span(&fill, 1));
    ASSERT_NE(c->sharding(), nullptr);
    EXPECT_EQ(c->sharding()->index_at_end, std::string(location) == "end");
    CodecScratch scratch;
    std::vector<std::byte> out(16);
    c->decode(from_hex(hex), out, scratch);
    EXPECT_EQ(out, expected_array()) << location;
    // Encoding gives back zarr-python's bytes.
    ByteBuffer encoded;
    c->encode(out, encoded, scratch);
    EXPECT_EQ(testing::to_hex(encoded.span()), hex) << location;
  }
}

TEST(Sharding, DecodesTheIndexAndReadsInnerChunks) {
  auto c = chain(sharding_json("end"), kUInt8, {4, 4});
  const ShardingCodec& s = *c->sharding();
  EXPECT_EQ(s.inner_chunk_count(), 4);
  EXPECT_EQ(s.chunks_per_shard, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(s.index_encoded_nbytes(), 4u * 16 + 4);
  const std::vector<int64_t> coords = {1, 0};
  EXPECT_EQ(s.inner_position(coords), 2);
  const auto shard = from_hex(kShardEnd);
  CodecScratch scratch;
  std::vector<ShardIndexEntry> index;
  s.decode_index(std::span(shard).subspan(s.index_offset(shard.size())), shard.size(), index,
                 scratch);
  ASSERT_EQ(index.size(), 4u);
  EXPECT_TRUE(index[2].is_empty());
  EXPECT_EQ(index[3].offset, 8u);
  EXPECT_EQ(index[3].nbytes, 4u);
  std::vector<std::byte> inner(4);
  s.inner->decode(std::span(shard).subspan(index[3].offset, index[3].nbytes), inner, scratch);
  EXPECT_EQ(inner, from_hex("0a0b0e0f"));
}

TEST(Sharding, RejectsTruncatedAndOutOfRangeIndexes) {
  auto c = chain(sharding_json("end"), kUInt8, {4, 4});
  const ShardingCodec& s = *c->sharding();
  const auto shard = from_hex(kShardEnd);
  CodecScratch scratch;
  std::vector<ShardIndexEntry> index;
  auto index_bytes = std::span(shard).subspan(s.index_offset(shard.size()));
  EXPECT_CHUTE_ERROR(s.decode_index(index_bytes.first(60), shard.size(), index, scratch),
                     ErrorCode::kCorruptData, "shard index truncated: expected 68 bytes, got 60");
  std::vector<std::byte> out(16);
  EXPECT_CHUTE_ERROR(c->decode(std::span(shard).first(40), out, scratch), ErrorCode::kCorruptData,
                     "shard index truncated");

  // Entry 0's offset moved past the end (re-encoding the index so the crc32c still holds).
  auto rewrite = [&](uint64_t offset, uint64_t nbytes, uint64_t shard_nbytes) {
    std::vector<ShardIndexEntry> entries;
    s.decode_index(index_bytes, shard.size(), entries, scratch);
    entries[0] = {offset, nbytes};
    ByteBuffer encoded;
    s.index_codecs->encode(std::as_bytes(std::span(entries)), encoded, scratch);
    std::vector<std::byte> bad(encoded.data(), encoded.data() + encoded.size());
    s.decode_index(bad, shard_nbytes, entries, scratch);
  };
  EXPECT_CHUTE_ERROR(rewrite(100, 4, shard.size()), ErrorCode::kCorruptData,
                     "inner chunk 0 at offset 100 with 4 bytes lies past the end of the shard "
                     "(80 bytes)");
  EXPECT_CHUTE_ERROR(rewrite(10, ~uint64_t{0} - 5, shard.size()), ErrorCode::kCorruptData,
                     "past the end");
  EXPECT_CHUTE_ERROR(rewrite(14, 4, shard.size()), ErrorCode::kCorruptData, "overlaps the index");
  auto flipped = shard;
  flipped[20] ^= std::byte{1};
  EXPECT_CHUTE_ERROR(c->decode(flipped, out, scratch), ErrorCode::kCorruptData, "crc32c mismatch");
}

TEST(Sharding, RoundTripsThreeDimensionalShardsWithCompressedInnerChunks) {
  const DataType f32{DTypeKind::kFloat, 4};
  for (const char* location : {"start", "end"}) {
    auto c = chain(fmt::format(R"([{{"name":"sharding_indexed","configuration":{{
        "chunk_shape":[2,3,4],"codecs":[{{"name":"bytes"}},{{"name":"blosc",
        "configuration":{{"cname":"zstd","shuffle":"shuffle","typesize":4}}}}],
        "index_location":"{}"}}}}])",
                               location),
                   f32, {4, 6, 8});
    auto data = testing::pattern(4 * 6 * 8 * 4);
    // Make one inner chunk all zeros: it is written as empty and reads back as the fill value.
    for (int i = 0; i < 2; ++i) {
      for (int j = 0; j < 3; ++j) {
        std::memset(data.data() + ((i * 6 + j) * 8 + 4) * 4, 0, 16);
      }
    }
    CodecScratch scratch;
    ByteBuffer encoded;
    c->encode(data, encoded, scratch);
    std::vector<std::byte> out(data.size());
    c->decode(encoded.span(), out, scratch);
    EXPECT_EQ(out, data) << location;
    std::vector<ShardIndexEntry> index;
    const ShardingCodec& s = *c->sharding();
    s.decode_index(encoded.span().subspan(s.index_offset(encoded.size()), s.index_encoded_nbytes()),
                   encoded.size(), index, scratch);
    EXPECT_TRUE(index[1].is_empty());
    EXPECT_FALSE(index[0].is_empty());
  }
}

TEST(Sharding, ChainsWithCodecsAroundTheShardDecodeWholeShards) {
  auto c = chain(R"([{"name":"sharding_indexed","configuration":{"chunk_shape":[4],
      "codecs":[{"name":"bytes"}]}},{"name":"zstd"}])",
                 kUInt8, {16});
  EXPECT_EQ(c->sharding(), nullptr);
  const auto data = testing::pattern(16);
  CodecScratch scratch;
  ByteBuffer encoded;
  c->encode(data, encoded, scratch);
  std::vector<std::byte> out(16);
  c->decode(encoded.span(), out, scratch);
  EXPECT_EQ(out, data);
}

TEST(Sharding, RejectsBadConfigurations) {
  EXPECT_CHUTE_ERROR(chain(R"([{"name":"sharding_indexed","configuration":{"chunk_shape":[3],
      "codecs":[{"name":"bytes"}]}}])",
                           kUInt8, {16}),
                     ErrorCode::kInvalidMetadata, "whole chunks");
  EXPECT_CHUTE_ERROR(chain(R"([{"name":"sharding_indexed","configuration":{"chunk_shape":[4],
      "codecs":[{"name":"sharding_indexed","configuration":{"chunk_shape":[2],
      "codecs":[{"name":"bytes"}]}}]}}])",
                           kUInt8, {16}),
                     ErrorCode::kUnsupported, "nested sharding");
  EXPECT_CHUTE_ERROR(chain(R"([{"name":"sharding_indexed","configuration":{"chunk_shape":[4],
      "codecs":[{"name":"bytes"}],"index_codecs":[{"name":"bytes"},{"name":"zstd"}]}}])",
                           kUInt8, {16}),
                     ErrorCode::kUnsupported, "fixed index size");
  EXPECT_CHUTE_ERROR(chain(R"([{"name":"sharding_indexed","configuration":{"chunk_shape":[4],
      "codecs":[{"name":"bytes"}],"index_location":"middle"}}])",
                           kUInt8, {16}),
                     ErrorCode::kInvalidMetadata, "index_location");
  // Empty inner chunks hold the fill value of the layout sharding sees: a filter that changes
  // values before it would make them garbage, so it is refused.
  EXPECT_CHUTE_ERROR(chain(R"([{"name":"numcodecs.fixedscaleoffset","configuration":{
      "offset":0,"scale":10,"dtype":"<f4","astype":"<i4"}},
      {"name":"sharding_indexed","configuration":{"chunk_shape":[4],
      "codecs":[{"name":"bytes"}]}}])",
                           kFloat32, {16}),
                     ErrorCode::kUnsupported, "before 'sharding_indexed'");
}

TEST(Sharding, CorruptInnerChunkOfAWholeShardNamesIt) {
  auto c = chain(R"([{"name":"sharding_indexed","configuration":{"chunk_shape":[4],
      "codecs":[{"name":"bytes"},{"name":"crc32c"}]}},{"name":"zstd"}])",
                 kUInt8, {16});
  const auto data = testing::pattern(16);
  CodecScratch scratch;
  // The shard alone, one byte of its third inner chunk flipped, then compressed as `c` does.
  auto shard_only = chain(R"([{"name":"sharding_indexed","configuration":{"chunk_shape":[4],
      "codecs":[{"name":"bytes"},{"name":"crc32c"}]}}])",
                          kUInt8, {16});
  ByteBuffer shard;
  shard_only->encode(data, shard, scratch);
  shard.data()[2 * 8 + 1] ^= std::byte{0xff};  // inner chunks are 4 bytes + 4 of crc32c
  auto zstd = chain(R"([{"name":"bytes"},{"name":"zstd"}])", kUInt8, {int64_t(shard.size())});
  ByteBuffer compressed;
  zstd->encode(shard.span(), compressed, scratch);
  std::vector<std::byte> out(16);
  EXPECT_CHUTE_ERROR(c->decode(compressed.span(), out, scratch), ErrorCode::kCorruptData,
                     "inner chunk 2");
}

}  // namespace
}  // namespace chute
