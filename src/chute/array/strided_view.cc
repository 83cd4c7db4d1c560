#include "chute/array/strided_view.h"

namespace chute {

StridedView StridedView::contiguous(std::byte* data, std::vector<int64_t> shape,
                                    int64_t item_size) {
  StridedView view;
  view.data = data;
  view.byte_strides.resize(shape.size());
  int64_t stride = item_size;
  for (size_t d = shape.size(); d-- > 0;) {
    view.byte_strides[d] = stride;
    stride *= shape[d];
  }
  view.shape = std::move(shape);
  return view;
}

bool StridedView::is_contiguous(int64_t item_size) const {
  int64_t expected = item_size;
  for (size_t d = shape.size(); d-- > 0;) {
    // A dimension of extent 1 never steps, so its stride does not matter.
    if (shape[d] != 1 && byte_strides[d] != expected) return false;
    expected *= shape[d];
  }
  return true;
}

}  // namespace chute
