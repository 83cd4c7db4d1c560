#include "chute/array/touched_ranges.h"

#include <algorithm>

#include "chute/util/error.h"

namespace chute {
namespace {

// Appends the runs of one box: the trailing dimensions the box spans whole (and the first one it
// does not) form one run; the leading ones are walked like an odometer.
void append_runs(const ChunkTarget& target, std::span<const int64_t> chunk_shape, int64_t item_size,
                 std::vector<std::pair<uint64_t, uint64_t>>& out) {
  const size_t n = chunk_shape.size();
  const std::vector<int64_t>& shape = target.dst.shape;
  const std::vector<int64_t>& start = target.chunk_start;
  for (size_t d = 0; d < n; ++d) {
    if (shape[d] <= 0) return;
  }
  int64_t strides[kMaxCopyRank];
  int64_t stride = item_size;
  for (size_t d = n; d-- > 0;) {
    strides[d] = stride;
    stride *= chunk_shape[d];
  }
  // Dimensions [inner, n) are one run of `run` bytes.
  size_t inner = n;
  int64_t run = item_size;
  while (inner > 0) {
    --inner;
    run *= shape[inner];
    if (start[inner] != 0 || shape[inner] != chunk_shape[inner]) break;
  }
  if (n == 0) {
    out.emplace_back(0, static_cast<uint64_t>(item_size));
    return;
  }
  int64_t base = 0;
  for (size_t d = 0; d < n; ++d) base += start[d] * strides[d];
  int64_t index[kMaxCopyRank] = {};
  while (true) {
    int64_t offset = base;
    for (size_t d = 0; d < inner; ++d) offset += index[d] * strides[d];
    out.emplace_back(static_cast<uint64_t>(offset), static_cast<uint64_t>(offset + run));
    size_t d = inner;
    while (d > 0) {
      --d;
      if (++index[d] < shape[d]) break;
      index[d] = 0;
      if (d == 0) return;
    }
    if (inner == 0) return;
  }
}

}  // namespace

void touched_ranges(std::span<const ChunkTarget> targets, std::span<const int64_t> chunk_shape,
                    int64_t item_size, uint64_t max_gap,
                    std::vector<std::pair<uint64_t, uint64_t>>& out) {
  out.clear();
  if (chunk_shape.size() > kMaxCopyRank) {
    fail(ErrorCode::kInternal, "touched ranges of a rank-{} chunk", chunk_shape.size());
  }
  for (const ChunkTarget& target : targets) append_runs(target, chunk_shape, item_size, out);
  // One box's runs come in order; duplicates from other samples interleave.
  if (targets.size() > 1) std::sort(out.begin(), out.end());
  size_t kept = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    if (kept > 0 && out[i].first <= out[kept - 1].second + max_gap) {
      out[kept - 1].second = std::max(out[kept - 1].second, out[i].second);
    } else {
      out[kept++] = out[i];
    }
  }
  out.resize(kept);
}

}  // namespace chute
