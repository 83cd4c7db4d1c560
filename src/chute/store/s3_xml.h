#pragma once
// The two XML documents an S3-compatible server sends chute: a ListObjectsV2 page
// (ListBucketResult) and an error body (<Error><Code>..</Code><Message>..</Message></Error>).
// Parsed with expat; a DOCTYPE (entities) or a document nested deeper than a listing can be is
// refused, so a hostile server cannot make the parser expand or recurse without bound.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace chute {

struct S3ListPage {
  struct Object {
    std::string key;
    uint64_t size = 0;
  };
  std::vector<Object> objects;               // <Contents>
  std::vector<std::string> common_prefixes;  // <CommonPrefixes><Prefix>
  bool truncated = false;                    // <IsTruncated>true</IsTruncated>
  std::string next_continuation_token;       // <NextContinuationToken>
};

/// Parses a ListObjectsV2 response body. Throws chute::Error (kCorruptData) naming `where`
/// when it is not well-formed XML, is not a ListBucketResult, or says it is truncated without
/// a continuation token.
S3ListPage parse_list_objects_v2(std::string_view xml, std::string_view where);

struct S3ErrorBody {
  std::string code;  // "NoSuchKey", "AccessDenied", "SlowDown", ...
  std::string message;
};

/// The code and message of an S3 error body, or nullopt when `xml` is not one (an HTML page
/// from a proxy, an empty body). Never throws.
std::optional<S3ErrorBody> parse_s3_error(std::string_view xml);

}  // namespace chute
