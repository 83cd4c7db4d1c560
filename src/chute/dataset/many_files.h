#pragma once
// One dataset over many files along time: ERA5 as one NetCDF file per month, CMIP per decade,
// FourCastNet/Makani as one HDF5 file per year. Members (any format open_group() reads) are
// opened in parallel (metadata only), ordered by their first time, checked once (the same
// variables with the same dims, dtypes and grid; grid coordinates equal; times strictly
// increasing with no overlap and, unless allowed, no gap) and joined: each variable becomes one
// array concatenated along axis 0 (array_join.h), so a box spanning two files is read in one
// plan. The joined time coordinate holds int64 seconds since 1970-01-01.
//
// Members without a time coordinate (FourCastNet files hold only `fields`) take their times
// from a rule: a start date per file matched from its name ("{year}.h5"; also {month}, {day},
// {hour}) and a step. A channel list names the channels of a stacked array (fields[T, C, H,
// W]): each becomes a variable of its own (T, H, W), so windows select channels by name.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "chute/format/zarr.h"
#include "chute/store/caching_store.h"

namespace chute {

class WindowDataset;
struct WindowOptions;

struct ManyFilesOptions {
  std::string concat_dim = "time";  // the dimension (and coordinate) members are joined along
  bool allow_gaps = false;          // a missing step between members: allowed, or an error
  /// Time rule for members without a `concat_dim` coordinate: the file name pattern giving
  /// each member's first time, and the step between its times (seconds).
  std::string file_pattern;
  int64_t step_seconds = 0;
  /// Names of the channels of `channel_array` along `channel_axis` (empty: none).
  std::vector<std::string> channels;
  std::string channel_array = "fields";
  int channel_axis = 1;
};

struct JoinedFiles {
  Group group;
  std::vector<std::string> members;  // member paths in time order
  /// First joined time index of each run of members without a gap between them (starts with
  /// 0); windows must not cross from one run into the next.
  std::vector<int64_t> segments;
};

/// The files matching a glob pattern ("era5/*.nc"), sorted; kNotFound when none match.
std::vector<std::string> expand_glob(const std::string& pattern);

/// True when `path` has glob characters (*, ?, [).
bool is_glob(const std::string& path);

/// Opens the groups at `paths` on several threads (metadata only); an error names its path.
/// Throws Interrupted (util/interrupt.h) when an interruption is pending: the calling thread
/// only waits, polling for one, and the workers open no further member once it is seen.
std::vector<Group> open_groups(const std::vector<std::string>& paths,
                               const CacheOptions& cache = default_cache_options());

/// Opens and joins `paths` (at least one). Throws kInvalidArgument naming the member(s), the
/// variable and the difference: variables, dims, dtypes or grid differing, a missing time
/// coordinate without a rule, overlapping times (both files), a gap unless allowed (both
/// files); errors opening a member name it.
JoinedFiles open_many_files(const std::vector<std::string>& paths, const ManyFilesOptions& options,
                            const CacheOptions& cache = default_cache_options());

/// Whether every group holds the same variables along time (arrays whose first dimension is
/// `concat_dim`): then a list of stores is a time series to join along time, not stores of
/// different variables to join by name (store_join.h).
bool same_variables(const std::vector<Group>& groups, const std::string& concat_dim);

/// open_many_files on already opened groups (named by `paths`).
JoinedFiles join_along_time(std::vector<Group> groups, std::vector<std::string> paths,
                            const ManyFilesOptions& options);

/// Sample times (time indices) for windows of `offsets` that stay inside one segment, for
/// every time whose offsets all lie in [0, length).
std::vector<int64_t> times_within_segments(const std::vector<int64_t>& segments, int64_t length,
                                           const std::vector<int64_t>& offsets);

/// Windows over joined files; unless `options` gives sample_times or a time_map, samples are
/// limited to windows inside one run of members (never across a gap).
std::shared_ptr<WindowDataset> make_joined_window_dataset(const JoinedFiles& joined,
                                                          WindowOptions options);

}  // namespace chute
