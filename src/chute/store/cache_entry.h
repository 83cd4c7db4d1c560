#pragma once
// The header that CachingStore writes before each cached entry, and its parser (a pure
// function, fuzzed by fuzz/cache_entry_fuzz.cc). An entry file is:
//   32 bytes  magic "CHUTEC2\0", identity length (u32), payload CRC-32C (u32), payload length
//             (u64), header CRC-32C (u32, of these fields with itself zeroed and the identity),
//             reserved (u32); native byte order (the cache is node-local)
//   identity  the inner store's describe(), the key and the range, '\n'-separated
//   payload   the stored bytes
// A file whose header, identity, length or CRCs disagree is never served: the store treats it
// as a miss, deletes it and fetches the value again.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace chute::detail {

inline constexpr size_t kCacheEntryHeaderBytes = 32;
inline constexpr uint32_t kMaxCacheIdentityBytes = 64 * 1024;

struct CacheEntryHeader {
  uint32_t identity_len = 0;
  uint32_t payload_crc = 0;
  uint64_t payload_len = 0;
  uint32_t header_crc = 0;

  uint64_t payload_offset() const { return kCacheEntryHeaderBytes + identity_len; }
};

/// CRC-32C of `bytes` (util/crc32c.h), continuing from `crc` (0 to start).
uint32_t cache_crc32(std::span<const std::byte> bytes, uint32_t crc = 0);

/// The header and identity to write before `payload` (kCacheEntryHeaderBytes + identity bytes).
/// The identity must be at most kMaxCacheIdentityBytes long.
std::string encode_cache_entry_prefix(std::string_view identity,
                                      std::span<const std::byte> payload);

/// The fixed header at the start of an entry file of `file_size` bytes, or nullopt when
/// `fixed` is shorter than a header, the magic is wrong, the identity is longer than
/// kMaxCacheIdentityBytes, or header + identity + payload is not exactly `file_size` (no
/// overflow: a payload length near 2^64 does not wrap around to the file's size).
std::optional<CacheEntryHeader> parse_cache_entry_header(std::span<const std::byte> fixed,
                                                         uint64_t file_size);

/// Whether the identity stored after `header` is `expected` and the header CRC matches.
bool cache_entry_identity_matches(const CacheEntryHeader& header, std::string_view stored,
                                  std::string_view expected);

}  // namespace chute::detail
