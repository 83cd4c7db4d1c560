#include "chute/array/array_virtual.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>
#include <unordered_set>

#include "chute/array/array_join.h"
#include "chute/array/read_plan.h"
#include "chute/util/error.h"

namespace chute {
namespace {

/// The parts of `runs` inside [lo, hi), into `out`.
void clip_virtual_runs(const std::vector<VirtualRun>& runs, int64_t lo, int64_t hi,
                       std::vector<VirtualRun>& out) {
  out.clear();
  // The first run ending after lo (runs are disjoint and ordered: their ends increase).
  auto it = std::upper_bound(runs.begin(), runs.end(), lo, [](int64_t v, const VirtualRun& r) {
    return v < r.target + r.length;
  });
  for (; it != runs.end() && it->target < hi; ++it) {
    const int64_t a = std::max(lo, it->target);
    const int64_t b = std::min(hi, it->target + it->length);
    if (a < b) out.push_back({a, it->source + (a - it->target), b - a});
  }
}

bool virtual_runs_meet(const std::vector<VirtualRun>& a, const std::vector<VirtualRun>& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const int64_t a_end = a[i].target + a[i].length, b_end = b[j].target + b[j].length;
    if (a[i].target < b_end && b[j].target < a_end) return true;
    if (a_end <= b_end) {
      ++i;
    } else {
      ++j;
    }
  }
  return false;
}

void check_virtual_piece(const VirtualPiece& p, const ArrayMetadata& metadata,
                         const std::string& name) {
  auto bad = [&](const std::string& what, ErrorCode code = ErrorCode::kInvalidArgument) {
    fail(code, "virtual array '{}': the piece from '{}' {}", name,
         p.source ? p.source->name() : std::string("(none)"), what);
  };
  if (!p.source) bad("has no source array");
  const ArrayMetadata& s = p.source->metadata();
  if (s.data_type != metadata.data_type) {
    bad(fmt::format("holds {}, the virtual array {}", s.data_type.name(),
                    metadata.data_type.name()),
        ErrorCode::kUnsupported);
  }
  const size_t rank = metadata.shape.size();
  if (p.source_axis.size() != rank || p.runs.size() != rank ||
      p.source_index.size() != s.shape.size()) {
    bad("does not match the ranks of the arrays");
  }
  std::vector<bool> used(s.shape.size(), false);
  for (size_t d = 0; d < rank; ++d) {
    const int axis = p.source_axis[d];
    if (axis >= 0) {
      if (static_cast<size_t>(axis) >= s.shape.size() || used[static_cast<size_t>(axis)]) {
        bad(fmt::format("maps axis {} onto source axis {}", d, axis));
      }
      used[static_cast<size_t>(axis)] = true;
    } else if (p.runs[d].size() != 1 || p.runs[d][0].length != 1) {
      bad(fmt::format("covers more than one index of axis {} that no source axis maps", d));
    }
    int64_t previous_end = 0;
    for (const VirtualRun& r : p.runs[d]) {
      if (r.length <= 0 || r.target < previous_end || r.target > metadata.shape[d] - r.length) {
        bad(fmt::format("covers [{}, {}) of axis {} (extent {})", r.target, r.target + r.length, d,
                        metadata.shape[d]));
      }
      previous_end = r.target + r.length;
      if (axis >= 0) {
        const int64_t extent = s.shape[static_cast<size_t>(axis)];
        if (r.source < 0 || r.source > extent - r.length) {
          bad(fmt::format("reads [{}, {}) of its axis {}, whose extent is {}", r.source,
                          r.source + r.length, axis, extent));
        }
      }
    }
  }
  for (size_t a = 0; a < s.shape.size(); ++a) {
    if (!used[a] && (p.source_index[a] < 0 || p.source_index[a] >= s.shape[a])) {
      bad(fmt::format("reads index {} of its axis {}, whose extent is {}", p.source_index[a], a,
                      s.shape[a]));
    }
  }
}

}  // namespace

ArrayPtr virtual_array(std::vector<VirtualPiece> pieces, ArrayMetadata metadata,
                       const std::string& name, ArrayPtr placeholder) {
  if (metadata.shape.empty()) {
    fail(ErrorCode::kUnsupported, "virtual array '{}': a scalar virtual array", name);
  }
  // Empty pieces map nothing.
  std::erase_if(pieces, [](const VirtualPiece& p) {
    return std::any_of(p.runs.begin(), p.runs.end(), [](const auto& r) { return r.empty(); });
  });
  for (const VirtualPiece& p : pieces) check_virtual_piece(p, metadata, name);
  // In order of their first index along axis 0: the map looks them up so, and the overlap
  // check below compares a piece only with those that start inside its span of that axis.
  std::stable_sort(pieces.begin(), pieces.end(), [](const VirtualPiece& a, const VirtualPiece& b) {
    return a.runs[0].front().target < b.runs[0].front().target;
  });
  // Pieces are read side by side: two that map one element would race.
  const size_t rank = metadata.shape.size();
  for (size_t i = 0; i < pieces.size(); ++i) {
    const int64_t end = pieces[i].runs[0].back().target + pieces[i].runs[0].back().length;
    for (size_t j = i + 1; j < pieces.size() && pieces[j].runs[0].front().target < end; ++j) {
      bool meet = true;
      for (size_t d = 0; d < rank && meet; ++d) {
        meet = virtual_runs_meet(pieces[i].runs[d], pieces[j].runs[d]);
      }
      if (meet) {
        fail(ErrorCode::kUnsupported,
             "virtual array '{}': the pieces from '{}' and '{}' map the same elements", name,
             pieces[i].source->name(), pieces[j].source->name());
      }
    }
  }
  // The placeholder first: the engine's source and read grid of this array (its chunk keys,
  // stored sizes) are then of this array's own shape, whatever its sources' ranks and grids.
  auto join = std::make_shared<ArrayJoin>();
  if (placeholder) join->members.push_back(std::move(placeholder));
  std::unordered_set<const Array*> listed;
  for (const ArrayPtr& member : join->members) listed.insert(member.get());
  for (const VirtualPiece& p : pieces) {
    if (listed.insert(p.source.get()).second) join->members.push_back(p.source);
  }
  if (join->members.empty()) {
    fail(ErrorCode::kInvalidArgument, "virtual array '{}': no pieces and no placeholder", name);
  }
  auto map = std::make_shared<VirtualMap>();
  int64_t reach = 0;
  for (const VirtualPiece& p : pieces) {
    reach = std::max(reach, p.runs[0].back().target + p.runs[0].back().length);
    map->reach.push_back(reach);
  }
  map->pieces = std::move(pieces);
  join->mapped = std::move(map);
  return std::make_shared<const Array>(std::move(join), std::move(metadata), name);
}

void add_virtual_box(ReadPlan& plan, const Array& array, std::span<const int64_t> start,
                     const StridedView& dst, std::string context, const ElementConvert* convert) {
  const VirtualMap& map = *array.join()->mapped;
  const size_t rank = array.rank();
  int64_t volume = 1;
  for (size_t d = 0; d < rank; ++d) volume *= dst.shape[d];

  // Each piece's runs inside the box, per axis.
  struct Touched {
    const VirtualPiece* piece;
    std::vector<std::vector<VirtualRun>> runs;
  };
  std::vector<Touched> touched;
  std::vector<std::vector<VirtualRun>> clipped(rank);
  int64_t covered = 0;
  // The pieces starting before the box ends along axis 0, back to the last one whose reach
  // (its end or an earlier piece's) is past the box's start.
  const int64_t lo = start[0], hi = start[0] + dst.shape[0];
  const auto end =
      std::partition_point(map.pieces.begin(), map.pieces.end(),
                           [hi](const VirtualPiece& p) { return p.runs[0].front().target < hi; });
  auto first =
      std::partition_point(map.reach.begin(), map.reach.begin() + (end - map.pieces.begin()),
                           [lo](int64_t reach) { return reach <= lo; });
  for (auto it = map.pieces.begin() + (first - map.reach.begin()); it != end; ++it) {
    const VirtualPiece& piece = *it;
    int64_t n = 1;
    for (size_t d = 0; d < rank && n > 0; ++d) {
      clip_virtual_runs(piece.runs[d], start[d], start[d] + dst.shape[d], clipped[d]);
      int64_t length = 0;
      for (const VirtualRun& r : clipped[d]) length += r.length;
      n *= length;
    }
    if (n == 0) continue;
    covered += n;
    touched.push_back({&piece, clipped});
  }
  // Pieces never overlap (virtual_array), so a box they cover adds up to its volume. Otherwise
  // the fill goes in now, before any task of the plan can write its pieces.
  if (covered < volume) {
    ChunkTarget all;
    all.chunk_start.assign(rank, 0);
    all.dst = dst;
    all.convert = convert;
    fill_target(all, array.metadata().fill_value);
  }

  const int64_t item_size = static_cast<int64_t>(array.metadata().data_type.size);
  std::vector<size_t> at(rank);
  for (const Touched& t : touched) {
    const VirtualPiece& piece = *t.piece;
    const size_t source_rank = piece.source->rank();
    std::vector<int64_t> source_start(source_rank);
    StridedView view;
    view.shape.resize(source_rank);
    view.byte_strides.resize(source_rank);
    std::vector<bool> mapped(source_rank, false);
    for (int axis : piece.source_axis) {
      if (axis >= 0) mapped[static_cast<size_t>(axis)] = true;
    }
    std::fill(at.begin(), at.end(), 0);
    for (;;) {
      std::byte* data = dst.data;
      for (size_t s = 0; s < source_rank; ++s) {
        source_start[s] = piece.source_index[s];
        view.shape[s] = 1;
      }
      for (size_t d = 0; d < rank; ++d) {
        const VirtualRun& r = t.runs[d][at[d]];
        data += (r.target - start[d]) * dst.byte_strides[d];
        if (piece.source_axis[d] < 0) continue;
        const auto s = static_cast<size_t>(piece.source_axis[d]);
        source_start[s] = r.source;
        view.shape[s] = r.length;
        view.byte_strides[s] = dst.byte_strides[d];
      }
      // Source axes of one index: the stride a C-contiguous destination would have there.
      for (size_t s = source_rank; s-- > 0;) {
        if (mapped[s]) continue;
        view.byte_strides[s] = s + 1 < source_rank
                                   ? std::abs(view.byte_strides[s + 1]) * view.shape[s + 1]
                                   : item_size;
      }
      view.data = data;
      plan.add(*piece.source, source_start, view, context, convert);
      size_t d = rank;
      while (d > 0 && ++at[d - 1] == t.runs[d - 1].size()) at[--d] = 0;
      if (d == 0) break;
    }
  }
}

}  // namespace chute
