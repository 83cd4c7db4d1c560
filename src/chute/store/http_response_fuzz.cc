// libFuzzer target: the HTTP client's response parsing (status lines, header lines,
// Content-Range, Content-Length) and the check of a response against the range asked.
// Input: a response head, one line per header; the first 9 bytes choose the range asked.
// Any input must parse or be refused (nullopt / a reason string); never crash or overflow.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "chute/store/http/http_client.h"
#include "chute/store/http/http_parse.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace chute;
  using namespace chute::http;
  if (size < 9) return 0;
  uint64_t word = 0;
  std::memcpy(&word, data + 1, 8);
  ByteRange asked;
  switch (data[0] % 4) {
    case 0: asked = ByteRange::whole(); break;
    case 1: asked = ByteRange::at(word >> 40, (word & 0xffff) + 1); break;
    case 2: asked = ByteRange::last((word & 0xffff) + 1); break;
    default: asked = ByteRange{word >> 40, std::nullopt, false}; break;
  }
  const std::string_view text(reinterpret_cast<const char*>(data + 9), size - 9);
  long status = 0;
  Headers headers;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(start, end - start);
    if (auto parsed = parse_status_line(line)) {
      if (*parsed < 100 || *parsed > 999) __builtin_trap();
      status = *parsed;
      headers.clear();
    } else if (auto header = parse_header_line(line)) {
      headers.push_back(std::move(*header));
    }
    start = end + 1;
  }
  std::optional<ContentRange> range;
  if (auto value = find_header(headers, "Content-Range")) {
    range = parse_content_range(*value);
    if (range && range->satisfied) {
      if (range->last < range->first) __builtin_trap();
      if (range->size && range->last >= *range->size) __builtin_trap();
    }
  }
  std::optional<uint64_t> length;
  if (auto value = find_header(headers, "Content-Length")) length = parse_decimal(*value);
  (void)check_range_response(asked, status, range, length);
  (void)range_header_value(asked);
  return 0;
}
