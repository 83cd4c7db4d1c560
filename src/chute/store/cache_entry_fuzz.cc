// libFuzzer target: arbitrary bytes as a node-local cache entry file (cache_entry.h). The
// parser either refuses it or returns a header whose lengths add up to the file's size; an
// entry whose identity and CRCs check out re-encodes to the same bytes; and any identity and
// payload taken from the input encode to an entry that parses back to themselves.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

#include "chute/store/cache_entry.h"

namespace {

using chute::detail::kCacheEntryHeaderBytes;

void check_parse(std::span<const std::byte> file) {
  const auto header = chute::detail::parse_cache_entry_header(file, file.size());
  if (!header) return;
  if (header->identity_len > chute::detail::kMaxCacheIdentityBytes) __builtin_trap();
  if (header->payload_offset() + header->payload_len != file.size()) __builtin_trap();
  const std::string_view stored(reinterpret_cast<const char*>(file.data()) + kCacheEntryHeaderBytes,
                                header->identity_len);
  if (!chute::detail::cache_entry_identity_matches(*header, stored, stored)) return;
  const auto payload = file.subspan(header->payload_offset());
  if (chute::detail::cache_crc32(payload) != header->payload_crc) return;
  // A verified entry: encoding its identity and payload gives its bytes back (the reserved
  // field, bytes 28..31, is not covered by the CRC and not compared).
  const std::string prefix = chute::detail::encode_cache_entry_prefix(stored, payload);
  if (prefix.size() != header->payload_offset()) __builtin_trap();
  if (std::memcmp(prefix.data(), file.data(), 28) != 0 ||
      std::memcmp(prefix.data() + 32, file.data() + 32, prefix.size() - 32) != 0) {
    __builtin_trap();
  }
}

void check_round_trip(std::span<const std::byte> input) {
  // The first byte splits the rest into identity and payload.
  if (input.empty()) return;
  const size_t rest = input.size() - 1;
  const size_t cut = rest * std::to_integer<size_t>(input[0]) / 255;
  const std::string_view identity(reinterpret_cast<const char*>(input.data()) + 1, cut);
  if (identity.size() > chute::detail::kMaxCacheIdentityBytes) return;
  const auto payload = input.subspan(1 + cut);
  std::string file = chute::detail::encode_cache_entry_prefix(identity, payload);
  file.append(reinterpret_cast<const char*>(payload.data()), payload.size());
  const auto bytes = std::as_bytes(std::span(file.data(), file.size()));
  const auto header = chute::detail::parse_cache_entry_header(bytes, bytes.size());
  if (!header || header->payload_len != payload.size() ||
      !chute::detail::cache_entry_identity_matches(
          *header, std::string_view(file).substr(kCacheEntryHeaderBytes, identity.size()),
          identity) ||
      header->payload_crc != chute::detail::cache_crc32(payload)) {
    __builtin_trap();
  }
  // One byte short is never a valid entry.
  if (chute::detail::parse_cache_entry_header(bytes, bytes.size() - 1)) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto input = std::as_bytes(std::span(data, size));
  check_parse(input);
  check_round_trip(input);
  return 0;
}
