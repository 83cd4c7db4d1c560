#include "chute/store/aws_sigv4.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <ctime>

#include "chute/util/error.h"

namespace chute::sigv4 {

Digest sha256(std::string_view data) {
  Digest digest{};
  unsigned int length = 0;
  if (EVP_Digest(data.data(), data.size(), digest.data(), &length, EVP_sha256(), nullptr) != 1 ||
      length != digest.size()) {
    fail(ErrorCode::kInternal, "SHA-256 failed in OpenSSL");
  }
  return digest;
}

std::string sha256_hex(std::string_view data) { return hex(sha256(data)); }

Digest hmac_sha256(std::string_view key, std::string_view data) {
  Digest digest{};
  unsigned int length = 0;
  if (HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
           reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest.data(),
           &length) == nullptr ||
      length != digest.size()) {
    fail(ErrorCode::kInternal, "HMAC-SHA256 failed in OpenSSL");
  }
  return digest;
}

std::string hex(const Digest& digest) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(digest.size() * 2);
  for (unsigned char byte : digest) {
    out += kDigits[byte >> 4];
    out += kDigits[byte & 15];
  }
  return out;
}

std::string uri_encode(std::string_view text, bool encode_slash) {
  static constexpr char kDigits[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    const bool unreserved = (byte >= 'A' && byte <= 'Z') || (byte >= 'a' && byte <= 'z') ||
                            (byte >= '0' && byte <= '9') || byte == '-' || byte == '.' ||
                            byte == '_' || byte == '~';
    if (unreserved || (byte == '/' && !encode_slash)) {
      out += c;
    } else {
      out += '%';
      out += kDigits[byte >> 4];
      out += kDigits[byte & 15];
    }
  }
  return out;
}

std::string canonical_query(const std::vector<Header>& query) {
  std::vector<Header> encoded;
  encoded.reserve(query.size());
  for (const auto& [name, value] : query) {
    encoded.emplace_back(uri_encode(name, true), uri_encode(value, true));
  }
  std::sort(encoded.begin(), encoded.end());
  std::string out;
  for (const auto& [name, value] : encoded) {
    if (!out.empty()) out += '&';
    out += name;
    out += '=';
    out += value;
  }
  return out;
}

namespace {

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

// Trims leading and trailing spaces and folds inner runs of spaces into one (SigV4 "Trimall").
std::string trim_all(std::string_view value) {
  std::string out;
  bool pending_space = false;
  for (char c : value) {
    if (c == ' ' || c == '\t') {
      pending_space = !out.empty();
      continue;
    }
    if (pending_space) out += ' ';
    pending_space = false;
    out += c;
  }
  return out;
}

}  // namespace

std::vector<Header> canonical_headers(const std::vector<Header>& headers) {
  std::vector<Header> out;
  for (const auto& [name, value] : headers) {
    std::string key = lower(name);
    std::string trimmed = trim_all(value);
    auto same =
        std::find_if(out.begin(), out.end(), [&](const Header& h) { return h.first == key; });
    if (same != out.end()) {
      same->second += ',' + trimmed;  // repeated headers join with commas
    } else {
      out.emplace_back(std::move(key), std::move(trimmed));
    }
  }
  std::sort(out.begin(), out.end(),
            [](const Header& a, const Header& b) { return a.first < b.first; });
  return out;
}

std::string signed_header_names(const std::vector<Header>& headers) {
  std::string out;
  for (const auto& [name, value] : canonical_headers(headers)) {
    if (!out.empty()) out += ';';
    out += name;
  }
  return out;
}

std::string canonical_request(const Request& request) {
  std::string out =
      request.method + '\n' + request.canonical_uri + '\n' + canonical_query(request.query) + '\n';
  for (const auto& [name, value] : canonical_headers(request.headers)) {
    out += name + ':' + value + '\n';
  }
  out += '\n' + signed_header_names(request.headers) + '\n' + request.payload_hash;
  return out;
}

std::string credential_scope(std::string_view date, std::string_view region,
                             std::string_view service) {
  return fmt::format("{}/{}/{}/aws4_request", date, region, service);
}

std::string string_to_sign(std::string_view amz_date, std::string_view scope,
                           std::string_view canonical_request) {
  return fmt::format("AWS4-HMAC-SHA256\n{}\n{}\n{}", amz_date, scope,
                     sha256_hex(canonical_request));
}

Digest signing_key(std::string_view secret, std::string_view date, std::string_view region,
                   std::string_view service) {
  const std::string initial = "AWS4" + std::string(secret);
  const Digest k_date = hmac_sha256(initial, date);
  const auto as_view = [](const Digest& d) {
    return std::string_view(reinterpret_cast<const char*>(d.data()), d.size());
  };
  const Digest k_region = hmac_sha256(as_view(k_date), region);
  const Digest k_service = hmac_sha256(as_view(k_region), service);
  return hmac_sha256(as_view(k_service), "aws4_request");
}

std::string amz_date(int64_t unix_seconds) {
  const std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm utc{};
  gmtime_r(&t, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y%m%dT%H%M%SZ", &utc);
  return text;
}

std::string authorization(const Request& request, const Credentials& credentials,
                          std::string_view region, std::string_view service,
                          std::string_view amz_date) {
  if (amz_date.size() < 8) fail(ErrorCode::kInvalidArgument, "bad x-amz-date '{}'", amz_date);
  const std::string_view date = amz_date.substr(0, 8);
  const std::string scope = credential_scope(date, region, service);
  const std::string to_sign = string_to_sign(amz_date, scope, canonical_request(request));
  const Digest key = signing_key(credentials.secret_access_key, date, region, service);
  const Digest signature =
      hmac_sha256(std::string_view(reinterpret_cast<const char*>(key.data()), key.size()), to_sign);
  return fmt::format("AWS4-HMAC-SHA256 Credential={}/{}, SignedHeaders={}, Signature={}",
                     credentials.access_key_id, scope, signed_header_names(request.headers),
                     hex(signature));
}

std::vector<Header> sign(Request request, const Credentials& credentials, std::string_view region,
                         std::string_view service, std::string_view amz_date) {
  std::vector<Header> added;
  added.emplace_back("x-amz-date", std::string(amz_date));
  if (service == "s3") added.emplace_back("x-amz-content-sha256", request.payload_hash);
  if (!credentials.session_token.empty()) {
    added.emplace_back("x-amz-security-token", credentials.session_token);
  }
  request.headers.insert(request.headers.end(), added.begin(), added.end());
  added.emplace_back("Authorization",
                     authorization(request, credentials, region, service, amz_date));
  return added;
}

}  // namespace chute::sigv4
