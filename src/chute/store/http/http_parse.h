#pragma once
// Pure functions of the HTTP client: response header parsing, Range header text, retry policy
// and the coalescing of nearby ranges. No network, no curl: unit-tested and fuzzed directly.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chute/store/store.h"

namespace chute::http {

/// "Content-Range: bytes 0-99/1234" -> {0, 99, 1234}; "bytes */1234" -> unsatisfied, size
/// 1234; "bytes 0-99/*" -> size unknown. nullopt for anything malformed (last < first, last
/// >= size, garbage, overflow).
struct ContentRange {
  bool satisfied = true;  // false for "bytes */T"
  uint64_t first = 0;
  uint64_t last = 0;  // inclusive
  std::optional<uint64_t> size;
};
std::optional<ContentRange> parse_content_range(std::string_view value);

/// "HTTP/1.1 206 Partial Content" -> 206; "HTTP/2 200" -> 200; nullopt when malformed.
std::optional<int> parse_status_line(std::string_view line);

/// A decimal header value (Content-Length): digits only, surrounding blanks allowed.
std::optional<uint64_t> parse_decimal(std::string_view value);

/// "Name: value\r\n" -> {"Name", "value"}; nullopt for a line without ':' (status, blank).
std::optional<std::pair<std::string, std::string>> parse_header_line(std::string_view line);

/// The Range header's value for `range`, or "" for a whole-object read.
std::string range_header_value(const ByteRange& range);

/// The default retry policy: 408, 429 and 5xx.
bool is_retryable_status(long status);

/// Full-jitter exponential backoff: uniform(0, min(max_s, base_s * 2^retry)) for
/// `uniform01` in [0, 1). retry counts from 0 (the wait before the second attempt).
double backoff_seconds(int retry, double base_s, double max_s, double uniform01);

/// What a response must look like for a ranged GET to be accepted. Returns "" when it fits,
/// or the reason it does not ("asked bytes 0-99, got Content-Range bytes 0-49/50").
/// `expected` is the number of bytes a known-length request needs (nullopt for open-ended /
/// whole / suffix longer than the object).
std::string check_range_response(const ByteRange& asked, long status,
                                 const std::optional<ContentRange>& content_range,
                                 std::optional<uint64_t> content_length);

// ---- coalescing -------------------------------------------------------------------------

/// One part of a read plan for one object: bytes [begin, end) fetched with one GET, and the
/// requests (indices into the caller's list) whose bytes lie inside it.
struct CoalescedRead {
  uint64_t begin = 0;
  uint64_t end = 0;
  std::vector<size_t> members;
};

/// Merges the known-offset ranges `ranges` (begin, end) of one object: sorted by begin,
/// neighbours whose gap is <= max_gap join while the merged read stays <= max_size
/// (a single range longer than max_size stays alone). Overlapping ranges always merge when
/// the size allows. Returns reads in ascending order; each input index appears exactly once.
std::vector<CoalescedRead> coalesce_ranges(
    const std::vector<std::pair<uint64_t, uint64_t>>& ranges, uint64_t max_gap,
    uint64_t max_size);

/// Splits [begin, end) into parts of at most part_size bytes (at least one part).
std::vector<std::pair<uint64_t, uint64_t>> split_range(uint64_t begin, uint64_t end,
                                                       uint64_t part_size);

}  // namespace chute::http
