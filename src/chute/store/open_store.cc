#include "chute/store/open_store.h"

#include <mutex>

#include "chute/store/file_store.h"
#include "chute/store/http/http_store.h"
#include "chute/store/s3_store.h"
#include "chute/util/error.h"
#include "chute/util/fork_safe_mutex.h"

namespace chute {
namespace {

StorePtr open_http(std::string_view location, const StoreOpenOptions&) {
  return std::make_shared<const HttpStore>(std::string(location));
}

// Schemes served by chute_core itself. To add one: a line here naming its factory.
std::map<std::string, StoreFactory> builtin_schemes() {
  return {
      {"http", &open_http},
      {"https", &open_http},
      {"s3", &open_s3_store},
      {"gs", &open_gcs_store},
  };
}

detail::ForkSafeMutex g_mutex;
std::map<std::string, StoreFactory>& registry() {
  static std::map<std::string, StoreFactory> schemes = builtin_schemes();
  return schemes;
}

}  // namespace

std::optional<std::string> url_scheme(std::string_view location) {
  const size_t sep = location.find("://");
  if (sep == std::string_view::npos || sep < 2) return std::nullopt;  // "C://" is a drive
  std::string scheme;
  for (char c : location.substr(0, sep)) {
    const char lower = c >= 'A' && c <= 'Z' ? char(c + 32) : c;
    const bool ok =
        (lower >= 'a' && lower <= 'z') ||
        (!scheme.empty() && ((c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.'));
    if (!ok) return std::nullopt;
    scheme += lower;
  }
  return scheme;
}

std::string url_root(std::string_view location) {
  const size_t sep = location.find("://");
  if (!is_url(location)) return "";
  const size_t slash = location.find('/', sep + 3);
  return std::string(location.substr(0, slash));
}

StorePtr open_store(std::string_view location, const StoreOpenOptions& options) {
  const auto scheme = url_scheme(location);
  if (!scheme) return std::make_shared<const FileStore>(std::string(location));
  StoreFactory factory;
  std::string known;
  {
    std::lock_guard lock(g_mutex);
    auto it = registry().find(*scheme);
    if (it != registry().end()) factory = it->second;
    for (const auto& [name, f] : registry()) known += (known.empty() ? "" : ", ") + name + "://";
  }
  if (!factory) {
    fail(ErrorCode::kUnsupported, "'{}': no store for URLs of scheme '{}' (known: {})", location,
         *scheme, known);
  }
  return factory(location, options);
}

void register_store_scheme(std::string scheme, StoreFactory factory) {
  std::lock_guard lock(g_mutex);
  registry()[std::move(scheme)] = std::move(factory);
}

}  // namespace chute
