#include "chute/array/array_join.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "chute/util/error.h"

namespace chute {

ArrayPtr concat_arrays(const std::vector<ArrayPtr>& members, const std::string& name) {
  if (members.empty()) fail(ErrorCode::kInvalidArgument, "'{}': no arrays to join", name);
  const ArrayMetadata& first = members[0]->metadata();
  if (first.shape.empty()) {
    fail(ErrorCode::kInvalidArgument, "'{}': a scalar array cannot be joined along an axis", name);
  }
  auto join = std::make_shared<ArrayJoin>();
  join->starts.push_back(0);
  for (const ArrayPtr& member : members) {
    const ArrayMetadata& m = member->metadata();
    auto differ = [&](const std::string& what) {
      fail(ErrorCode::kInvalidArgument, "'{}': '{}' differs from '{}': {}", name, member->name(),
           members[0]->name(), what);
    };
    if (m.data_type != first.data_type) {
      differ(fmt::format("dtype {} against {}", m.data_type.name(), first.data_type.name()));
    }
    if (m.shape.size() != first.shape.size() ||
        !std::equal(m.shape.begin() + 1, m.shape.end(), first.shape.begin() + 1)) {
      differ(fmt::format("shape [{}] against [{}] (only the first extent may differ)",
                         fmt::join(m.shape, ", "), fmt::join(first.shape, ", ")));
    }
    if (m.fill_value != first.fill_value || m.fill_value_null != first.fill_value_null) {
      differ("the fill value");
    }
    join->members.push_back(member);
    join->starts.push_back(join->starts.back() + m.shape[0]);
  }
  ArrayMetadata metadata = first;
  metadata.shape[0] = join->starts.back();
  return std::make_shared<const Array>(std::move(join), std::move(metadata), name);
}

ArrayPtr slice_array(ArrayPtr parent, int axis, int64_t index, const std::string& name) {
  const ArrayMetadata& p = parent->metadata();
  if (axis < 0 || static_cast<size_t>(axis) >= p.shape.size() || index < 0 ||
      index >= p.shape[static_cast<size_t>(axis)]) {
    fail(ErrorCode::kOutOfRange, "array '{}': index {} of axis {} is outside its shape [{}]",
         parent->name(), index, axis, fmt::join(p.shape, ", "));
  }
  ArrayMetadata metadata = p;
  metadata.shape.erase(metadata.shape.begin() + axis);
  metadata.chunk_shape.erase(metadata.chunk_shape.begin() + axis);
  if (metadata.dimension_names.size() == p.shape.size()) {
    metadata.dimension_names.erase(metadata.dimension_names.begin() + axis);
  }
  auto join = std::make_shared<ArrayJoin>();
  join->parent = std::move(parent);
  join->axis = axis;
  join->index = index;
  return std::make_shared<const Array>(std::move(join), std::move(metadata), name);
}

}  // namespace chute
