#pragma once
// Turns a location into a store: a local path -> FileStore, "http://" / "https://" ->
// HttpStore, other schemes ("s3://", "gs://") -> the factory registered for them.
// Every opener (Zarr, the Loader, the CLI) goes through open_store, so a URL works wherever a
// path does.

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "chute/store/store.h"

namespace chute {

/// Options for stores that need them (object stores); plain files and HTTP ignore them.
/// Keys are scheme-specific ("endpoint_url", "region", "anonymous", "profile").
struct StoreOpenOptions {
  std::map<std::string, std::string> settings;
};

using StoreFactory =
    std::function<StorePtr(std::string_view location, const StoreOpenOptions& options)>;

/// The scheme of "scheme://rest" (lower-case letters, digits, '+', '-', '.'), or nullopt for
/// a local path (including "C:/..." style and relative paths).
std::optional<std::string> url_scheme(std::string_view location);

inline bool is_url(std::string_view location) { return url_scheme(location).has_value(); }

/// The store for `location`. kUnsupported for an unknown scheme (naming the known ones).
StorePtr open_store(std::string_view location, const StoreOpenOptions& options = {});

/// Adds or replaces the factory for `scheme` (without "://"). Built-in schemes are listed in
/// open_store.cc (builtin_schemes()); a scheme whose code lives in chute_core belongs there,
/// since a self-registering static object in a static library may be dropped by the linker.
void register_store_scheme(std::string scheme, StoreFactory factory);

/// "https://host/a/b" -> "https://host" (where walking up a URL path must stop); for a local
/// path "".
std::string url_root(std::string_view location);

}  // namespace chute
