#include "chute/array/read_plan.h"

#include <algorithm>
#include <functional>

#include "chute/array/array.h"
#include "chute/array/array_join.h"
#include "chute/array/array_virtual.h"
#include "chute/array/chunk_grid.h"
#include "chute/array/strided_copy.h"
#include "chute/util/clock.h"
#include "chute/util/error.h"

namespace chute {
size_t ReadPlan::ChunkIdHash::operator()(const ChunkId& id) const {
  const size_t a = std::hash<const void*>()(id.array);
  const size_t c = std::hash<int64_t>()(id.chunk);
  return a ^ (c + 0x9e3779b97f4a7c15ULL + (a << 6) + (a >> 2));
}

void ReadPlan::add(const Array& array, std::span<const int64_t> start, const StridedView& dst,
                   std::string context, const ElementConvert* convert) {
  array.check_box(start, dst.shape);
  if (convert != nullptr && convert->stored != array.metadata().data_type) {
    fail(ErrorCode::kInvalidArgument, "array '{}': a conversion from {}, but the array holds {}",
         array.name(), convert->stored.name(), array.metadata().data_type.name());
  }
  if (dst.byte_strides.size() != dst.shape.size()) {
    fail(ErrorCode::kInvalidArgument, "array '{}': a destination of rank {} with {} strides",
         array.name(), dst.shape.size(), dst.byte_strides.size());
  }
  const size_t rank = array.rank();
  if (std::any_of(dst.shape.begin(), dst.shape.end(), [](int64_t n) { return n == 0; })) return;
  if (const ArrayJoin* join = array.join()) {
    if (join->mapped) {
      add_virtual_box(*this, array, start, dst, std::move(context), convert);
      return;
    }
    add_joined(*join, start, dst, std::move(context), convert);
    return;
  }
  if (array.source().mapped() != nullptr) {
    add_mapped(array, start, dst, std::move(context), convert);
    return;
  }

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

  // One row of chunks (outer coordinates fixed, the innermost one varying) at a time, so a row
  // whose chunks split the box's innermost dimension can become a gather group.
  for (;;) {
    row_.clear();
    bool fresh = true;
    for (;;) {
      // The part of the box inside the chunk at `coords`.
      ChunkTarget target;
      target.chunk_start.resize(rank);
      target.dst.shape.resize(rank);
      target.dst.byte_strides = dst.byte_strides;
      target.dst.data = dst.data;
      target.convert = convert;
      target.tag = target_tag_;
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
      fresh = fresh && inserted;
      row_.push_back(it->second);
      tasks_[it->second].targets.push_back(std::move(target));
      if (rank == 0 || ++coords[rank - 1] > last[rank - 1]) break;
    }
    add_row(array, row_, fresh);

    if (rank == 0) return;
    coords[rank - 1] = first[rank - 1];
    size_t d = rank - 1;
    for (;;) {
      if (d == 0) return;
      --d;
      if (++coords[d] <= last[d]) break;
      coords[d] = first[d];
    }
  }
}

void ReadPlan::add_joined(const ArrayJoin& join, std::span<const int64_t> start,
                          const StridedView& dst, std::string context,
                          const ElementConvert* convert) {
  if (join.parent) {  // one index of an axis: the same box with that axis of extent 1
    std::vector<int64_t> parent_start(start.begin(), start.end());
    parent_start.insert(parent_start.begin() + join.axis, join.index);
    StridedView view = dst;
    // The stride a C-contiguous destination would have there, so whole chunks still decode
    // straight into it.
    const size_t axis = static_cast<size_t>(join.axis);
    const int64_t stride = axis < dst.shape.size() ? dst.byte_strides[axis] * dst.shape[axis]
                           : dst.byte_strides.empty()
                               ? static_cast<int64_t>(join.parent->metadata().data_type.size)
                               : dst.byte_strides.back();
    view.shape.insert(view.shape.begin() + join.axis, 1);
    view.byte_strides.insert(view.byte_strides.begin() + join.axis, stride);
    add(*join.parent, parent_start, view, std::move(context), convert);
    return;
  }
  // Along axis 0: the part of the box inside each member, at its place in the destination.
  const int64_t lo = start[0], hi = start[0] + dst.shape[0];
  auto it = std::upper_bound(join.starts.begin(), join.starts.end(), lo);
  for (size_t m = static_cast<size_t>(it - join.starts.begin()) - 1;
       m < join.members.size() && join.starts[m] < hi; ++m) {
    const int64_t a = std::max(lo, join.starts[m]), b = std::min(hi, join.starts[m + 1]);
    if (a >= b) continue;
    std::vector<int64_t> member_start(start.begin(), start.end());
    member_start[0] = a - join.starts[m];
    StridedView view = dst;
    view.shape[0] = b - a;
    view.data = dst.data + (a - lo) * dst.byte_strides[0];
    add(*join.members[m], member_start, view, context, convert);
  }
}

void ReadPlan::add_mapped(const Array& array, std::span<const int64_t> start,
                          const StridedView& dst, std::string context,
                          const ElementConvert* convert) {
  if (extend_mapped(array, start, dst, context, convert)) return;
  // Pieces along the outermost axis that has more than one index, each of at least one index
  // and about kMappedPieceBytes (a 64³ float32 channel of a crop: one piece).
  const size_t rank = array.rank();
  size_t axis = 0;
  while (axis + 1 < rank && dst.shape[axis] == 1) ++axis;
  int64_t bytes_per_index = array.metadata().data_type.size;
  for (size_t d = axis + 1; d < rank; ++d) bytes_per_index *= dst.shape[d];
  const int64_t extent = rank == 0 ? 1 : dst.shape[axis];
  const int64_t step = std::clamp<int64_t>(kMappedPieceBytes / bytes_per_index, 1, extent);
  for (int64_t lo = 0; lo < extent; lo += step) {
    ChunkTask& task = tasks_.emplace_back();
    task.array = &array;
    task.chunk_coords.assign(rank, 0);  // the target's chunk_start is its place in the array
    task.context = context;
    ChunkTarget& target = task.targets.emplace_back();
    target.chunk_start.assign(start.begin(), start.end());
    target.dst = dst;
    target.convert = convert;
    target.tag = target_tag_;
    if (rank > 0) {
      target.chunk_start[axis] += lo;
      target.dst.shape[axis] = std::min(step, extent - lo);
      target.dst.data += lo * dst.byte_strides[axis];
    }
    items_.push_back({tasks_.size() - 1, 1});
  }
}

bool ReadPlan::extend_mapped(const Array& array, std::span<const int64_t> start,
                             const StridedView& dst, const std::string& context,
                             const ElementConvert* convert) {
  if (tasks_.empty() || items_.empty()) return false;
  ChunkTask& last = tasks_.back();
  const WorkItem& item = items_.back();
  if (last.array != &array || last.targets.size() != 1 || last.context != context ||
      item.first != tasks_.size() - 1 || item.count != 1) {
    return false;
  }
  ChunkTarget& target = last.targets.back();
  if (target.convert != convert || target.tag != target_tag_) return false;
  const size_t rank = array.rank();
  size_t axis = rank;  // the one axis along which the boxes differ
  for (size_t d = 0; d < rank; ++d) {
    if (target.chunk_start[d] == start[d] && target.dst.shape[d] == dst.shape[d]) continue;
    if (axis != rank) return false;
    axis = d;
  }
  if (axis == rank || start[axis] != target.chunk_start[axis] + target.dst.shape[axis]) {
    return false;
  }
  for (size_t d = 0; d < rank; ++d) {
    if (d != axis && target.dst.byte_strides[d] != dst.byte_strides[d]) return false;
  }
  // Along an axis of extent 1 the stride is free: the step to the next box's destination.
  const int64_t stride =
      target.dst.shape[axis] == 1 ? dst.data - target.dst.data : target.dst.byte_strides[axis];
  if (stride == 0 || dst.data != target.dst.data + target.dst.shape[axis] * stride ||
      (dst.shape[axis] > 1 && dst.byte_strides[axis] != stride)) {
    return false;
  }
  int64_t bytes = array.metadata().data_type.size;
  for (size_t d = 0; d < rank; ++d) {
    bytes *= d == axis ? target.dst.shape[d] + dst.shape[d] : dst.shape[d];
  }
  if (bytes > 4 * kMappedPieceBytes) return false;  // pieces stay small enough to share out
  target.dst.shape[axis] += dst.shape[axis];
  target.dst.byte_strides[axis] = stride;
  return true;
}

void ReadPlan::add_row(const Array& array, std::span<const size_t> row, bool fresh) {
  // Worth gathering: several fresh chunks writing short runs into a destination that has an
  // outer dimension to tile along.
  const size_t rank = array.rank();
  const int64_t item_size = array.metadata().data_type.size;
  const int64_t chunk_nbytes = array.read_chunk_nbytes();
  const size_t max_group = static_cast<size_t>(kGatherMaxStagingBytes / chunk_nbytes);
  // Converted targets are placed run by run (place_target), not interleaved.
  bool gather = fresh && row.size() >= 2 && max_group >= 2 &&
                tasks_[row[0]].targets.back().convert == nullptr;
  if (gather) {
    const StridedView& dst = tasks_[row[0]].targets.back().dst;
    const bool short_runs = dst.byte_strides[rank - 1] == item_size &&
                            array.read_chunk_shape()[rank - 1] * item_size < kGatherMaxRunBytes;
    const bool tileable =
        std::any_of(dst.shape.begin(), dst.shape.end() - 1, [](int64_t n) { return n > 1; });
    gather = short_runs && tileable;
  }
  if (!gather) {
    for (size_t i = 0; i < row.size(); ++i) {
      if (tasks_[row[i]].targets.size() == 1) items_.push_back({row[i], 1});  // a new task
    }
    return;
  }
  // Fresh tasks of one row were created one after another: consecutive indices.
  for (size_t i = 0; i < row.size(); i += max_group) {
    items_.push_back({row[i], std::min(max_group, row.size() - i)});
  }
}

size_t ReadPlan::gathered_task_count() const {
  size_t n = 0;
  for (const WorkItem& item : items_) n += item.count > 1 ? item.count : 0;
  return n;
}

void ReadPlan::execute_item(const WorkItem& item, ReadScratch& scratch, ReadStats* stats,
                            bool fetched) {
  if (item.count == 1) {
    tasks_[item.first].array->execute(tasks_[item.first], scratch, stats,
                                      fetched ? fetched_of(item.first) : nullptr);
  } else {
    execute_gathered(item, scratch, stats, fetched);
  }
  // Decoded: the stored bytes are not needed any more (the decode swapped them into the
  // worker's scratch; the buffer it had goes back in their place).
  if (fetched) give_back_fetched(item.first, item.first + item.count);
  if (task_done_) {
    for (size_t t = item.first; t < item.first + item.count; ++t) task_done_(tasks_[t]);
  }
}

void ReadPlan::execute_gathered(const WorkItem& item, ReadScratch& scratch, ReadStats* stats,
                                bool fetched) {
  const Array& array = *tasks_[item.first].array;
  const auto chunk_nbytes = static_cast<size_t>(array.read_chunk_nbytes());
  const int64_t item_size = array.metadata().data_type.size;
  const auto& chunk_shape = array.read_chunk_shape();
  scratch.gather.resize_for_overwrite(item.count * chunk_nbytes);
  for (size_t j = 0; j < item.count; ++j) {
    array.load(tasks_[item.first + j], scratch, scratch.gather.data() + j * chunk_nbytes, stats,
               fetched ? fetched_of(item.first + j) : nullptr);
  }

  const auto start = Clock::now();
  // The group's first targets share every extent but the innermost one, and their position in
  // the chunk outside it: one interleaved pass writes the destination front to back.
  const StridedView& lead = tasks_[item.first].targets[0].dst;
  const size_t outer = lead.shape.size() - 1;
  int64_t src_strides[kMaxCopyRank];
  int64_t stride = item_size;
  for (size_t d = outer + 1; d-- > 0;) {
    src_strides[d] = stride;
    stride *= chunk_shape[d];
  }
  std::vector<InterleavedRun>& runs = scratch.runs;
  runs.clear();
  for (size_t j = 0; j < item.count; ++j) {
    const ChunkTarget& target = tasks_[item.first + j].targets[0];
    if (!std::equal(lead.shape.begin(), lead.shape.begin() + outer, target.dst.shape.begin())) {
      fail(ErrorCode::kInternal, "gather group of array '{}' with unequal outer extents",
           array.name());
    }
    int64_t offset = 0;
    for (size_t d = 0; d <= outer; ++d) offset += target.chunk_start[d] * src_strides[d];
    runs.push_back({scratch.gather.data() + j * chunk_nbytes + offset, target.dst.data,
                    target.dst.shape[outer] * item_size});
  }
  interleaved_copy(runs, {lead.shape.data(), outer}, {lead.byte_strides.data(), outer},
                   {src_strides, outer});
  // Targets added later by other boxes that share these chunks.
  for (size_t j = 0; j < item.count; ++j) {
    const ChunkTask& task = tasks_[item.first + j];
    for (size_t t = 1; t < task.targets.size(); ++t) {
      place_target(scratch.gather.data() + j * chunk_nbytes, chunk_shape, task.targets[t],
                   item_size);
    }
  }
  if (stats) {
    stats->assemble_ns += elapsed_ns(start);
  }
}

void ReadPlan::execute(ThreadPool* pool, std::vector<ReadScratch>& scratch, ReadStats* stats) {
  execute(pool, scratch, stats, kAutoIoConcurrency);
}

void ReadPlan::execute(ThreadPool* pool, std::vector<ReadScratch>& scratch, ReadStats* stats,
                       size_t io_concurrency) {
  start(pool, scratch, stats, io_concurrency);
  finish(pool, scratch, stats);
}

void ReadPlan::start(ThreadPool* pool, std::vector<ReadScratch>& scratch, ReadStats* stats,
                     size_t io_concurrency, std::shared_ptr<Budget> budget) {
  cancel();
  const size_t workers = pool ? pool->size() : 1;
  if (scratch.size() < workers) scratch.resize(workers);
  last_io_concurrency_ = 1;
  running_.reset();
  mode_ = Mode::kWorkers;
  if (workers > 1 && items_.size() == 1 && items_[0].count == 1) {  // one chunk: split it
    mode_ = Mode::kSplit;
    return;
  }
  const size_t window = items_.size() > 1 ? resolve_io_concurrency(io_concurrency) : 1;
  if (window > 1) {
    last_io_concurrency_ = window;
    mode_ = Mode::kInFlight;
    start_in_flight(scratch, stats, window,
                    budget ? std::move(budget) : std::make_shared<Budget>());
  }
}

void ReadPlan::finish(ThreadPool* pool, std::vector<ReadScratch>& scratch, ReadStats* stats) {
  const Mode mode = mode_;
  mode_ = Mode::kIdle;
  switch (mode) {
    case Mode::kIdle:
      return;
    case Mode::kSplit: {
      const ChunkTask& task = tasks_[items_[0].first];
      task.array->execute_parallel(task, *pool, scratch, stats);
      if (task_done_) task_done_(task);
      return;
    }
    case Mode::kInFlight:
      finish_in_flight(pool, scratch, stats);
      return;
    case Mode::kWorkers:
      break;
  }
  if (pool == nullptr || items_.size() <= 1) {
    for (const WorkItem& item : items_) execute_item(item, scratch[0], stats);
    return;
  }
  pool->parallel_for(items_.size(), [&](size_t i, size_t worker) {
    execute_item(items_[i], scratch[worker], stats);
  });
}

void ReadPlan::cancel() {
  if (mode_ == Mode::kInFlight) settle();
  mode_ = Mode::kIdle;
}

ReadPlan::~ReadPlan() { cancel(); }

void ReadPlan::clear() {
  cancel();
  tasks_.clear();
  items_.clear();
  index_.clear();
  target_tag_ = -1;
}

}  // namespace chute
