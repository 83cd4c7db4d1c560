#pragma once
// Limits on JSON documents read from storage (metadata, attributes, consolidated metadata,
// manifests), checked before a parser sees them: nlohmann::json builds, copies and prints values
// recursively, so a document nested 100,000 levels deep would overflow the stack.

#include <cstddef>
#include <string>
#include <string_view>

namespace chute {

/// Deeper nesting of arrays/objects than any Zarr metadata needs (zarr-python's own json
/// module gives up near 1,000).
inline constexpr size_t kMaxJsonDepth = 256;
/// Larger than any metadata document chute expects (consolidated metadata of ~100,000 arrays).
inline constexpr size_t kMaxJsonBytes = size_t{256} << 20;

/// Throws kInvalidMetadata "<context>: JSON nested deeper than 256 levels ..." or "... is N
/// bytes, more than the limit ..." when `text` breaks a limit. A linear scan that skips strings;
/// it does not validate the document otherwise.
void check_json_limits(std::string_view text, const std::string& context,
                       size_t max_depth = kMaxJsonDepth, size_t max_bytes = kMaxJsonBytes);

}  // namespace chute
