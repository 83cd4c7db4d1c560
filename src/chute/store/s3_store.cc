#include "chute/store/s3_store.h"

#include <chrono>
#include <mutex>
#include <set>

#include "chute/store/aws_sigv4.h"
#include "chute/store/s3_xml.h"
#include "chute/util/error.h"
#include "chute/util/fork_safe_mutex.h"

namespace chute {
namespace {

struct UrlParts {
  std::string authority;             // "host[:port]"
  std::string path;                  // "/bucket/key" as encoded
  std::vector<sigv4::Header> query;  // decoded
};

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string percent_decode(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && hex_value(text[i + 1]) >= 0 &&
        hex_value(text[i + 2]) >= 0) {
      out += static_cast<char>(hex_value(text[i + 1]) * 16 + hex_value(text[i + 2]));
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

UrlParts split_url(std::string_view url) {
  UrlParts parts;
  const size_t scheme_end = url.find("://");
  std::string_view rest = scheme_end == std::string_view::npos ? url : url.substr(scheme_end + 3);
  const size_t slash = rest.find('/');
  parts.authority = std::string(rest.substr(0, slash));
  std::string_view path_and_query = slash == std::string_view::npos ? "/" : rest.substr(slash);
  const size_t question = path_and_query.find('?');
  parts.path = std::string(path_and_query.substr(0, question));
  if (question != std::string_view::npos) {
    std::string_view query = path_and_query.substr(question + 1);
    while (!query.empty()) {
      const size_t amp = query.find('&');
      const std::string_view item = query.substr(0, amp);
      const size_t equals = item.find('=');
      parts.query.emplace_back(percent_decode(item.substr(0, equals)),
                               equals == std::string_view::npos
                                   ? std::string()
                                   : percent_decode(item.substr(equals + 1)));
      query.remove_prefix(amp == std::string_view::npos ? query.size() : amp + 1);
    }
  }
  return parts;
}

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

void remove_headers(http::Headers& headers, const std::set<std::string>& names) {
  std::erase_if(headers, [&](const auto& header) { return names.count(lower(header.first)) > 0; });
}

// "HTTP 404 NoSuchBucket (The specified bucket does not exist)".
std::string describe_failure(const http::HttpResult& result) {
  std::string text = result.status ? fmt::format("HTTP {}", result.status) : "no response";
  if (const auto body = parse_s3_error(result.body)) {
    text += " " + body->code;
    if (!body->message.empty()) text += " (" + body->message + ")";
  }
  return text;
}

detail::ForkSafeMutex g_defaults_mutex;
std::map<std::string, StoreOpenOptions>& defaults() {
  static std::map<std::string, StoreOpenOptions> by_scheme;
  return by_scheme;
}

// The process-wide options for `scheme` overlaid with the call's own.
StoreOpenOptions with_defaults(const std::string& scheme, const StoreOpenOptions& options) {
  StoreOpenOptions merged = object_store_options(scheme);
  for (const auto& [key, value] : options.settings) merged.settings[key] = value;
  return merged;
}

bool parse_bool(const std::string& key, const std::string& value) {
  const std::string v = lower(value);
  if (v == "true" || v == "1" || v == "yes") return true;
  if (v == "false" || v == "0" || v == "no") return false;
  fail(ErrorCode::kInvalidArgument, "storage option {}='{}': expected true or false", key, value);
}

}  // namespace

void sign_s3_request(http::HttpRequest& request, const sigv4::Credentials& credentials,
                     const std::string& region) {
  remove_headers(request.headers, {"host", "x-amz-date", "x-amz-content-sha256",
                                   "x-amz-security-token", "authorization"});
  const UrlParts url = split_url(request.url);
  sigv4::Request to_sign;
  to_sign.method = request.method;
  to_sign.canonical_uri = url.path.empty() ? "/" : url.path;
  to_sign.query = url.query;
  to_sign.headers = request.headers;
  // Host is sent explicitly, so the signed value is the one curl sends.
  to_sign.headers.emplace_back("host", url.authority);
  to_sign.payload_hash = sigv4::sha256_hex(request.body);
  const int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  request.headers.emplace_back("Host", url.authority);
  for (auto& header :
       sigv4::sign(std::move(to_sign), credentials, region, "s3", sigv4::amz_date(now))) {
    request.headers.push_back(std::move(header));
  }
}

S3Store::S3Store(std::string scheme, S3Location location, S3Config config, std::string bearer_token)
    : HttpStore(
          config.object_url(location.bucket, location.prefix),
          [credentials = config.credentials, region = config.region,
           token = std::move(bearer_token)](http::HttpRequest& request) {
            if (credentials) {
              sign_s3_request(request, *credentials, region);
            } else if (!token.empty()) {
              remove_headers(request.headers, {"authorization"});
              request.headers.emplace_back("Authorization", "Bearer " + token);
            }
          },
          [config, location](std::string_view key) {
            return config.object_url(location.bucket, join_key(location.prefix, key));
          }),
      scheme_(std::move(scheme)),
      location_(std::move(location)),
      config_(std::move(config)) {}

std::string S3Store::describe() const {
  return fmt::format("{}://{}/{}", scheme_, location_.bucket, location_.prefix);
}

std::vector<std::string> S3Store::list(std::string_view prefix) const {
  std::string key_prefix = join_key(location_.prefix, prefix);
  if (!key_prefix.empty()) key_prefix += '/';
  std::vector<std::string> names;
  std::string token;
  for (int page = 0;; ++page) {
    std::string url = config_.object_url(location_.bucket, "") + "?list-type=2&delimiter=%2F";
    if (!key_prefix.empty()) url += "&prefix=" + sigv4::uri_encode(key_prefix, true);
    if (!token.empty()) url += "&continuation-token=" + sigv4::uri_encode(token, true);
    http::HttpRequest request = make_request("", ByteRange::whole());
    request.url = url;
    request.what = fmt::format("listing of '{}' (page {})", key_prefix, page + 1);
    const http::HttpResult result = http::HttpClient::instance().fetch(std::move(request));
    if (!result.ok()) {
      const std::string where =
          fmt::format("{}://{}: listing '{}' ({})", scheme_, location_.bucket, key_prefix, url);
      if (result.status == 404) {
        fail(ErrorCode::kNotFound, "{}: {}; does bucket '{}' exist?", where,
             describe_failure(result), location_.bucket);
      }
      if (result.status == 401 || result.status == 403) {
        fail(ErrorCode::kPermissionDenied, "{}: {} (credentials: {})", where,
             describe_failure(result), config_.credentials_source);
      }
      std::rethrow_exception(result.error);
    }
    const S3ListPage listing = parse_list_objects_v2(result.body, url);
    for (const auto& object : listing.objects) {
      if (object.key.size() > key_prefix.size() && object.key.starts_with(key_prefix)) {
        names.push_back(object.key.substr(key_prefix.size()));
      }
    }
    for (const auto& common : listing.common_prefixes) {
      if (common.size() > key_prefix.size() + 1 && common.starts_with(key_prefix)) {
        std::string name = common.substr(key_prefix.size());
        if (name.back() == '/') name.pop_back();
        names.push_back(std::move(name));
      }
    }
    if (!listing.truncated) break;
    if (listing.next_continuation_token == token) {
      fail(ErrorCode::kCorruptData, "{}: listing repeats continuation token '{}'", url, token);
    }
    token = listing.next_continuation_token;
  }
  return names;
}

const std::vector<OptionField<StorageOptions>>& StorageOptions::fields() {
  using O = StorageOptions;
  const OptionCheck given = {.none = "from the environment", .default_none = true};
  static const std::vector<OptionField<O>> table = {
      {"endpoint_url", &O::endpoint_url,
       "the server, e.g. \"http://127.0.0.1:9000\" for an S3-compatible one (path-style "
       "addressing)",
       given},
      {"region", &O::region, "the bucket's region (s3 only)", given},
      {"profile", &O::profile, "a section of ~/.aws/credentials or ~/.aws/config (s3 only)", given},
      {"access_key_id", &O::access_key_id, "the access key (s3 only)", given},
      {"secret_access_key", &O::secret_access_key, "the secret of access_key_id (s3 only)", given},
      {"session_token", &O::session_token, "a temporary credential's token (s3 only)", given},
      {"token", &O::token, "an OAuth2 access token, sent as a bearer token (gs only)", given},
      {"anonymous",
       &O::anonymous,
       "True: unsigned requests, no credentials looked up",
       {.none = "from the environment (AWS_NO_SIGN_REQUEST)", .default_none = true}},
      {"addressing_style",
       &O::addressing_style,
       "how the bucket is addressed: ENDPOINT/BUCKET (path) or BUCKET.ENDPOINT (virtual); s3 only",
       {.choices = {"path", "virtual"},
        .none = "path for a custom endpoint, else virtual",
        .default_none = true}},
  };
  return table;
}

StoreOpenOptions StorageOptions::settings() const {
  StoreOpenOptions out;
  for (const OptionField<StorageOptions>& field : fields()) {
    if (const auto* text = std::get_if<std::string StorageOptions::*>(&field.member)) {
      if (!(this->**text).empty()) out.settings[std::string(field.name)] = this->**text;
    }
  }
  if (anonymous) out.settings["anonymous"] = *anonymous ? "true" : "false";
  return out;
}

StorageOptions StorageOptions::from(const StoreOpenOptions& options) {
  StorageOptions out;
  for (const auto& [key, value] : options.settings) {
    const OptionField<StorageOptions>* field = find_field<StorageOptions>(key);
    if (field == nullptr) {
      std::vector<std::string_view> known;
      for (const OptionField<StorageOptions>& f : fields()) known.push_back(f.name);
      fail(ErrorCode::kInvalidArgument, "storage: unknown option '{}' (known: {})", key,
           fmt::join(known, ", "));
    }
    if (key == "anonymous") {
      out.anonymous = parse_bool(key, value);
    } else {
      out.*std::get<std::string StorageOptions::*>(field->member) = value;
    }
  }
  return out;
}

void validate(const StorageOptions& options, std::string_view scheme) {
  if (scheme != "s3" && scheme != "gs") {
    fail(ErrorCode::kInvalidArgument, "storage options are for 's3' or 'gs', not '{}'", scheme);
  }
  check_fields(fmt::format("{} storage", scheme), options);
  if (scheme == "s3" && !options.token.empty()) {
    fail(ErrorCode::kInvalidArgument,
         "s3 storage: token is for gs:// URLs; s3:// takes access_key_id / secret_access_key / "
         "session_token");
  }
  if (scheme == "gs") {
    for (const char* name : {"profile", "access_key_id", "secret_access_key", "session_token",
                             "region", "addressing_style"}) {
      if (options.settings().settings.count(name)) {
        fail(ErrorCode::kInvalidArgument,
             "gs storage: {} is for s3:// URLs; gs:// takes endpoint_url, token, anonymous", name);
      }
    }
  }
}

S3Options s3_options_from(const StoreOpenOptions& options) {
  const StorageOptions given = StorageOptions::from(options);
  const auto set = [](const std::string& value) {
    return value.empty() ? std::nullopt : std::optional<std::string>(value);
  };
  S3Options out;
  out.endpoint_url = set(given.endpoint_url);
  out.region = set(given.region);
  out.profile = set(given.profile);
  out.access_key_id = set(given.access_key_id);
  out.secret_access_key = set(given.secret_access_key);
  out.session_token = set(given.session_token);
  out.anonymous = given.anonymous;
  if (!given.addressing_style.empty()) {
    check_field("storage", *find_field<StorageOptions>("addressing_style"), given);
    out.path_style = given.addressing_style == "path";
  }
  return out;
}

void set_object_store_options(const std::string& scheme, const StoreOpenOptions& options) {
  validate(StorageOptions::from(options), scheme);
  std::lock_guard lock(g_defaults_mutex);
  defaults()[scheme] = options;
}

StoreOpenOptions object_store_options(const std::string& scheme) {
  std::lock_guard lock(g_defaults_mutex);
  const auto found = defaults().find(scheme);
  return found == defaults().end() ? StoreOpenOptions{} : found->second;
}

StorePtr open_s3_store(std::string_view location, const StoreOpenOptions& given) {
  const StoreOpenOptions options = with_defaults("s3", given);
  validate(StorageOptions::from(options), "s3");
  const S3Options s3 = s3_options_from(options);
  S3Location where = parse_bucket_url(location, "s3");
  S3Config config = resolve_s3_config(where.bucket, s3, process_environment());
  return std::make_shared<const S3Store>("s3", std::move(where), std::move(config));
}

StorePtr open_gcs_store(std::string_view location, const StoreOpenOptions& given) {
  const StoreOpenOptions options = with_defaults("gs", given);
  validate(StorageOptions::from(options), "gs");
  const S3Options s3 = s3_options_from(options);
  S3Location where = parse_bucket_url(location, "gs");
  const Environment env = process_environment();
  S3Config config;
  config.region = "auto";
  config.path_style = true;
  std::optional<std::string> endpoint = s3.endpoint_url;
  if (!endpoint) endpoint = env("STORAGE_EMULATOR_HOST");
  config.endpoint = endpoint.value_or("https://storage.googleapis.com");
  if (config.endpoint.find("://") == std::string::npos) {
    config.endpoint = "http://" + config.endpoint;  // the emulator convention: "host:port"
  }
  while (config.endpoint.ends_with('/')) config.endpoint.pop_back();
  std::string token;
  if (!s3.anonymous.value_or(false)) {
    const auto found = options.settings.find("token");
    if (found != options.settings.end()) {
      token = found->second;
    } else if (auto from_env = env("GOOGLE_OAUTH_ACCESS_TOKEN")) {
      token = *from_env;
    }
  }
  config.credentials_source = token.empty() ? "anonymous (no token)" : "bearer token";
  return std::make_shared<const S3Store>("gs", std::move(where), std::move(config),
                                         std::move(token));
}

}  // namespace chute
