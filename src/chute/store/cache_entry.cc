#include "chute/store/cache_entry.h"

#include <cstring>

#include "chute/util/crc32c.h"

namespace chute::detail {
namespace {

// Version 2: CRC-32C checksums (version 1 used zlib's CRC-32; its entries fail the magic check
// and are fetched again).
constexpr char kMagic[8] = {'C', 'H', 'U', 'T', 'E', 'C', '2', '\0'};

// The on-disk layout of the fixed part.
struct RawHeader {
  char magic[8];
  uint32_t identity_len;
  uint32_t payload_crc;
  uint64_t payload_len;
  uint32_t header_crc;  // of the fields above (this one zeroed) and the identity
  uint32_t reserved;
};
static_assert(sizeof(RawHeader) == kCacheEntryHeaderBytes);

uint32_t header_crc(const CacheEntryHeader& header, std::string_view identity) {
  RawHeader raw{};
  std::memcpy(raw.magic, kMagic, sizeof kMagic);
  raw.identity_len = header.identity_len;
  raw.payload_crc = header.payload_crc;
  raw.payload_len = header.payload_len;
  const uint32_t crc = cache_crc32(std::as_bytes(std::span(&raw, 1)));
  return cache_crc32(std::as_bytes(std::span(identity.data(), identity.size())), crc);
}

}  // namespace

uint32_t cache_crc32(std::span<const std::byte> bytes, uint32_t crc) {
  return crc32c_extend(crc, bytes);
}

std::string encode_cache_entry_prefix(std::string_view identity,
                                      std::span<const std::byte> payload) {
  CacheEntryHeader header;
  header.identity_len = static_cast<uint32_t>(identity.size());
  header.payload_crc = cache_crc32(payload);
  header.payload_len = payload.size();
  RawHeader raw{};
  std::memcpy(raw.magic, kMagic, sizeof kMagic);
  raw.identity_len = header.identity_len;
  raw.payload_crc = header.payload_crc;
  raw.payload_len = header.payload_len;
  raw.header_crc = header_crc(header, identity);
  std::string prefix(reinterpret_cast<const char*>(&raw), sizeof raw);
  prefix += identity;
  return prefix;
}

std::optional<CacheEntryHeader> parse_cache_entry_header(std::span<const std::byte> fixed,
                                                         uint64_t file_size) {
  if (fixed.size() < kCacheEntryHeaderBytes || file_size < kCacheEntryHeaderBytes) {
    return std::nullopt;
  }
  RawHeader raw;
  std::memcpy(&raw, fixed.data(), sizeof raw);
  if (std::memcmp(raw.magic, kMagic, sizeof kMagic) != 0 ||
      raw.identity_len > kMaxCacheIdentityBytes) {
    return std::nullopt;
  }
  const uint64_t after_identity = kCacheEntryHeaderBytes + raw.identity_len;  // no overflow
  if (file_size < after_identity || raw.payload_len != file_size - after_identity) {
    return std::nullopt;
  }
  return CacheEntryHeader{raw.identity_len, raw.payload_crc, raw.payload_len, raw.header_crc};
}

bool cache_entry_identity_matches(const CacheEntryHeader& header, std::string_view stored,
                                  std::string_view expected) {
  return stored.size() == header.identity_len && stored == expected &&
         header_crc(header, stored) == header.header_crc;
}

}  // namespace chute::detail
