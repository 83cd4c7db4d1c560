#include "chute/store/aws_config.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "chute/util/error.h"

namespace chute {
namespace {

std::string_view trim(std::string_view text) {
  const auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r'; };
  while (!text.empty() && blank(text.front())) text.remove_prefix(1);
  while (!text.empty() && blank(text.back())) text.remove_suffix(1);
  return text;
}

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

bool truthy(const std::optional<std::string>& value) {
  if (!value) return false;
  const std::string v = lower(trim(*value));
  return v == "true" || v == "1" || v == "yes";
}

std::optional<std::string> non_empty(std::optional<std::string> value) {
  if (value && trim(*value).empty()) return std::nullopt;
  return value;
}

std::optional<std::string> read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

IniSections parse_ini(std::string_view text, std::string_view where) {
  IniSections sections;
  std::map<std::string, std::string>* section = nullptr;
  std::string last_key;
  size_t line_number = 0;
  while (!text.empty()) {
    ++line_number;
    const size_t newline = text.find('\n');
    std::string_view raw = text.substr(0, newline);
    text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
    const std::string_view line = trim(raw);
    if (line.empty() || line.front() == '#' || line.front() == ';') continue;
    const bool indented = raw.front() == ' ' || raw.front() == '\t';
    if (line.front() == '[') {
      if (line.back() != ']' || line.size() < 3) {
        fail(ErrorCode::kInvalidArgument, "{} line {}: a section header must be [name]", where,
             line_number);
      }
      section = &sections[std::string(trim(line.substr(1, line.size() - 2)))];
      last_key.clear();
      continue;
    }
    if (section == nullptr) {
      fail(ErrorCode::kInvalidArgument, "{} line {}: a value before the first [section]", where,
           line_number);
    }
    const size_t equals = line.find('=');
    if (indented && !last_key.empty()) {
      // A nested line under "s3 =": "  endpoint_url = ..." becomes "s3.endpoint_url".
      if (equals == std::string_view::npos) {
        fail(ErrorCode::kInvalidArgument, "{} line {}: expected 'key = value'", where, line_number);
      }
      (*section)[last_key + "." + lower(trim(line.substr(0, equals)))] =
          std::string(trim(line.substr(equals + 1)));
      continue;
    }
    if (equals == std::string_view::npos || trim(line.substr(0, equals)).empty()) {
      fail(ErrorCode::kInvalidArgument, "{} line {}: expected 'key = value'", where, line_number);
    }
    last_key = lower(trim(line.substr(0, equals)));
    (*section)[last_key] = std::string(trim(line.substr(equals + 1)));
  }
  return sections;
}

Environment process_environment() {
  return [](std::string_view name) -> std::optional<std::string> {
    const char* value = std::getenv(std::string(name).c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

S3Location parse_bucket_url(std::string_view url, std::string_view scheme) {
  const std::string start = std::string(scheme) + "://";
  if (url.substr(0, start.size()) != start) {
    fail(ErrorCode::kInvalidArgument, "'{}' is not a {} URL", url, start);
  }
  std::string_view rest = url.substr(start.size());
  const size_t slash = rest.find('/');
  S3Location location;
  location.bucket = std::string(rest.substr(0, slash));
  if (slash != std::string_view::npos) {
    std::string_view prefix = rest.substr(slash + 1);
    while (!prefix.empty() && prefix.front() == '/') prefix.remove_prefix(1);
    while (!prefix.empty() && prefix.back() == '/') prefix.remove_suffix(1);
    location.prefix = std::string(prefix);
  }
  const std::string& b = location.bucket;
  bool valid = b.size() >= 3 && b.size() <= 222;  // GCS allows dotted names up to 222
  for (char c : b) {
    valid = valid &&
            ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_');
  }
  if (!valid) {
    fail(ErrorCode::kInvalidArgument,
         "'{}': bucket name '{}' is not valid (3 to 63 characters: lower-case letters, digits, "
         "'-', '.')",
         url, b);
  }
  return location;
}

std::string S3Config::object_url(std::string_view bucket, std::string_view key) const {
  const std::string path = sigv4::uri_encode(key, false);
  if (path_style) return fmt::format("{}/{}/{}", endpoint, bucket, path);
  const size_t scheme_end = endpoint.find("://");
  const size_t host = scheme_end == std::string::npos ? 0 : scheme_end + 3;
  return fmt::format("{}{}.{}/{}", endpoint.substr(0, host), bucket, endpoint.substr(host), path);
}

S3Config resolve_s3_config(std::string_view bucket, const S3Options& options,
                           const Environment& environment) {
  const auto env = [&](std::string_view name) { return non_empty(environment(name)); };
  S3Config config;

  const std::string profile_name = options.profile.value_or(env("AWS_PROFILE").value_or("default"));
  const bool profile_explicit = options.profile.has_value() || env("AWS_PROFILE").has_value();
  const std::optional<std::string> home = env("HOME");
  const std::string credentials_path =
      env("AWS_SHARED_CREDENTIALS_FILE").value_or(home ? *home + "/.aws/credentials" : "");
  const std::string config_path =
      env("AWS_CONFIG_FILE").value_or(home ? *home + "/.aws/config" : "");
  // The profile's values: the credentials file's [NAME], then the config file's
  // [profile NAME] ([default] for the default profile); the credentials file wins.
  std::map<std::string, std::string> profile;
  bool profile_found = false;
  const auto load = [&](const std::string& path, const std::string& section_name) {
    if (path.empty()) return;
    const std::optional<std::string> text = read_text_file(path);
    if (!text) return;
    const IniSections sections = parse_ini(*text, path);
    const auto section = sections.find(section_name);
    if (section == sections.end()) return;
    profile_found = true;
    for (const auto& [key, value] : section->second) profile.emplace(key, value);
  };
  load(credentials_path, profile_name);
  load(config_path, profile_name == "default" ? "default" : "profile " + profile_name);
  const auto from_profile = [&](const std::string& key) -> std::optional<std::string> {
    const auto found = profile.find(key);
    if (found == profile.end() || found->second.empty()) return std::nullopt;
    return found->second;
  };

  config.region = options.region.value_or(
      env("AWS_REGION")
          .value_or(
              env("AWS_DEFAULT_REGION").value_or(from_profile("region").value_or("us-east-1"))));

  std::optional<std::string> endpoint = options.endpoint_url;
  if (!endpoint) endpoint = env("AWS_ENDPOINT_URL_S3");
  if (!endpoint) endpoint = env("AWS_ENDPOINT_URL");
  if (!endpoint) endpoint = from_profile("s3.endpoint_url");
  if (!endpoint) endpoint = from_profile("endpoint_url");
  if (endpoint) {
    std::string url = *endpoint;
    while (!url.empty() && url.back() == '/') url.pop_back();
    if (url.rfind("http://", 0) != 0 && url.rfind("https://", 0) != 0) {
      fail(ErrorCode::kInvalidArgument,
           "endpoint_url '{}' must start with http:// or https:// (e.g. http://127.0.0.1:9000)",
           *endpoint);
    }
    config.endpoint = url;
    config.path_style = options.path_style.value_or(true);
  } else {
    config.endpoint = fmt::format("https://s3.{}.amazonaws.com", config.region);
    config.path_style = options.path_style.value_or(bucket.find('.') != std::string_view::npos);
  }

  const bool anonymous = options.anonymous.value_or(truthy(env("AWS_NO_SIGN_REQUEST")));
  if (anonymous) {
    config.credentials_source = "anonymous (unsigned requests)";
    return config;
  }
  if (options.access_key_id || options.secret_access_key) {
    if (!options.access_key_id || !options.secret_access_key) {
      fail(ErrorCode::kInvalidArgument,
           "S3 options: access_key_id and secret_access_key must be given together");
    }
    config.credentials = sigv4::Credentials{*options.access_key_id, *options.secret_access_key,
                                            options.session_token.value_or("")};
    config.credentials_source = "options";
    return config;
  }
  if (env("AWS_ACCESS_KEY_ID") && env("AWS_SECRET_ACCESS_KEY")) {
    config.credentials =
        sigv4::Credentials{*env("AWS_ACCESS_KEY_ID"), *env("AWS_SECRET_ACCESS_KEY"),
                           env("AWS_SESSION_TOKEN").value_or("")};
    config.credentials_source = "environment (AWS_ACCESS_KEY_ID)";
    return config;
  }
  if (profile_explicit && !profile_found) {
    fail(ErrorCode::kInvalidArgument, "AWS profile '{}' is in neither {} nor {}", profile_name,
         credentials_path.empty() ? "~/.aws/credentials" : credentials_path,
         config_path.empty() ? "~/.aws/config" : config_path);
  }
  const auto key_id = from_profile("aws_access_key_id");
  const auto secret = from_profile("aws_secret_access_key");
  if (key_id && secret) {
    config.credentials =
        sigv4::Credentials{*key_id, *secret, from_profile("aws_session_token").value_or("")};
    config.credentials_source = fmt::format("profile '{}'", profile_name);
    return config;
  }
  config.credentials_source = "anonymous (no credentials found)";
  return config;
}

}  // namespace chute
