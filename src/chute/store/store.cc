#include "chute/store/store.h"

namespace chute {

std::string join_key(std::string_view a, std::string_view b) {
  if (a.empty()) return std::string(b);
  if (b.empty()) return std::string(a);
  std::string key(a);
  if (key.back() != '/') key += '/';
  key += b;
  return key;
}

}  // namespace chute
