#include "chute/pipeline/batch.h"

#include "chute/util/error.h"

namespace chute {

int64_t BatchArray::elements() const {
  int64_t n = 1;
  for (int64_t extent : shape) n *= extent;
  return n;
}

const BatchArray& Batch::operator[](std::string_view name) const {
  for (const BatchArray& array : arrays) {
    if (array.name == name) return array;
  }
  std::string names;
  for (const BatchArray& array : arrays) names += (names.empty() ? "" : ", ") + array.name;
  fail(ErrorCode::kInvalidArgument, "batch has no array '{}' (it has: {})", name, names);
}

}  // namespace chute
