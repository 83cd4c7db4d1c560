#include "chute/format/hdf5_native/virtual_dataset.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/stat.h>

#include <algorithm>
#include <compare>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "chute/array/array_virtual.h"
#include "chute/array/chunk_grid.h"
#include "chute/format/contiguous_source.h"
#include "chute/format/hdf5.h"
#include "chute/format/hdf5_chunked_source.h"
#include "chute/format/hdf5_file.h"
#include "chute/format/hdf5_filters.h"
#include "chute/util/error.h"
#include "chute/util/fork_safe_mutex.h"

namespace chute::hdf5 {
namespace {

namespace h5n = h5native;

// Sources that are themselves virtual datasets may nest this deep.
constexpr size_t kMaxVirtualNesting = 8;
// Blocks of one selection, over all its axes: more is a corrupt or hostile selection.
constexpr uint64_t kMaxVirtualBlocks = uint64_t{1} << 20;

struct Interval {
  int64_t lo = 0, hi = 0;
};

[[noreturn]] void bad_selection(const std::string& where, const std::string& what) {
  fail(ErrorCode::kCorruptData, "{}: {}", where, what);
}

/// The indices a regular hyperslab selects along one axis. An unlimited count (or block) runs
/// to `extent` (a source's current extent) or, for a virtual selection matched to its source,
/// until `wanted` indices are selected.
std::vector<Interval> hyperslab_axis(uint64_t start, uint64_t stride, uint64_t count,
                                     uint64_t block, std::optional<int64_t> extent,
                                     std::optional<int64_t> wanted, const std::string& where) {
  constexpr auto kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max() / 4);
  if (start > kMax) bad_selection(where, fmt::format("a hyperslab starting at {}", start));
  const auto lo = static_cast<int64_t>(start);
  std::vector<Interval> out;
  if (block == h5n::kUndefined) {  // one block running to the end
    if (count != 1) bad_selection(where, "an unlimited block repeated");
    if (!extent && wanted && *wanted > static_cast<int64_t>(kMax)) {
      bad_selection(where, fmt::format("an unlimited block of {} indices", *wanted));
    }
    const int64_t hi = extent ? *extent : lo + (wanted ? *wanted : 0);
    if (hi > lo) out.push_back({lo, hi});
    return out;
  }
  if (block == 0 || block > kMax) bad_selection(where, fmt::format("a block of {}", block));
  const bool unlimited = count == h5n::kUndefined;
  if (!unlimited && count == 0) return out;
  if ((unlimited || count > 1) && (stride < block || stride > kMax)) {
    bad_selection(where, fmt::format("blocks of {} every {}", block, stride));
  }
  const auto b = static_cast<int64_t>(block), s = static_cast<int64_t>(stride);
  int64_t n = 0, last = b;  // blocks, and the length of the last one
  if (!unlimited) {
    if (count > kMaxVirtualBlocks && stride != block) {
      fail(ErrorCode::kUnsupported, "{}: a selection of {} blocks along one axis", where, count);
    }
    if (count > 1 && count > kMax / stride) {
      bad_selection(where, fmt::format("{} blocks every {}", count, stride));
    }
    n = static_cast<int64_t>(count);
  } else if (extent) {
    if (*extent <= lo) return out;
    n = (*extent - lo - 1) / s + 1;  // never past int64's range, whatever the extent
    last = std::min(b, *extent - (lo + (n - 1) * s));
  } else {
    const int64_t w = wanted ? *wanted : 0;
    if (w <= 0) return out;
    if (w > static_cast<int64_t>(kMax)) bad_selection(where, fmt::format("{} indices", w));
    n = (w - 1) / b + 1;
    last = w - (n - 1) * b;
  }
  if (s == b || n == 1) {  // one run
    out.push_back({lo, lo + (n - 1) * s + last});
    return out;
  }
  if (static_cast<uint64_t>(n) > kMaxVirtualBlocks) {
    fail(ErrorCode::kUnsupported, "{}: a selection of {} blocks along one axis", where, n);
  }
  for (int64_t i = 0; i < n; ++i) {
    out.push_back({lo + i * s, lo + i * s + (i + 1 == n ? last : b)});
  }
  return out;
}

int64_t selected(const std::vector<Interval>& axis) {
  int64_t n = 0;
  for (const Interval& i : axis) n += i.hi - i.lo;
  return n;
}

bool unlimited_axis(const h5n::Selection& s, size_t d) {
  return s.kind == h5n::Selection::Kind::kHyperslab && s.regular && d < s.count.size() &&
         (s.count[d] == h5n::kUndefined || s.block[d] == h5n::kUndefined);
}

/// A hyperslab stored as a list of blocks (older files store regular ones so too) as indices
/// per axis: the blocks must form a grid (every combination of their per-axis ranges).
std::vector<std::vector<Interval>> block_list_axes(const h5n::Selection& s,
                                                   const std::string& where) {
  const size_t rank = s.rank;
  const size_t blocks = rank == 0 ? 0 : s.block_first.size() / rank;
  if (blocks > kMaxVirtualBlocks) {
    fail(ErrorCode::kUnsupported, "{}: a selection of {} blocks", where, blocks);
  }
  constexpr auto kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max() / 4);
  std::vector<std::vector<Interval>> axes(rank);
  std::vector<std::vector<int64_t>> corners(blocks, std::vector<int64_t>(rank));
  for (size_t b = 0; b < blocks; ++b) {
    for (size_t d = 0; d < rank; ++d) {
      const uint64_t first = s.block_first[b * rank + d], last = s.block_last[b * rank + d];
      if (last < first || last >= kMax) {
        bad_selection(where, fmt::format("a block from {} to {}", first, last));
      }
      axes[d].push_back({static_cast<int64_t>(first), static_cast<int64_t>(last) + 1});
      corners[b][d] = static_cast<int64_t>(first);
    }
  }
  std::sort(corners.begin(), corners.end());
  if (std::adjacent_find(corners.begin(), corners.end()) != corners.end()) {
    bad_selection(where, "a block listed twice");
  }
  uint64_t combinations = 1;
  for (auto& axis : axes) {
    std::sort(axis.begin(), axis.end(), [](const Interval& a, const Interval& b) {
      return a.lo < b.lo || (a.lo == b.lo && a.hi < b.hi);
    });
    axis.erase(std::unique(axis.begin(), axis.end(),
                           [](const Interval& a, const Interval& b) {
                             return a.lo == b.lo && a.hi == b.hi;
                           }),
               axis.end());
    for (size_t i = 1; i < axis.size(); ++i) {
      if (axis[i].lo < axis[i - 1].hi) {
        fail(ErrorCode::kUnsupported, "{}: a list of blocks that is not a grid of blocks", where);
      }
    }
    combinations = std::min<uint64_t>(combinations * axis.size(), kMaxVirtualBlocks + 1);
  }
  if (combinations != blocks) {
    fail(ErrorCode::kUnsupported, "{}: a list of blocks that is not a grid of blocks", where);
  }
  for (auto& axis : axes) {  // blocks that touch make one run
    std::vector<Interval> merged;
    for (const Interval& i : axis) {
      if (!merged.empty() && merged.back().hi == i.lo) {
        merged.back().hi = i.hi;
      } else {
        merged.push_back(i);
      }
    }
    axis = std::move(merged);
  }
  return axes;
}

/// A selection's indices per axis. `extent`: the dataspace's extents (unlimited counts run to
/// them); `wanted`: per axis, the indices an unlimited count selects instead (or nullopt).
std::vector<std::vector<Interval>> selection_axes(const h5n::Selection& s,
                                                  std::span<const int64_t> extent,
                                                  std::span<const std::optional<int64_t>> wanted,
                                                  const std::string& where) {
  const size_t rank = extent.size();
  std::vector<std::vector<Interval>> axes(rank);
  using Kind = h5n::Selection::Kind;
  if (s.kind == Kind::kNone) return axes;  // selects nothing: every axis empty
  if (s.kind == Kind::kAll) {
    for (size_t d = 0; d < rank; ++d) {
      if (extent[d] > 0) axes[d].push_back({0, extent[d]});
    }
    return axes;
  }
  if (s.rank != rank) {
    bad_selection(where,
                  fmt::format("a selection of rank {} in a dataspace of rank {}", s.rank, rank));
  }
  if (!s.regular) return block_list_axes(s, where);
  size_t blocks = 0;
  for (size_t d = 0; d < rank; ++d) {
    const bool use_wanted = !wanted.empty() && wanted[d].has_value();
    axes[d] = hyperslab_axis(s.start[d], s.stride[d], s.count[d], s.block[d],
                             use_wanted ? std::nullopt : std::optional<int64_t>(extent[d]),
                             use_wanted ? wanted[d] : std::nullopt, where);
    blocks += axes[d].size();
    if (blocks > kMaxVirtualBlocks) {
      fail(ErrorCode::kUnsupported, "{}: a selection of more than {} blocks along its axes", where,
           kMaxVirtualBlocks);
    }
  }
  return axes;
}

/// Runs mapping a virtual axis's intervals onto a source axis's, which select as many indices.
std::vector<VirtualRun> pair_axis(const std::vector<Interval>& target,
                                  const std::vector<Interval>& source) {
  std::vector<VirtualRun> runs;
  size_t i = 0, j = 0;
  int64_t t = target.empty() ? 0 : target[0].lo, s = source.empty() ? 0 : source[0].lo;
  while (i < target.size() && j < source.size()) {
    const int64_t n = std::min(target[i].hi - t, source[j].hi - s);
    if (!runs.empty() && runs.back().target + runs.back().length == t &&
        runs.back().source + runs.back().length == s) {
      runs.back().length += n;
    } else {
      runs.push_back({t, s, n});
    }
    t += n;
    s += n;
    if (t == target[i].hi && ++i < target.size()) t = target[i].lo;
    if (s == source[j].hi && ++j < source.size()) s = source[j].lo;
  }
  return runs;
}

/// Whether a stored source name is a printf-style pattern: "%b" for the block number.
bool has_block_pattern(const std::string& stored) {
  for (size_t i = 0; i + 1 < stored.size(); ++i) {
    if (stored[i] != '%') continue;
    if (stored[i + 1] == 'b') return true;
    ++i;  // "%%" or another escape
  }
  return false;
}

/// A stored source name with "%%" read as "%" and "%b" as `block`.
std::string source_name(const std::string& stored, uint64_t block, const std::string& where) {
  std::string out;
  for (size_t i = 0; i < stored.size(); ++i) {
    if (stored[i] != '%') {
      out.push_back(stored[i]);
      continue;
    }
    if (i + 1 < stored.size() && (stored[i + 1] == '%' || stored[i + 1] == 'b')) {
      out += stored[i + 1] == '%' ? std::string("%") : std::to_string(block);
      ++i;
      continue;
    }
    bad_selection(where, fmt::format("a source name '{}' with a lone '%'", stored));
  }
  return out;
}

bool is_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

/// The source file HDF5 would open for `name` in the virtual dataset stored at `path`, or
/// nullopt when none of the places it looks holds it; `tried` lists them.
std::optional<std::string> find_source_file(const std::string& name, const std::string& path,
                                            std::vector<std::string>& tried) {
  namespace fs = std::filesystem;
  if (name == ".") return path;
  const fs::path stored(name);
  const fs::path folder = fs::path(path).parent_path();
  std::vector<fs::path> candidates;
  if (stored.is_absolute()) candidates.push_back(stored);
  const fs::path relative = stored.is_absolute() ? stored.filename() : stored;
  if (const char* prefix = std::getenv("HDF5_VDS_PREFIX"); prefix != nullptr && *prefix) {
    std::string p = prefix;
    // HDF5 expands ${ORIGIN} to the virtual dataset's folder.
    if (const size_t at = p.find("${ORIGIN}"); at != std::string::npos) {
      p.replace(at, 9, folder.string());
    }
    candidates.push_back(fs::path(p) / relative);
  }
  candidates.push_back(folder / relative);
  if (!stored.is_absolute()) candidates.push_back(stored);
  for (const fs::path& c : candidates) {
    if (std::find(tried.begin(), tried.end(), c.string()) != tried.end()) continue;
    tried.push_back(c.string());
    if (is_file(c.string())) return c.string();
  }
  return std::nullopt;
}

void report_missing_once(const std::string& where, const std::string& what) {
  static detail::ForkSafeMutex mutex;
  static std::set<std::string> reported;
  const std::string message = fmt::format("{}: {}", where, what);
  {
    std::lock_guard lock(mutex);
    if (!reported.insert(message).second) return;
  }
  std::fprintf(stderr, "chute: warning: %s; its elements read as the fill value (as HDF5 does)\n",
               message.c_str());
}

// A file as the file system knows it (device, inode): names that differ ("./a.h5", "../d/a.h5",
// an absolute one, a link) name the same file. The name itself when it cannot be stat()ed.
struct FileIdentity {
  dev_t device = 0;
  ino_t inode = 0;
  std::string name;  // only when stat() failed
  auto operator<=>(const FileIdentity&) const = default;
};

FileIdentity file_identity(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return {0, 0, path};
  return {st.st_dev, st.st_ino, {}};
}

// The virtual datasets this thread is opening, outermost first (their file, object header
// address): a source that is one of them is a cycle, refused instead of recursed into.
thread_local std::vector<std::pair<FileIdentity, uint64_t>> virtual_opening;

struct OpeningGuard {
  OpeningGuard(const std::string& file, uint64_t address, const std::string& where) {
    const std::pair<FileIdentity, uint64_t> self{file_identity(file), address};
    if (std::find(virtual_opening.begin(), virtual_opening.end(), self) != virtual_opening.end()) {
      fail(ErrorCode::kInvalidMetadata,
           "{}: its sources lead back to itself (a virtual dataset mapped onto itself)", where);
    }
    if (virtual_opening.size() >= kMaxVirtualNesting) {
      fail(ErrorCode::kInvalidMetadata, "{}: virtual dataset sources nested more than {} deep",
           where, kMaxVirtualNesting);
    }
    virtual_opening.push_back(self);
  }
  ~OpeningGuard() { virtual_opening.pop_back(); }
  OpeningGuard(const OpeningGuard&) = delete;
  OpeningGuard& operator=(const OpeningGuard&) = delete;
};

}  // namespace

std::optional<ResolvedMapping> resolve_mapping(const h5native::VirtualMapping& m,
                                               std::span<const int64_t> source_shape,
                                               std::span<const int64_t> virtual_shape,
                                               const std::string& at) {
  const size_t rank = virtual_shape.size();
  const auto source_axes = selection_axes(m.source, source_shape, {}, at);

  // Axes selecting one index drop out of both selections; the others pair up in order.
  std::vector<size_t> source_wide, target_wide;
  for (size_t a = 0; a < source_shape.size(); ++a) {
    if (selected(source_axes[a]) != 1) source_wide.push_back(a);
  }
  std::vector<std::optional<int64_t>> wanted(rank);
  std::vector<bool> unlimited(rank, false);
  for (size_t d = 0; d < rank; ++d) unlimited[d] = unlimited_axis(m.target, d);
  {
    // The sizes of the target's limited axes, to find its wide ones before resolving.
    const auto limited = selection_axes(m.target, virtual_shape, wanted, at);
    for (size_t d = 0; d < rank; ++d) {
      if (unlimited[d] || selected(limited[d]) != 1) target_wide.push_back(d);
    }
  }
  if (source_wide.size() != target_wide.size()) {
    fail(ErrorCode::kUnsupported,
         "{}: maps a selection of {} axes of more than one index onto one of {} (only "
         "selections of the same shape, but for axes of one index, are read)",
         at, source_wide.size(), target_wide.size());
  }
  for (size_t i = 0; i < target_wide.size(); ++i) {
    if (unlimited[target_wide[i]]) {
      wanted[target_wide[i]] = selected(source_axes[source_wide[i]]);
    }
  }
  const auto target_axes = selection_axes(m.target, virtual_shape, wanted, at);

  VirtualPiece piece;
  piece.source_axis.assign(rank, -1);
  piece.runs.resize(rank);
  piece.source_index.assign(source_shape.size(), 0);
  for (size_t a = 0; a < source_shape.size(); ++a) {
    if (!source_axes[a].empty()) piece.source_index[a] = source_axes[a][0].lo;
  }
  for (size_t i = 0; i < target_wide.size(); ++i) {
    const size_t d = target_wide[i], a = source_wide[i];
    if (selected(target_axes[d]) != selected(source_axes[a])) {
      fail(ErrorCode::kUnsupported,
           "{}: axis {} selects {} indices of the virtual dataset, source axis {} selects {}", at,
           d, selected(target_axes[d]), a, selected(source_axes[a]));
    }
    piece.source_axis[d] = static_cast<int>(a);
    piece.runs[d] = pair_axis(target_axes[d], source_axes[a]);
  }
  bool empty = std::any_of(source_axes.begin(), source_axes.end(),
                           [](const auto& axis) { return axis.empty(); });
  for (size_t d = 0; d < rank; ++d) {
    if (piece.source_axis[d] >= 0) continue;
    if (target_axes[d].empty()) {
      empty = true;
      continue;
    }
    piece.runs[d] = {{target_axes[d][0].lo, 0, 1}};
  }
  if (empty) return std::nullopt;
  return ResolvedMapping{std::move(piece), std::move(unlimited)};
}

ArrayPtr open_virtual(const h5native::File& file, const h5native::Object& object,
                      const h5native::Dataset& info, const std::string& path,
                      std::shared_ptr<const SingleFileStore> file_store, ArrayMetadata metadata,
                      std::span<const int64_t> at_least, Endian endian, const std::string& name,
                      const std::string& where) {
  const size_t rank = metadata.shape.size();
  if (rank == 0) fail(ErrorCode::kUnsupported, "{}: a scalar virtual dataset", where);
  const std::vector<h5n::VirtualMapping> mappings = file.virtual_mappings(object, info);
  OpeningGuard opening(path, object.header.address, where);
  const FileIdentity own_file = file_identity(path);

  // Each source file opened once (a stack of variables from per-year files maps every file
  // once per variable), the virtual dataset's own file not again; each source dataset opened
  // once (null: missing, read as fill).
  struct SourceFile {
    OpenFile opened;
    NetcdfScales scales;
  };
  std::map<FileIdentity, std::unique_ptr<SourceFile>> files;  // names of one file: one entry
  auto source_file = [&](const std::string& found) -> SourceFile& {
    const FileIdentity identity = file_identity(found);
    std::unique_ptr<SourceFile>& f = files[identity];
    if (!f) {
      OpenFile opened = identity == own_file ? OpenFile{file_store, path, file.shared_from_this()}
                                             : open_file(found);
      f = std::make_unique<SourceFile>(SourceFile{std::move(opened), {}});
    }
    return *f;
  };
  std::map<std::pair<std::string, std::string>, ArrayPtr> sources;
  // `quiet`: a missing printf-style source ends its mapping's blocks, as in HDF5.
  auto open_source = [&](const std::string& file_name, const std::string& dataset,
                         bool quiet) -> ArrayPtr {
    std::vector<std::string> tried;
    const std::optional<std::string> found = find_source_file(file_name, path, tried);
    if (!found) {
      if (!quiet) {
        report_missing_once(where, fmt::format("source file '{}' not found (looked for {})",
                                               file_name, fmt::join(tried, ", ")));
      }
      return nullptr;
    }
    auto [it, inserted] = sources.try_emplace({*found, dataset});
    if (!inserted) return it->second;
    try {
      SourceFile& f = source_file(*found);
      it->second = open_dataset(f.opened, *found, dataset, f.scales);
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kNotFound) {
        throw e.with_context(
            fmt::format("{}: source file '{}', dataset '{}'", where, *found, dataset));
      }
      if (!quiet) {
        report_missing_once(where,
                            fmt::format("source file '{}' has no dataset '{}'", *found, dataset));
      }
    }
    return it->second;
  };

  // The virtual extent along unlimited axes (HDF5's "last available" view): where the last
  // unlimited mapping there ends with the sources as they are, but no less than the limited
  // mappings reach.
  std::vector<bool> grows(rank, false);
  for (size_t d = 0; d < rank; ++d) {
    grows[d] = d < info.space.maxdims.size() && info.space.maxdims[d] == h5n::kUndefined;
  }
  std::vector<std::optional<int64_t>> grown(rank);
  std::vector<int64_t> reached(rank, 0);

  std::vector<ResolvedMapping> planned;
  auto plan = [&](const h5n::VirtualMapping& m, ArrayPtr source, const std::string& at) {
    std::optional<ResolvedMapping> resolved =
        resolve_mapping(m, source->metadata().shape, metadata.shape, at);
    if (!resolved) return;
    VirtualPiece& piece = resolved->piece;
    piece.source = std::move(source);
    for (size_t d = 0; d < rank; ++d) {
      if (!resolved->unlimited[d] || !grows[d]) continue;
      const VirtualRun& last = piece.runs[d].back();
      grown[d] = std::max(grown[d].value_or(0), last.target + last.length);
    }
    planned.push_back(std::move(*resolved));
  };
  for (size_t k = 0; k < mappings.size(); ++k) {
    const h5n::VirtualMapping& m = mappings[k];
    const std::string at =
        fmt::format("{}: mapping {} (source file '{}', dataset '{}')", where, k, m.file, m.dataset);
    size_t unlimited_axes = 0, axis = 0;
    for (size_t d = 0; d < rank; ++d) {
      if (!unlimited_axis(m.target, d)) continue;
      ++unlimited_axes;
      axis = d;
      if (grows[d]) grown[d] = grown[d].value_or(0);
    }
    {
      const auto target = selection_axes(m.target, metadata.shape, {}, at);
      for (size_t d = 0; d < rank; ++d) {
        if (!unlimited_axis(m.target, d) && !target[d].empty()) {
          reached[d] = std::max(reached[d], target[d].back().hi);
        }
      }
    }
    if (!has_block_pattern(m.file) && !has_block_pattern(m.dataset)) {
      ArrayPtr source =
          open_source(source_name(m.file, 0, at), source_name(m.dataset, 0, at), false);
      if (source) plan(m, std::move(source), at);
      continue;
    }
    // printf-style names: block b of the unlimited virtual selection comes from the source
    // named with b, for b = 0, 1, ... up to the first that is missing.
    if (unlimited_axes != 1 || m.target.count[axis] != h5n::kUndefined ||
        m.target.block[axis] == h5n::kUndefined) {
      fail(ErrorCode::kUnsupported,
           "{}: a printf-style source name needs a virtual selection with one unlimited count", at);
    }
    for (uint64_t b = 0;; ++b) {
      if (b >= kMaxVirtualBlocks) {
        fail(ErrorCode::kUnsupported, "{}: more than {} printf-style sources", at,
             kMaxVirtualBlocks);
      }
      ArrayPtr source =
          open_source(source_name(m.file, b, at), source_name(m.dataset, b, at), true);
      if (!source) break;
      constexpr uint64_t kFar = uint64_t{1} << 60;
      const uint64_t stride = m.target.stride[axis], first = m.target.start[axis];
      if (first > kFar || stride > kFar || (b > 0 && stride > (kFar - first) / b)) {
        bad_selection(at, "printf-style blocks past the largest extent");
      }
      h5n::VirtualMapping block = m;
      block.target.count[axis] = 1;
      block.target.start[axis] = first + b * stride;
      plan(block, std::move(source), fmt::format("{} block {}", at, b));
      if (grows[axis]) {
        const auto end = static_cast<int64_t>(block.target.start[axis] + m.target.block[axis]);
        grown[axis] = std::max(grown[axis].value_or(0), end);
      }
    }
  }
  for (size_t d = 0; d < rank; ++d) {
    if (grown[d]) metadata.shape[d] = std::max(*grown[d], reached[d]);
  }
  // A limited mapping past a shrunk extent keeps what is still inside it.
  std::vector<VirtualPiece> pieces;
  for (ResolvedMapping& p : planned) {
    bool keep = true;
    for (size_t d = 0; d < rank && keep; ++d) {
      auto& runs = p.piece.runs[d];
      std::vector<VirtualRun> inside;
      for (const VirtualRun& r : runs) {
        const int64_t end = std::min(r.target + r.length, metadata.shape[d]);
        if (end > r.target) inside.push_back({r.target, r.source, end - r.target});
      }
      if (p.piece.source_axis[d] < 0 && inside.size() != runs.size()) keep = false;
      runs = std::move(inside);
      keep = keep && !runs.empty();
    }
    if (keep) pieces.push_back(std::move(p.piece));
  }
  // Past the dataset's extent (a longer NetCDF-4 dimension): no piece, the fill value.
  for (size_t d = 0; d < rank && d < at_least.size(); ++d) {
    metadata.shape[d] = std::max(metadata.shape[d], at_least[d]);
  }

  // The read grid callers see: the first source's chunks when it has this rank.
  const int64_t item = std::max<int64_t>(static_cast<int64_t>(metadata.data_type.size), 1);
  metadata.chunk_shape = contiguous_slab_shape(metadata.shape, item, false);
  if (!pieces.empty() && pieces[0].source->rank() == rank) {
    metadata.chunk_shape = pieces[0].source->read_chunk_shape();
  }
  metadata.codecs = hdf5_codec_specs({}, metadata.data_type, endian, 0, where);

  // Nothing stored, the virtual dataset's own grid: what it reports as its chunk source.
  ArrayMetadata fill = metadata;
  const auto grid = chunk_grid_shape(fill.shape, fill.chunk_shape);
  auto chain = CodecChain::create(fill.codecs, fill.data_type, fill.chunk_shape);
  auto empty_source = std::make_shared<const Hdf5ChunkedSource>(
      std::move(file_store), fill.chunk_shape, grid, std::vector<CodecChainPtr>{chain},
      std::vector<Hdf5ChunkEntry>{}, where);
  auto placeholder = std::make_shared<const Array>(std::move(empty_source), fill, name);
  try {
    return virtual_array(std::move(pieces), std::move(metadata), name, std::move(placeholder));
  } catch (const Error& e) {
    throw e.with_context(where);
  }
}

}  // namespace chute::hdf5
