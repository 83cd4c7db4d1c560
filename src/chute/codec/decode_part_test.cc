// Decoding part of a chunk (CodecChain::decode_part): blosc decodes only the blocks that hold
// the range; chains that cannot decode part of a chunk decode all of it. chute's own decoder of
// c-blosc 1.x blocks (LZ4 streams, byte shuffle) and its register byte unshuffle: every layout
// c-blosc writes (split or not, shuffled or not, stored splits, a leftover block, other element
// sizes) decodes to the bytes that were encoded, whole and in parts; the layouts it leaves to
// c-blosc (other compressors, bitshuffle) still do.

#include <blosc.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "chute/codec/blosc_blocks.h"
#include "chute/codec/codec.h"
#include "chute/codec/codec_test_util.h"

namespace chute {
namespace {

using testing::chain;
using testing::encode;
using testing::pattern;

constexpr std::byte kUntouched{0xAB};

std::string blosc_chain(const char* shuffle, int typesize, int blocksize) {
  return fmt::format(
      R"([{{"name":"bytes","configuration":{{"endian":"little"}}}},
          {{"name":"blosc","configuration":{{"cname":"lz4","clevel":5,"shuffle":"{}",
            "typesize":{},"blocksize":{}}}}}])",
      shuffle, typesize, blocksize);
}

struct Part {
  size_t begin, end;
};

TEST(DecodePart, BloscDecodesOnlyTheBlocksThatHoldTheRange) {
  for (const char* shuffle : {"noshuffle", "shuffle", "bitshuffle"}) {
    for (const auto& [dtype, elements] :
         {std::pair{kFloat32, int64_t{4096}}, {kFloat64, int64_t{2048}}}) {
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
  auto c = chain(blosc_chain("shuffle", 4, 256), kFloat32, {4096});
  const auto data = pattern(16384, 3);
  const auto encoded = encode(*c, data);
  for (const Part part : {Part{0, 16384}, Part{10, 16380}}) {
    std::vector<std::byte> out(data.size(), kUntouched);
    CodecScratch scratch;
    EXPECT_FALSE(c->decode_part(encoded, part.begin, part.end, out, scratch));
    EXPECT_EQ(out, data);
  }
}

// What the crop roofline reports as decoded bytes: a part decode produces whole blocks.
TEST(DecodePart, DecodedBytesCountWholeBlocks) {
  auto c = chain(blosc_chain("shuffle", 4, 256), kFloat32, {4096});
  const auto encoded = encode(*c, pattern(16384, 3));
  const size_t block = c->part_alignment(encoded);
  ASSERT_GT(block, 0u);
  ASSERT_EQ(16384 % block, 0u);
  EXPECT_EQ(c->part_decoded_nbytes(encoded, 1, 2), block);
  EXPECT_EQ(c->part_decoded_nbytes(encoded, block - 1, block + 1), 2 * block);
  EXPECT_EQ(c->part_decoded_nbytes(encoded, 16383, 16384), block);
  EXPECT_EQ(c->part_decoded_nbytes(encoded, 0, 16384), 16384u);
  // No blocks (zstd): the range itself.
  auto z = chain(R"([{"name":"bytes","configuration":{"endian":"little"}},{"name":"zstd"}])",
                 kFloat32, {4096});
  EXPECT_EQ(z->part_decoded_nbytes(encode(*z, pattern(16384, 3)), 5, 9), 4u);
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
    auto c = chain(json, kFloat32, {64, 64});
    const auto data = pattern(16384, 5);
    const auto encoded = encode(*c, data);
    std::vector<std::byte> out(data.size(), kUntouched);
    CodecScratch scratch;
    EXPECT_FALSE(c->decode_part(encoded, 100, 200, out, scratch)) << json;
    EXPECT_EQ(out, data) << json;
  }
}

/// Compressible floats: blosc stores blocks, not a plain copy.
std::vector<std::byte> ramp_bytes(size_t count) {
  std::vector<float> ramp(count);
  for (size_t i = 0; i < ramp.size(); ++i) ramp[i] = static_cast<float>(i / 64 + i % 7);
  return testing::as_bytes_of(ramp);
}

TEST(DecodePart, BadInputIsAnErrorNotGarbage) {
  auto c = chain(blosc_chain("shuffle", 4, 256), kFloat32, {4096});
  const auto data = ramp_bytes(4096);
  auto encoded = encode(*c, data);
  std::vector<std::byte> out(data.size());
  CodecScratch scratch;
  EXPECT_CHUTE_ERROR(
      c->decode_part(std::span(encoded).first(encoded.size() - 3), 0, 8, out, scratch),
      ErrorCode::kCorruptData, "compressed bytes");
  auto small = chain(blosc_chain("shuffle", 4, 256), kFloat32, {1024});
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

/// A stored stream read through read_part: the spans it asked for are recorded.
struct RecordingReader {
  std::span<const std::byte> stored;
  std::vector<std::pair<uint64_t, size_t>> reads;
  StreamReader reader() {
    return [this](uint64_t offset, std::span<std::byte> into) {
      ASSERT_LE(offset + into.size(), stored.size());
      std::copy_n(stored.begin() + static_cast<std::ptrdiff_t>(offset), into.size(), into.begin());
      reads.emplace_back(offset, into.size());
    };
  }
  size_t bytes() const {
    size_t n = 0;
    for (const auto& read : reads) n += read.second;
    return n;
  }
};

/// c.read_part of decoded bytes `range` from the stored value `stored`: what it returned, what
/// it read, and an output that held kUntouched bytes before. Its stream buffer holds stale
/// bytes, which must never be decoded.
struct PartRead {
  bool part = false;
  RecordingReader recording;
  std::vector<std::byte> out;
};

PartRead read_part_of(const CodecChain& c, std::span<const std::byte> stored, Part range) {
  PartRead r{false, {stored, {}}, std::vector<std::byte>(c.decoded_nbytes(), kUntouched)};
  ByteBuffer stream;
  stream.resize(stored.size());
  std::fill_n(stream.data(), stream.size(), std::byte{0xFF});
  CodecScratch scratch;
  r.part = c.read_part(r.recording.reader(), stored.size(), range.begin, range.end, stream, r.out,
                       scratch);
  return r;
}

bool same_range(const std::vector<std::byte>& a, const std::vector<std::byte>& b, Part range) {
  return std::equal(a.begin() + range.begin, a.begin() + range.end, b.begin() + range.begin);
}

uint32_t load_le32(const std::byte* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = v << 8 | std::to_integer<uint32_t>(p[i]);
  return v;
}

void store_le32(std::byte* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<std::byte>(v >> (8 * i));
}

/// The same stream with its blocks stored in another order (`order[i]`: the block stored i-th),
/// as a threaded compressor may leave them (each block's bytes move; the table follows them).
std::vector<std::byte> reorder_blocks(const std::vector<std::byte>& stream,
                                      const std::vector<size_t>& order) {
  const size_t blocks = order.size();
  const size_t table_end = 16 + 4 * blocks;
  std::vector<std::byte> out(stream.begin(), stream.begin() + table_end);
  for (size_t b : order) {
    const size_t from = load_le32(stream.data() + 16 + 4 * b);
    const size_t to = b + 1 < blocks ? load_le32(stream.data() + 16 + 4 * (b + 1)) : stream.size();
    store_le32(out.data() + 16 + 4 * b, static_cast<uint32_t>(out.size()));
    out.insert(out.end(), stream.begin() + from, stream.begin() + to);
  }
  return out;
}

TEST(ReadPart, BloscReadsItsHeaderBlockTableAndTheBlocksOfTheRange) {
  auto c = chain(blosc_chain("shuffle", 4, 256), kFloat32, {16384});
  const auto data = ramp_bytes(16384);
  const auto in_order = encode(*c, data);
  std::vector<size_t> backwards(256), scattered;
  for (size_t b = 0; b < 256; ++b) backwards[b] = 255 - b;
  for (size_t b = 0; b < 64; ++b) scattered.insert(scattered.end(), {b, b + 64, b + 128, b + 192});
  const auto reversed = reorder_blocks(in_order, backwards);
  const auto spread = reorder_blocks(in_order, scattered);  // a range's blocks 4 apart
  for (const auto* stored : {&in_order, &reversed, &spread}) {
    for (const Part part : {Part{0, 4}, Part{1021, 1030}, Part{5000, 6000}, Part{65530, 65536}}) {
      const PartRead r = read_part_of(*c, *stored, part);
      ASSERT_TRUE(r.part);
      EXPECT_TRUE(same_range(r.out, data, part))
          << (stored == &reversed ? "reversed " : "") << part.begin;
      // Header and table (1 KB at once, then the rest of the table), and the few blocks of the
      // 256 that hold the range: side by side in either order, one read; spread, one each.
      const size_t blocks = (part.end - 1) / 256 - part.begin / 256 + 1;
      EXPECT_LT(r.recording.bytes(), 16 + 4 * 256 + stored->size() / 8) << part.begin;
      EXPECT_EQ(r.recording.reads.size(), stored == &spread ? 2 + blocks : 3u) << part.begin;
    }
  }
}

TEST(ReadPart, StoredCopiesAreReadStraightIntoPlace) {
  auto c = chain(R"([{"name":"bytes","configuration":{"endian":"little"}},
                     {"name":"blosc","configuration":{"cname":"lz4","clevel":0,"typesize":4}}])",
                 kFloat32, {4096});
  const auto data = ramp_bytes(4096);
  const PartRead r = read_part_of(*c, encode(*c, data), {400, 800});
  ASSERT_TRUE(r.part);
  EXPECT_TRUE(same_range(r.out, data, {400, 800}));
  EXPECT_EQ(r.recording.bytes(), 1024u + 400u);  // a 1 KB prefix (the header), then the range
  EXPECT_EQ(r.recording.reads.size(), 2u);
}

TEST(ReadPart, UncompressedChunksReadJustTheRange) {
  auto c = chain(R"([{"name":"bytes","configuration":{"endian":"little"}}])", kFloat32, {4096});
  const auto stored = ramp_bytes(4096);
  EXPECT_TRUE(c->decodes_parts());
  EXPECT_EQ(c->part_alignment(stored), 0u);  // nothing to decode side by side
  const PartRead r = read_part_of(*c, stored, {1000, 1200});
  ASSERT_TRUE(r.part);
  EXPECT_TRUE(same_range(r.out, stored, {1000, 1200}));
  EXPECT_EQ(r.out[999], kUntouched);
  EXPECT_EQ(r.recording.bytes(), 200u);
  // A stored chunk of the wrong size is read whole and decoded whole, which reports it.
  EXPECT_CHUTE_ERROR(read_part_of(*c, std::span(stored).first(16380), {0, 8}),
                     ErrorCode::kCorruptData, "expected 16384 bytes, got 16380");
  std::vector<std::byte> out(stored.size());
  CodecScratch scratch;
  EXPECT_TRUE(c->decode_part(stored, 8, 16, out, scratch));
  EXPECT_CHUTE_ERROR(c->decode_part(std::span(stored).first(100), 8, 16, out, scratch),
                     ErrorCode::kCorruptData, "expected 16384 bytes, got 100");
  // Big-endian bytes must be swapped: decoded whole.
  auto big = chain(R"([{"name":"bytes","configuration":{"endian":"big"}}])", kFloat32, {4096});
  EXPECT_FALSE(big->decodes_parts());
}

TEST(ReadPart, WhatCannotBeSplitIsReadAndDecodedWhole) {
  auto c = chain(blosc_chain("shuffle", 4, 256), kFloat32, {4096});
  const auto data = ramp_bytes(4096);
  const auto stored = encode(*c, data);
  // A range over every block, and a chain without blosc: one whole read, one whole decode.
  const PartRead every_block = read_part_of(*c, stored, {0, 16384});
  EXPECT_FALSE(every_block.part);
  EXPECT_EQ(every_block.out, data);
  auto zstd = chain(R"([{"name":"bytes"},{"name":"zstd"}])", kFloat32, {4096});
  EXPECT_FALSE(zstd->decodes_parts());
  const PartRead whole = read_part_of(*zstd, encode(*zstd, data), {0, 8});
  EXPECT_FALSE(whole.part);
  EXPECT_EQ(whole.out, data);
  EXPECT_EQ(whole.recording.reads.size(), 1u);
  // A stored value shorter than its header says: read whole, refused by the whole decode.
  EXPECT_CHUTE_ERROR(read_part_of(*c, std::span(stored).first(stored.size() - 5), {0, 8}),
                     ErrorCode::kCorruptData, "compressed bytes");
  // A block start past the end of the stream: refused, never read out of bounds.
  auto bad = stored;
  store_le32(bad.data() + 16 + 4 * 3, static_cast<uint32_t>(bad.size() + 100));
  EXPECT_CHUTE_ERROR(read_part_of(*c, bad, {3 * 256, 3 * 256 + 8}), ErrorCode::kCorruptData,
                     "block 3 starts at byte");
}

/// Compressible bytes with incompressible stretches, so that some splits are stored as is.
std::vector<std::byte> blosc_mixed_bytes(size_t n, uint32_t seed) {
  std::vector<std::byte> out = testing::pattern(n, seed);
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = n / 3; i < n / 3 + std::min<size_t>(n / 4, 20000); ++i) {
    x = x * 1664525u + 1013904223u;
    out[i] = static_cast<std::byte>(x >> 24);
  }
  return out;
}

TEST(BloscDecode, EveryLayoutDecodesToItsBytesWholeAndInParts) {
  int split_streams = 0;
  int unsplit_streams = 0;
  for (const int splitmode : {BLOSC_FORWARD_COMPAT_SPLIT, BLOSC_NEVER_SPLIT}) {
    blosc_set_splitmode(splitmode);
    for (const char* cname : {"lz4", "lz4hc", "blosclz", "zstd"}) {
      for (const char* shuffle : {"noshuffle", "shuffle", "bitshuffle"}) {
        for (const int typesize : {1, 2, 3, 4, 8, 17}) {
          for (const int blocksize : {0, 2048, 16384}) {
            const std::string where = fmt::format("{} {} typesize {} blocksize {} split mode {}",
                                                  cname, shuffle, typesize, blocksize, splitmode);
            // Not a whole number of blocks nor of elements: a leftover block and bytes.
            const auto elements = int64_t{3 * 16384 + 2 * 17 * 3 + 1};
            auto c = chain(fmt::format(R"([{{"name":"bytes"}},
                {{"name":"blosc","configuration":{{"cname":"{}","clevel":5,"shuffle":"{}",
                  "typesize":{},"blocksize":{}}}}}])",
                                       cname, shuffle, typesize, blocksize),
                           kUInt8, {elements});
            const auto data = blosc_mixed_bytes(static_cast<size_t>(elements), 11);
            const auto encoded = encode(*c, data);
            const auto flags = static_cast<uint8_t>(encoded[2]);
            if (std::string_view(cname).starts_with("lz4") && (flags & BLOSC_MEMCPYED) == 0) {
              ((flags & 0x10) != 0 ? unsplit_streams : split_streams) += 1;
            }
            CodecScratch scratch;
            std::vector<std::byte> out(data.size(), std::byte{0xAB});
            c->decode(encoded, out, scratch);
            EXPECT_EQ(out, data) << where;
            // chute's own block decoder takes exactly the LZ4 streams that are not stored as is
            // nor bitshuffled (c-blosc decodes the others), and decodes every block.
            const bool own = std::string_view(cname).starts_with("lz4") &&
                             (flags & (BLOSC_MEMCPYED | BLOSC_DOBITSHUFFLE)) == 0;
            size_t stream_blocksize = 0;
            std::memcpy(&stream_blocksize, encoded.data() + 8, 4);
            ByteBuffer tmp;
            std::fill(out.begin(), out.end(), std::byte{0xAB});
            EXPECT_EQ(
                decode_blosc_blocks(encoded, 0, (data.size() - 1) / stream_blocksize, out, tmp),
                own)
                << where;
            if (own) {
              EXPECT_EQ(out, data) << where;
            }
            const size_t n = data.size();
            for (const auto& [begin, end] : {std::pair<size_t, size_t>{0, 1},
                                             {5000, 9000},
                                             {16383, 16385},
                                             {n / 2, n / 2 + 3 * 2048 + 5},
                                             {n - 40, n},
                                             {n - 1, n}}) {
              std::fill(out.begin(), out.end(), std::byte{0xAB});
              c->decode_part(encoded, begin, end, out, scratch);
              EXPECT_TRUE(std::equal(out.begin() + static_cast<std::ptrdiff_t>(begin),
                                     out.begin() + static_cast<std::ptrdiff_t>(end),
                                     data.begin() + static_cast<std::ptrdiff_t>(begin)))
                  << where << " [" << begin << ", " << end << ")";
            }
          }
        }
      }
    }
  }
  blosc_set_splitmode(BLOSC_FORWARD_COMPAT_SPLIT);
  // Both kinds of LZ4 block were decoded above.
  EXPECT_GT(split_streams, 0);
  EXPECT_GT(unsplit_streams, 0);
}

TEST(BloscDecode, ACorruptLz4BlockIsAnError) {
  // A 64³ float32 chunk as make-dataset volume writes it: c-blosc's blocks of 512 KiB.
  auto c = chain(R"([{"name":"bytes"},
      {"name":"blosc","configuration":{"cname":"lz4","shuffle":"shuffle","typesize":4}}])",
                 kFloat32, {64, 64, 64});
  std::vector<float> ramp(64 * 64 * 64);
  for (size_t i = 0; i < ramp.size(); ++i) ramp[i] = static_cast<float>(i / 64 + i % 7);
  const auto data = testing::as_bytes_of(ramp);
  const auto encoded = encode(*c, data);
  size_t blocksize = 0;
  std::memcpy(&blocksize, encoded.data() + 8, 4);
  ASSERT_LT(blocksize, data.size() / 2 + 1);  // at least two blocks
  std::vector<std::byte> out(data.size());
  CodecScratch scratch;
  ByteBuffer tmp;
  ASSERT_TRUE(decode_blosc_blocks(encoded, 1, 1, out, tmp));
  // Block 1's first split claims more compressed bytes than the stream holds.
  auto bad = encoded;
  size_t start = 0;
  std::memcpy(&start, encoded.data() + 16 + 4, 4);
  for (size_t i = start; i < start + 4; ++i) bad[i] = std::byte{0x7F};
  EXPECT_CHUTE_ERROR(c->decode(bad, out, scratch), ErrorCode::kCorruptData, "block 1");
  EXPECT_CHUTE_ERROR(c->decode_part(bad, blocksize + 8, blocksize + 16, out, scratch),
                     ErrorCode::kCorruptData, "block 1");
  // Its LZ4 bytes garbled: the LZ4 decoder's bounds catch it.
  bad = encoded;
  for (size_t i = start + 4; i < start + 40; ++i) bad[i] = std::byte{0xFF};
  EXPECT_CHUTE_ERROR(c->decode(bad, out, scratch), ErrorCode::kCorruptData, "block 1");
  // A header whose block is larger than the data (found by codec_chain_fuzz: it sized the
  // scratch to 4 GiB) is not decoded here; c-blosc's own checks judge it.
  bad = encoded;
  for (size_t i = 8; i < 12; ++i) bad[i] = std::byte{0xFF};
  EXPECT_FALSE(decode_blosc_blocks(bad, 0, 0, out, tmp));
  EXPECT_LT(tmp.capacity(), size_t{1} << 24);
}

TEST(ByteUnshuffle, InvertsTheShuffleForEveryElementSizeAndTail) {
  for (const size_t element_size : {1, 2, 3, 4, 5, 8, 16}) {
    for (const size_t n : {0, 1, 15, 16, 17, 63, 64, 65, 1000, 4099}) {
      const auto data = testing::pattern(n * element_size + element_size / 2, 3);
      std::vector<std::byte> shuffled(data.size());
      byte_shuffle(data, shuffled, element_size);
      // The reference: element i's byte j is stream j's byte i.
      const size_t count = data.size() / element_size;
      for (size_t i = 0; i < count; ++i) {
        for (size_t j = 0; j < element_size; ++j) {
          ASSERT_EQ(shuffled[j * count + i], data[i * element_size + j]);
        }
      }
      std::vector<std::byte> back(data.size(), std::byte{0xAB});
      byte_unshuffle(shuffled, back, element_size);
      EXPECT_EQ(back, data) << element_size << " " << n;
    }
  }
}

}  // namespace
}  // namespace chute
