// Opening a path with the first format that recognises it.

#include "chute/format/open.h"

#include "chute/format/format.h"
#include "chute/util/error.h"

namespace chute {
namespace {

std::string strip_trailing_slashes(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

}  // namespace

std::pair<const Format*, FormatMatch> find_format(const std::string& path) {
  for (const Format* format : formats()) {
    if (auto match = format->recognise(path)) return {format, std::move(*match)};
  }
  fail(ErrorCode::kNotFound, "'{}': no format chute reads recognises it", path);
}

ArrayPtr open_array(const std::string& path) { return open_array(path, default_cache_options()); }

ArrayPtr open_array(const std::string& path, const CacheOptions& cache) {
  const std::string clean = strip_trailing_slashes(path);
  auto [format, match] = find_format(clean);
  return format->open_array(match, clean, cache);
}

Group open_group(const std::string& path) { return open_group(path, default_cache_options()); }

Group open_group(const std::string& path, const CacheOptions& cache) {
  const std::string clean = strip_trailing_slashes(path);
  auto [format, match] = find_format(clean);
  return format->open_group(match, clean, cache);
}

bool is_group(const std::string& path) {
  const std::string clean = strip_trailing_slashes(path);
  auto [format, match] = find_format(clean);
  return format->is_group(match, clean);
}

std::string format_name(const std::string& path) {
  return std::string(find_format(strip_trailing_slashes(path)).first->name());
}

}  // namespace chute
