// The formats chute reads, in the order a path is offered to them: those recognised by a file's
// contents first, Zarr (folders, stores and URLs) last.

#include "chute/format/format.h"

namespace chute {

std::span<const Format* const> formats() {
  static const Format* const list[] = {
      &npy_file_format(),
      &hdf5_file_format(),
      &reference_set_format(),
      &zarr_store_format(),
  };
  return list;
}

}  // namespace chute
