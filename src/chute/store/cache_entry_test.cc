// The cache entry header (cache_entry.h): encode/parse round trip, and every way an entry file
// can be damaged or forged is refused by the parser and served as a miss by CachingStore.
#include "chute/store/cache_entry.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "chute/store/caching_store.h"
#include "chute/store/counting_store.h"
#include "chute/store/memory_store.h"

namespace chute::detail {
namespace {

std::string entry_file(std::string_view identity, std::string_view payload) {
  const auto bytes = std::as_bytes(std::span(payload.data(), payload.size()));
  return encode_cache_entry_prefix(identity, bytes) + std::string(payload);
}

std::optional<CacheEntryHeader> parse(const std::string& file, uint64_t file_size) {
  return parse_cache_entry_header(std::as_bytes(std::span(file.data(), file.size())), file_size);
}

// Rewrites the fixed header's lengths and recomputes its CRC, as a forger would.
std::string forged(std::string file, uint32_t identity_len, uint64_t payload_len,
                   std::string_view identity) {
  std::memcpy(file.data() + 8, &identity_len, 4);
  std::memcpy(file.data() + 16, &payload_len, 8);
  std::memset(file.data() + 24, 0, 8);
  uint32_t crc = cache_crc32(std::as_bytes(std::span(file.data(), kCacheEntryHeaderBytes)));
  crc = cache_crc32(std::as_bytes(std::span(identity.data(), identity.size())), crc);
  std::memcpy(file.data() + 24, &crc, 4);
  return file;
}

TEST(CacheEntry, RoundTrip) {
  const std::string file = entry_file("store\nc/0\n0+", "payload bytes");
  const auto header = parse(file, file.size());
  ASSERT_TRUE(header);
  EXPECT_EQ(header->identity_len, 12u);
  EXPECT_EQ(header->payload_len, 13u);
  EXPECT_EQ(header->payload_offset(), kCacheEntryHeaderBytes + 12);
  const std::string_view stored = std::string_view(file).substr(kCacheEntryHeaderBytes, 12);
  EXPECT_TRUE(cache_entry_identity_matches(*header, stored, "store\nc/0\n0+"));
  EXPECT_FALSE(cache_entry_identity_matches(*header, stored, "store\nc/1\n0+"));
}

TEST(CacheEntry, DamagedOrForgedHeadersAreRefused) {
  const std::string identity = "store\nc/0\n0+";
  const std::string good = entry_file(identity, "payload bytes");
  EXPECT_FALSE(parse(good.substr(0, 31), 31)) << "shorter than a header";
  EXPECT_FALSE(parse(good, good.size() - 1)) << "truncated payload";
  EXPECT_FALSE(parse(good, good.size() + 1)) << "file longer than its lengths";
  std::string magic = good;
  magic[6] = '1';  // version 1 (zlib CRC-32) entries are fetched again
  EXPECT_FALSE(parse(magic, magic.size())) << "wrong magic";
  EXPECT_FALSE(parse(forged(good, kMaxCacheIdentityBytes + 1, 1, identity), good.size()))
      << "identity too long";
  // 32 + 100 + (2^64 - 100) wraps around to 32: a header-only file claiming a payload of
  // almost 2^64 bytes (before, only the failing identity read stopped it).
  const std::string header_only = forged(good, 100, ~uint64_t{0} - 99, "").substr(0, 32);
  EXPECT_FALSE(parse(header_only, 32)) << "lengths wrap around";
  // A header CRC that does not match the fields is refused by the identity check.
  std::string flipped = good;
  flipped[16] ^= 1;  // payload length 13 -> 12, the file one byte shorter
  const auto header = parse(flipped, flipped.size() - 1);
  ASSERT_TRUE(header);
  EXPECT_FALSE(cache_entry_identity_matches(
      *header, std::string_view(flipped).substr(kCacheEntryHeaderBytes, 12), identity));
}

TEST(CacheEntry, ACorruptEntryOnDiskIsAMissNotAnError) {
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() / ("chute_cache_entry_" + std::to_string(getpid()));
  fs::remove_all(dir);
  auto memory = std::make_shared<MemoryStore>();
  memory->set("c/0", "the stored chunk");
  auto counting = std::make_shared<CountingStore>(memory);
  CachingStore store(counting, CacheOptions{dir.string()});
  ByteBuffer out;
  ASSERT_TRUE(store.read("c/0", out));
  const std::string path = store.entry_path("c/0", ByteRange::whole());
  std::string file;
  {
    std::ifstream in(path, std::ios::binary);
    file.assign(std::istreambuf_iterator<char>(in), {});
  }
  const auto header = parse(file, file.size());
  ASSERT_TRUE(header) << "CachingStore writes what the parser reads";
  const std::string identity = file.substr(kCacheEntryHeaderBytes, header->identity_len);
  // A forged header with a valid CRC whose payload length disagrees with the file, then a
  // payload cut short: each read is a miss served by the inner store, and the entry is
  // rewritten whole.
  const std::string damaged[] = {
      forged(file, header->identity_len, header->payload_len + (uint64_t{1} << 40), identity),
      file.substr(0, file.size() - 3),
      file.substr(0, kCacheEntryHeaderBytes + 4),
  };
  uint64_t discarded = 0;
  for (const std::string& bad : damaged) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bad;
    counting->reset();
    ByteBuffer again;
    ASSERT_TRUE(store.read("c/0", again));
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(again.data()), again.size()),
              "the stored chunk");
    EXPECT_EQ(counting->reads(), 1u);
    EXPECT_EQ(store.stats().discarded, ++discarded);
    EXPECT_EQ(store.size("c/0"), 16u);  // the entry was rewritten whole
  }
  // A directory at the entry's name is never read: every read is a miss served whole.
  fs::remove(path);
  fs::create_directory(path);
  for (int i = 0; i < 2; ++i) {
    counting->reset();
    ByteBuffer again;
    ASSERT_TRUE(store.read("c/0", again));
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(again.data()), again.size()),
              "the stored chunk");
    EXPECT_EQ(counting->reads(), 1u);
  }
  EXPECT_TRUE(fs::is_directory(path));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace chute::detail
