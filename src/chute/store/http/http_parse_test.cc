// The HTTP client's pure parts: header parsing, Range text, response checks, retry backoff,
// coalescing and splitting of ranges; plus URL schemes of open_store. No network.
#include <gtest/gtest.h>

#include <set>

#include "chute/store/http/http_client.h"
#include "chute/store/http/http_parse.h"
#include "chute/store/http/http_store.h"
#include "chute/store/open_store.h"
#include "chute/util/error.h"

namespace chute::http {
namespace {

TEST(HttpParse, ContentRange) {
  auto r = parse_content_range("bytes 0-99/1234");
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->satisfied);
  EXPECT_EQ(r->first, 0u);
  EXPECT_EQ(r->last, 99u);
  EXPECT_EQ(r->size, 1234u);
  r = parse_content_range("  Bytes 5-5/*\r\n");
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->size);
  r = parse_content_range("bytes */77");
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->satisfied);
  EXPECT_EQ(r->size, 77u);
  for (const char* bad : {"", "bytes", "bytes 5-4/10", "bytes 0-10/10", "bytes */*", "bytes 1-2",
                          "items 0-1/2", "bytes -1-2/3", "bytes 0-99999999999999999999/1",
                          "bytes 0x1-2/3"}) {
    EXPECT_FALSE(parse_content_range(bad)) << bad;
  }
}

TEST(HttpParse, StatusAndHeaderLines) {
  EXPECT_EQ(parse_status_line("HTTP/1.1 206 Partial Content\r\n"), 206);
  EXPECT_EQ(parse_status_line("HTTP/2 503\r\n"), 503);
  EXPECT_FALSE(parse_status_line("HTTP/1.1 20"));
  EXPECT_FALSE(parse_status_line("HTTP/1.1 2000 x"));
  EXPECT_FALSE(parse_status_line("Content-Length: 3"));
  auto header = parse_header_line("Content-Length:  42 \r\n");
  ASSERT_TRUE(header);
  EXPECT_EQ(header->first, "Content-Length");
  EXPECT_EQ(header->second, "42");
  EXPECT_FALSE(parse_header_line("\r\n"));
  EXPECT_EQ(parse_decimal(" 42 "), 42u);
  EXPECT_FALSE(parse_decimal("4 2"));
  EXPECT_FALSE(parse_decimal("-1"));
  EXPECT_FALSE(parse_decimal("99999999999999999999"));
  Headers headers{{"content-range", "bytes 0-1/2"}};
  EXPECT_EQ(find_header(headers, "Content-Range"), "bytes 0-1/2");
  EXPECT_FALSE(find_header(headers, "Content-Length"));
}

TEST(HttpParse, RangeHeader) {
  EXPECT_EQ(range_header_value(ByteRange::whole()), "");
  EXPECT_EQ(range_header_value(ByteRange::at(10, 5)), "bytes=10-14");
  EXPECT_EQ(range_header_value(ByteRange::last(16)), "bytes=-16");
  EXPECT_EQ(range_header_value(ByteRange{7, std::nullopt, false}), "bytes=7-");
}

TEST(HttpParse, ResponseMustMatchTheRangeAsked) {
  const auto cr = [](uint64_t first, uint64_t last, std::optional<uint64_t> size) {
    return std::optional<ContentRange>(ContentRange{true, first, last, size});
  };
  EXPECT_EQ(check_range_response(ByteRange::at(10, 5), 206, cr(10, 14, 100), 5), "");
  // A shorter or shifted range, or a Content-Length that disagrees: refused.
  EXPECT_NE(check_range_response(ByteRange::at(10, 5), 206, cr(10, 13, 100), 4), "");
  EXPECT_NE(check_range_response(ByteRange::at(10, 5), 206, cr(11, 15, 100), 5), "");
  EXPECT_NE(check_range_response(ByteRange::at(10, 5), 206, cr(10, 14, 100), 6), "");
  EXPECT_NE(check_range_response(ByteRange::at(10, 5), 206, std::nullopt, 5), "");
  // A 200 (Range ignored) is the data only when it is exactly what was asked.
  EXPECT_EQ(check_range_response(ByteRange::at(0, 100), 200, std::nullopt, 100), "");
  EXPECT_NE(check_range_response(ByteRange::at(0, 5), 200, std::nullopt, 100), "");
  EXPECT_NE(check_range_response(ByteRange::at(10, 5), 200, std::nullopt, 5), "");
  EXPECT_NE(check_range_response(ByteRange::last(5), 200, std::nullopt, 5), "");
  // Suffix: the last min(n, size) bytes.
  EXPECT_EQ(check_range_response(ByteRange::last(16), 206, cr(84, 99, 100), 16), "");
  EXPECT_EQ(check_range_response(ByteRange::last(160), 206, cr(0, 99, 100), 100), "");
  EXPECT_NE(check_range_response(ByteRange::last(16), 206, cr(80, 95, 100), 16), "");
  // Open-ended: up to the end.
  EXPECT_EQ(check_range_response(ByteRange{90, std::nullopt, false}, 206, cr(90, 99, 100), 10),
            "");
  EXPECT_NE(check_range_response(ByteRange{90, std::nullopt, false}, 206, cr(90, 95, 100), 6),
            "");
  const std::string reason =
      check_range_response(ByteRange::at(0, 100), 206, cr(0, 49, 50), 50);
  EXPECT_NE(reason.find("bytes=0-99"), std::string::npos) << reason;
  EXPECT_NE(reason.find("0-49/50"), std::string::npos) << reason;
}

TEST(HttpRetry, StatusesAndFullJitterBackoff) {
  for (long s : {408L, 429L, 500L, 502L, 503L, 504L}) EXPECT_TRUE(is_retryable_status(s)) << s;
  for (long s : {200L, 206L, 400L, 401L, 403L, 404L, 416L}) EXPECT_FALSE(is_retryable_status(s));
  EXPECT_DOUBLE_EQ(backoff_seconds(0, 0.1, 5, 0.999999), 0.1 * 0.999999);
  EXPECT_DOUBLE_EQ(backoff_seconds(3, 0.1, 5, 0.5), 0.4);  // 0.5 * 0.1 * 2^3
  EXPECT_DOUBLE_EQ(backoff_seconds(20, 0.1, 5, 0.5), 2.5);  // capped at max
  EXPECT_DOUBLE_EQ(backoff_seconds(1000, 0.1, 5, 1.0), 5.0);
  EXPECT_DOUBLE_EQ(backoff_seconds(2, 0.1, 5, 0.0), 0.0);  // full jitter reaches zero
}

TEST(HttpCoalesce, MergesNearbyRangesUpToTheSizeLimit) {
  const uint64_t MiB = 1 << 20;
  // Three ranges within 1 MiB gaps, one far away, one overlapping.
  std::vector<std::pair<uint64_t, uint64_t>> ranges{
      {5 * MiB, 5 * MiB + 10}, {0, 100}, {100 + MiB, 200 + MiB}, {50, 150}, {100 * MiB, 101 * MiB}};
  auto reads = coalesce_ranges(ranges, MiB, 16 * MiB);
  ASSERT_EQ(reads.size(), 3u);
  EXPECT_EQ(reads[0].begin, 0u);
  EXPECT_EQ(reads[0].end, 200 + MiB);
  EXPECT_EQ(std::set<size_t>(reads[0].members.begin(), reads[0].members.end()),
            (std::set<size_t>{1, 3, 2}));
  EXPECT_EQ(reads[1].members, std::vector<size_t>{0});  // 5 MiB is > 1 MiB past 1 MiB + 200
  EXPECT_EQ(reads[2].members, std::vector<size_t>{4});
  // The size limit splits a run of adjacent ranges.
  std::vector<std::pair<uint64_t, uint64_t>> run;
  for (uint64_t i = 0; i < 10; ++i) run.emplace_back(i * 4 * MiB, (i + 1) * 4 * MiB);
  reads = coalesce_ranges(run, MiB, 16 * MiB);
  ASSERT_EQ(reads.size(), 3u);
  for (const auto& read : reads) EXPECT_LE(read.end - read.begin, 16 * MiB);
  size_t members = 0;
  for (const auto& read : reads) members += read.members.size();
  EXPECT_EQ(members, 10u);
  // A gap of zero only merges touching ranges; a range larger than the limit stays alone.
  reads = coalesce_ranges({{0, 10}, {10, 20}, {21, 30}, {30, 30 + 32 * MiB}}, 0, 16 * MiB);
  ASSERT_EQ(reads.size(), 3u);
  EXPECT_EQ(reads[0].end, 20u);
  EXPECT_TRUE(coalesce_ranges({}, MiB, MiB).empty());
}

TEST(HttpCoalesce, SplitRange) {
  auto parts = split_range(10, 45, 10);
  ASSERT_EQ(parts.size(), 4u);
  EXPECT_EQ(parts[0], (std::pair<uint64_t, uint64_t>{10, 20}));
  EXPECT_EQ(parts[3], (std::pair<uint64_t, uint64_t>{40, 45}));
  EXPECT_EQ(split_range(0, 5, 10).size(), 1u);
}

TEST(HttpOptions, ValidatesValues) {
  const HttpOptions saved = options();
  HttpOptions bad = saved;
  bad.max_in_flight = 0;
  EXPECT_THROW(set_options(bad), Error);
  bad = saved;
  bad.stall_timeout_s = 0.5;
  EXPECT_THROW(set_options(bad), Error);
  bad = saved;
  bad.max_retries = -1;
  EXPECT_THROW(set_options(bad), Error);
  HttpOptions good = saved;
  good.max_retries = 2;
  set_options(good);
  EXPECT_EQ(options().max_retries, 2);
  set_options(saved);
}

TEST(OpenStore, SchemesAndUrls) {
  EXPECT_EQ(url_scheme("https://example.org/a.zarr"), "https");
  EXPECT_EQ(url_scheme("S3://bucket/x"), "s3");
  EXPECT_FALSE(url_scheme("/data/a.zarr"));
  EXPECT_FALSE(url_scheme("relative/dir"));
  EXPECT_FALSE(url_scheme("C://x"));
  EXPECT_EQ(url_root("https://example.org/a/b.zarr"), "https://example.org");
  EXPECT_EQ(url_root("/data/a"), "");
  EXPECT_EQ(open_store("http://127.0.0.1:9/data.zarr/")->describe(), "http://127.0.0.1:9/data.zarr");
  try {
    open_store("ftp://host/x");
    FAIL() << "ftp:// opened";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("https://"), std::string::npos) << e.what();
  }
  EXPECT_EQ(percent_encode_path("c/0 1/%"), "c/0%201/%25");
  EXPECT_THROW(HttpStore("/local/path"), Error);
  try {
    HttpStore("http://127.0.0.1:9/x").list("");
    FAIL() << "listed over HTTP";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("consolidated"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace chute::http
