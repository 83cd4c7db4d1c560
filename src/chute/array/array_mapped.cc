// Reads from mapped sources (contiguous HDF5 datasets, .npy files): the stored elements are the
// array itself, so each target's box is copied straight out of the mapping, with no decode and
// no staging; elements stored in the other byte order are swapped in the destination.

#include <algorithm>
#include <cstring>

#include "chute/array/array.h"
#include "chute/array/read_plan.h"
#include "chute/store/single_file_store.h"
#include "chute/util/clock.h"

namespace chute {
namespace {

/// Reverses the bytes of every `unit`-byte group of every element of `dst` (elements of
/// `item_size` bytes, a multiple of unit).
void swap_bytes(const StridedView& dst, int64_t item_size, size_t unit) {
  const size_t n = dst.shape.size();
  int64_t count = 1;
  for (int64_t extent : dst.shape) count *= extent;
  if (count == 0) return;
  int64_t index[kMaxCopyRank] = {};
  std::byte* element = dst.data;
  for (int64_t i = 0; i < count; ++i) {
    for (int64_t at = 0; at < item_size; at += static_cast<int64_t>(unit)) {
      std::reverse(element + at, element + at + unit);
    }
    for (size_t d = n; d-- > 0;) {
      element += dst.byte_strides[d];
      if (++index[d] < dst.shape[d]) break;
      element -= dst.byte_strides[d] * dst.shape[d];
      index[d] = 0;
    }
  }
}

/// Copies box [start, start + dst.shape) of the mapped array of `shape` into dst.
void copy_box(const MappedElements& mapped, std::span<const int64_t> shape,
              std::span<const int64_t> start, const StridedView& dst, int64_t item_size) {
  if (!mapped.fortran_order) {
    strided_copy(mapped.data, shape, start, dst, item_size);
  } else {  // C order over the reversed axes
    std::vector<int64_t> r_shape(shape.rbegin(), shape.rend());
    std::vector<int64_t> r_start(start.rbegin(), start.rend());
    StridedView r_dst{dst.data,
                      {dst.shape.rbegin(), dst.shape.rend()},
                      {dst.byte_strides.rbegin(), dst.byte_strides.rend()}};
    strided_copy(mapped.data, r_shape, r_start, r_dst, item_size);
  }
  if (mapped.swap_unit) swap_bytes(dst, item_size, mapped.swap_unit);
}

}  // namespace

void Array::copy_mapped(const ChunkTask& task, ReadScratch& scratch, ReadStats* stats) const {
  const auto start = Clock::now();
  const MappedElements& mapped = *source_->mapped();
  const size_t n = rank();
  const int64_t item_size = metadata_.data_type.size;
  int64_t box_start[kMaxCopyRank];
  int64_t bytes = 0;
  mapped.file->read_mapped([&] {
    for (const ChunkTarget& target : task.targets) {
      int64_t elements = 1;
      for (size_t d = 0; d < n; ++d) {
        box_start[d] = task.chunk_coords[d] * read_chunk_shape_[d] + target.chunk_start[d];
        elements *= target.dst.shape[d];
      }
      if (target.convert == nullptr) {
        copy_box(mapped, metadata_.shape, {box_start, n}, target.dst, item_size);
      } else {  // byte order and Fortran order handled by copy_box, then one converting pass
        scratch.staging.resize_for_overwrite(static_cast<size_t>(elements * item_size));
        StridedView raw =
            StridedView::contiguous(scratch.staging.data(), target.dst.shape, item_size);
        copy_box(mapped, metadata_.shape, {box_start, n}, raw, item_size);
        const int64_t zeros[kMaxCopyRank] = {};
        strided_transform(raw.data, raw.shape, {zeros, n}, target.dst, *target.convert);
      }
      bytes += elements * item_size;
    }
  });
  if (stats) {
    stats->read_ns += elapsed_ns(start);
    stats->chunks += 1;
    stats->bytes_read += bytes;
    stats->bytes_decoded += bytes;
  }
}

}  // namespace chute
