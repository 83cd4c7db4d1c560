#include "chute/util/json_limits.h"

#include "chute/util/error.h"

namespace chute {

void check_json_limits(std::string_view text, const std::string& context, size_t max_depth,
                       size_t max_bytes) {
  if (text.size() > max_bytes) {
    fail(ErrorCode::kInvalidMetadata,
         "{}: the JSON document is {} bytes, more than the limit of {} bytes", context, text.size(),
         max_bytes);
  }
  size_t depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped character cannot end the string
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    switch (c) {
      case '"':
        in_string = true;
        break;
      case '[':
      case '{':
        if (++depth > max_depth) {
          fail(ErrorCode::kInvalidMetadata,
               "{}: JSON nested deeper than {} levels (at byte {}); metadata never needs that",
               context, max_depth, i);
        }
        break;
      case ']':
      case '}':
        if (depth > 0) --depth;
        break;
      default:
        break;
    }
  }
}

}  // namespace chute
