#include <fmt/ranges.h>

#include <algorithm>
#include <functional>

#include "chute/array/array.h"
#include "chute/array/chunk_grid.h"
#include "chute/array/strided_copy.h"
#include "chute/util/error.h"

namespace chute {
namespace {

std::string describe_box(std::span<const int64_t> start, std::span<const int64_t> shape) {
  std::string box = "[";
  for (size_t d = 0; d < start.size(); ++d) {
    box += fmt::format("{}{}:{}", d ? ", " : "", start[d], start[d] + shape[d]);
  }
  return box + "]";
}

void check_box(const Array& array, std::span<const int64_t> start, const StridedView& dst) {
  const size_t rank = array.rank();
  if (start.size() != rank || dst.shape.size() != rank || dst.byte_strides.size() != rank) {
    fail(ErrorCode::kInvalidArgument,
         "array '{}': expected a box of rank {}, found start of rank {} and a destination of "
         "rank {} with {} strides",
         array.name(), rank, start.size(), dst.shape.size(), dst.byte_strides.size());
  }
  const auto& shape = array.metadata().shape;
  for (size_t d = 0; d < rank; ++d) {
    if (start[d] < 0 || dst.shape[d] < 0 || start[d] > shape[d] - dst.shape[d]) {
      fail(ErrorCode::kOutOfRange, "array '{}': box {} is outside the array's shape [{}]",
           array.name(), describe_box(start, dst.shape), fmt::join(shape, ", "));
    }
  }
}

}  // namespace

size_t ReadPlan::ChunkIdHash::operator()(const ChunkId& id) const {
  const size_t a = std::hash<const void*>()(id.array);
  const size_t c = std::hash<int64_t>()(id.chunk);
  return a ^ (c + 0x9e3779b97f4a7c15ULL + (a << 6) + (a >> 2));
}

void ReadPlan::add(const Array& array, std::span<const int64_t> start, const StridedView& dst,
                   std::string context) {
  check_box(array, start, dst);
  const size_t rank = array.rank();
  if (std::any_of(dst.shape.begin(), dst.shape.end(), [](int64_t n) { return n == 0; })) return;

  const auto& chunk = array.read_chunk_shape();
  const auto& grid = array.read_grid_shape();
  int64_t first[kMaxCopyRank];
  int64_t last[kMaxCopyRank];
  int64_t coords[kMaxCopyRank];
  for (size_t d = 0; d < rank; ++d) {
    first[d] = start[d] / chunk[d];
    last[d] = (start[d] + dst.shape[d] - 1) / chunk[d];
    coords[d] = first[d];
  }

  for (;;) {
    // The part of the box inside the chunk at `coords`.
    ChunkTarget target;
    target.chunk_start.resize(rank);
    target.dst.shape.resize(rank);
    target.dst.byte_strides = dst.byte_strides;
    target.dst.data = dst.data;
    for (size_t d = 0; d < rank; ++d) {
      const int64_t origin = coords[d] * chunk[d];
      const int64_t lo = std::max(start[d], origin);
      const int64_t hi = std::min(start[d] + dst.shape[d], origin + chunk[d]);
      target.chunk_start[d] = lo - origin;
      target.dst.shape[d] = hi - lo;
      target.dst.data += (lo - start[d]) * dst.byte_strides[d];
    }

    const ChunkId id{&array, linear_chunk_index({coords, rank}, grid)};
    auto [it, inserted] = index_.try_emplace(id, tasks_.size());
    if (inserted) {
      ChunkTask& task = tasks_.emplace_back();
      task.array = &array;
      task.chunk_coords.assign(coords, coords + rank);
      task.context = context;
    }
    tasks_[it->second].targets.push_back(std::move(target));

    size_t d = rank;
    for (;;) {
      if (d == 0) return;
      --d;
      if (++coords[d] <= last[d]) break;
      coords[d] = first[d];
    }
  }
}

void ReadPlan::execute(ThreadPool* pool, std::vector<ReadScratch>& scratch, ReadStats* stats) {
  const size_t workers = pool ? pool->size() : 1;
  if (scratch.size() < workers) scratch.resize(workers);
  if (pool == nullptr || tasks_.size() <= 1) {
    for (const ChunkTask& task : tasks_) task.array->execute(task, scratch[0], stats);
    return;
  }
  pool->parallel_for(tasks_.size(), [&](size_t i, size_t worker) {
    tasks_[i].array->execute(tasks_[i], scratch[worker], stats);
  });
}

void ReadPlan::clear() {
  tasks_.clear();
  index_.clear();
}

}  // namespace chute
