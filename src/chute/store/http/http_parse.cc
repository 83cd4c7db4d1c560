#include "chute/store/http/http_parse.h"

#include <algorithm>
#include <cmath>

namespace chute::http {
namespace {

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r' ||
                           text.back() == '\n')) {
    text.remove_suffix(1);
  }
  return text;
}

bool starts_with_nocase(std::string_view text, std::string_view prefix) {
  if (text.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    const char a = text[i] >= 'A' && text[i] <= 'Z' ? char(text[i] + 32) : text[i];
    if (a != prefix[i]) return false;
  }
  return true;
}

}  // namespace

std::optional<uint64_t> parse_decimal(std::string_view value) {
  value = trim(value);
  if (value.empty() || value.size() > 19) return std::nullopt;  // < 10^19 fits in uint64
  uint64_t result = 0;
  for (char c : value) {
    if (c < '0' || c > '9') return std::nullopt;
    result = result * 10 + uint64_t(c - '0');
  }
  return result;
}

std::optional<ContentRange> parse_content_range(std::string_view value) {
  value = trim(value);
  if (!starts_with_nocase(value, "bytes ")) return std::nullopt;
  value = trim(value.substr(6));
  const size_t slash = value.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  const std::string_view span = value.substr(0, slash);
  const std::string_view total = value.substr(slash + 1);
  ContentRange range;
  if (total != "*") {
    range.size = parse_decimal(total);
    if (!range.size) return std::nullopt;
  }
  if (span == "*") {
    if (!range.size) return std::nullopt;  // "bytes */*" says nothing
    range.satisfied = false;
    return range;
  }
  const size_t dash = span.find('-');
  if (dash == std::string_view::npos) return std::nullopt;
  const auto first = parse_decimal(span.substr(0, dash));
  const auto last = parse_decimal(span.substr(dash + 1));
  if (!first || !last || *last < *first) return std::nullopt;
  if (range.size && *last >= *range.size) return std::nullopt;
  range.first = *first;
  range.last = *last;
  return range;
}

std::optional<int> parse_status_line(std::string_view line) {
  line = trim(line);
  if (line.substr(0, 5) != "HTTP/") return std::nullopt;
  const size_t space = line.find(' ');
  if (space == std::string_view::npos || line.size() < space + 4) return std::nullopt;
  int status = 0;
  for (size_t i = space + 1; i < space + 4; ++i) {
    if (line[i] < '0' || line[i] > '9') return std::nullopt;
    status = status * 10 + (line[i] - '0');
  }
  if (line.size() > space + 4 && line[space + 4] != ' ') return std::nullopt;
  if (status < 100) return std::nullopt;
  return status;
}

std::optional<std::pair<std::string, std::string>> parse_header_line(std::string_view line) {
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos || colon == 0) return std::nullopt;
  const std::string_view name = trim(line.substr(0, colon));
  if (name.empty() || name.find(' ') != std::string_view::npos) return std::nullopt;
  return std::make_pair(std::string(name), std::string(trim(line.substr(colon + 1))));
}

std::string range_header_value(const ByteRange& range) {
  if (range.suffix) return "bytes=-" + std::to_string(range.length.value_or(0));
  if (!range.length) {
    if (range.offset == 0) return "";
    return "bytes=" + std::to_string(range.offset) + "-";
  }
  if (*range.length == 0) return "";  // callers never send an empty range
  return "bytes=" + std::to_string(range.offset) + "-" +
         std::to_string(range.offset + *range.length - 1);
}

bool is_retryable_status(long status) {
  return status == 408 || status == 429 || (status >= 500 && status <= 599);
}

double backoff_seconds(int retry, double base_s, double max_s, double uniform01) {
  const double cap = std::min(max_s, base_s * std::ldexp(1.0, std::clamp(retry, 0, 60)));
  return std::clamp(uniform01, 0.0, 1.0) * cap;
}

std::string check_range_response(const ByteRange& asked, long status,
                                 const std::optional<ContentRange>& content_range,
                                 std::optional<uint64_t> content_length) {
  const std::string header = range_header_value(asked);
  if (header.empty()) return "";  // a whole-object GET takes any 200
  const auto describe = [&] {
    std::string text = "asked " + header + ", got status " + std::to_string(status);
    if (content_range) {
      text += content_range->satisfied
                  ? " with Content-Range bytes " + std::to_string(content_range->first) + "-" +
                        std::to_string(content_range->last)
                  : " with Content-Range bytes *";
      text += "/" + (content_range->size ? std::to_string(*content_range->size) : "*");
    }
    if (content_length) text += " and Content-Length " + std::to_string(*content_length);
    return text;
  };
  if (status == 200) {
    // A server that ignores Range sends the whole value: acceptable only when that is exactly
    // what was asked (offset 0, length equal to the value, or open-ended from 0).
    if (asked.suffix || asked.offset != 0) return describe();
    if (asked.length && content_length != asked.length) return describe();
    return "";
  }
  if (status != 206) return describe();
  if (!content_range || !content_range->satisfied) return describe();
  const uint64_t got = content_range->last - content_range->first + 1;
  if (content_length && *content_length != got) return describe();
  if (asked.suffix) {
    // bytes=-n: the last min(n, size) bytes.
    if (got > *asked.length) return describe();
    if (content_range->size && content_range->last + 1 != *content_range->size) return describe();
    if (content_range->size && got != std::min(*asked.length, *content_range->size)) {
      return describe();
    }
    return "";
  }
  if (content_range->first != asked.offset) return describe();
  if (asked.length && got != *asked.length) return describe();
  if (!asked.length && content_range->size && content_range->last + 1 != *content_range->size) {
    return describe();
  }
  return "";
}

std::vector<CoalescedRead> coalesce_ranges(
    const std::vector<std::pair<uint64_t, uint64_t>>& ranges, uint64_t max_gap,
    uint64_t max_size) {
  std::vector<size_t> order(ranges.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return ranges[a].first < ranges[b].first ||
           (ranges[a].first == ranges[b].first && ranges[a].second < ranges[b].second);
  });
  std::vector<CoalescedRead> reads;
  for (size_t index : order) {
    const auto [begin, end] = ranges[index];
    if (!reads.empty()) {
      CoalescedRead& last = reads.back();
      const bool near = begin <= last.end || begin - last.end <= max_gap;
      const uint64_t merged_end = std::max(last.end, end);
      if (near && merged_end - last.begin <= max_size) {
        last.end = merged_end;
        last.members.push_back(index);
        continue;
      }
    }
    reads.push_back({begin, end, {index}});
  }
  return reads;
}

std::vector<std::pair<uint64_t, uint64_t>> split_range(uint64_t begin, uint64_t end,
                                                       uint64_t part_size) {
  std::vector<std::pair<uint64_t, uint64_t>> parts;
  if (part_size == 0 || end <= begin) return {{begin, end}};
  for (uint64_t at = begin; at < end; at += std::min(part_size, end - at)) {
    parts.emplace_back(at, std::min(end, at + part_size));
  }
  return parts;
}

}  // namespace chute::http
