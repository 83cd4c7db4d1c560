#pragma once
// AWS Signature Version 4 as pure functions (no clock, no environment, no I/O), so each step
// can be checked against AWS's published examples. Used by the S3 store for every request
// attempt (a retried request is signed again: its x-amz-date changes).
//
// https://docs.aws.amazon.com/IAM/latest/UserGuide/create-signed-request.html

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace chute::sigv4 {

/// SHA-256 of an empty payload (what a GET's x-amz-content-sha256 may carry).
inline constexpr std::string_view kEmptyPayloadHash =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
/// The payload hash S3 accepts in place of a real one.
inline constexpr std::string_view kUnsignedPayload = "UNSIGNED-PAYLOAD";

using Digest = std::array<unsigned char, 32>;
using Header = std::pair<std::string, std::string>;

Digest sha256(std::string_view data);
std::string sha256_hex(std::string_view data);
Digest hmac_sha256(std::string_view key, std::string_view data);
std::string hex(const Digest& digest);

/// RFC 3986 percent-encoding as SigV4 wants it: unreserved characters (A-Z a-z 0-9 - . _ ~)
/// stay, every other byte becomes %XX (upper case); '/' stays unless `encode_slash`.
std::string uri_encode(std::string_view text, bool encode_slash);

struct Credentials {
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;  // empty: none
};

struct Request {
  std::string method = "GET";
  /// The path as sent, already percent-encoded (S3: each key segment with uri_encode(.., false)).
  std::string canonical_uri = "/";
  /// Query parameters, not encoded (sorting and encoding happen in canonical_query()).
  std::vector<Header> query;
  /// Headers to sign, with "host" among them. Names are compared case-insensitively.
  std::vector<Header> headers;
  std::string payload_hash = std::string(kEmptyPayloadHash);
};

/// "Param1=value1&Param2=value2": names and values encoded, sorted by encoded name then value.
std::string canonical_query(const std::vector<Header>& query);
/// Header names lower-cased, values trimmed with inner runs of spaces folded, sorted by name.
std::vector<Header> canonical_headers(const std::vector<Header>& headers);
/// "host;x-amz-date": the names of canonical_headers(), joined by ';'.
std::string signed_header_names(const std::vector<Header>& headers);

std::string canonical_request(const Request& request);
/// "20150830/us-east-1/service/aws4_request".
std::string credential_scope(std::string_view date, std::string_view region,
                             std::string_view service);
std::string string_to_sign(std::string_view amz_date, std::string_view scope,
                           std::string_view canonical_request);
/// kSigning = HMAC(HMAC(HMAC(HMAC("AWS4" + secret, date), region), service), "aws4_request").
Digest signing_key(std::string_view secret, std::string_view date, std::string_view region,
                   std::string_view service);

/// "20150830T123600Z" for seconds since the epoch (UTC).
std::string amz_date(int64_t unix_seconds);

/// Signs `request` at `amz_date` ("YYYYMMDDTHHMMSSZ"): adds x-amz-date, x-amz-content-sha256
/// (the request's payload_hash; only for service "s3", as AWS's own clients do) and, with a
/// session token, x-amz-security-token to the signed headers, and returns the headers to send
/// besides the request's own: those plus Authorization.
std::vector<Header> sign(Request request, const Credentials& credentials, std::string_view region,
                         std::string_view service, std::string_view amz_date);

/// The Authorization header's value for an already complete request (its headers include
/// x-amz-date and whatever else is signed).
std::string authorization(const Request& request, const Credentials& credentials,
                          std::string_view region, std::string_view service,
                          std::string_view amz_date);

}  // namespace chute::sigv4
