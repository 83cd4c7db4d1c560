#include "chute/dataset/many_files.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <glob.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <mutex>
#include <numeric>
#include <regex>
#include <set>
#include <thread>

#include "chute/array/array_join.h"
#include "chute/dataset/cf_time.h"
#include "chute/dataset/window_axes.h"
#include "chute/format/open.h"
#include "chute/store/memory_store.h"
#include "chute/util/civil_date.h"
#include "chute/util/error.h"
#include "chute/util/interrupt.h"

namespace chute {

namespace {

// Grid coordinates and other arrays without time are compared value by value up to this size.
constexpr int64_t kMaxComparedElements = int64_t{1} << 22;

bool unnamed(const ArrayMetadata& m) {
  return std::all_of(m.dimension_names.begin(), m.dimension_names.end(),
                     [](const std::string& s) { return s.empty(); });
}

// Whether `array` runs along the join dimension (on axis 0; kUnsupported elsewhere).
bool along_time(const Array& array, const std::string& name, const std::string& dim) {
  const ArrayMetadata& m = array.metadata();
  if (m.shape.empty()) return false;
  if (unnamed(m)) return m.shape.size() >= 3 || name == dim;
  for (size_t d = 1; d < m.dimension_names.size(); ++d) {
    if (m.dimension_names[d] == dim) {
      fail(ErrorCode::kUnsupported,
           "array '{}': dimension '{}' is axis {}, chute joins files along axis 0 only", name, dim,
           d);
    }
  }
  return m.dimension_names[0] == dim;
}

std::string format_time(int64_t seconds) {
  const int64_t days = (seconds >= 0 ? seconds : seconds - 86399) / 86400;
  const int64_t rest = seconds - days * 86400;
  const auto [y, m, d] = detail::civil_from_days(days);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}", y, m, d, rest / 3600, rest / 60 % 60);
}

std::string basename(const std::string& path) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  const size_t slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

// The first time of a member from its file name and the pattern ("{year}.h5").
int64_t start_from_name(const std::string& path, const std::string& pattern) {
  std::string regex;
  std::vector<std::string> fields;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '{') {
      const size_t close = pattern.find('}', i);
      if (close == std::string::npos) {
        fail(ErrorCode::kInvalidArgument, "file_pattern '{}': '{{' without '}}'", pattern);
      }
      const std::string field = pattern.substr(i + 1, close - i - 1);
      if (field != "year" && field != "month" && field != "day" && field != "hour") {
        fail(ErrorCode::kInvalidArgument,
             "file_pattern '{}': unknown field '{{{}}}' (year, month, day, hour)", pattern, field);
      }
      regex += field == "year" ? "(-?\\d{4})" : "(\\d{2})";
      fields.push_back(field);
      i = close;
    } else if (std::strchr(".^$|()[]*+?\\", pattern[i]) != nullptr) {
      regex += '\\';
      regex += pattern[i];
    } else {
      regex += pattern[i];
    }
  }
  std::smatch match;
  const std::string name = basename(path);
  if (!std::regex_match(name, match, std::regex(regex))) {
    fail(ErrorCode::kInvalidArgument, "member '{}': its name does not match file_pattern '{}'",
         path, pattern);
  }
  int64_t year = 1970, month = 1, day = 1, hour = 0;
  for (size_t f = 0; f < fields.size(); ++f) {
    const int64_t v = std::stoll(match[static_cast<int>(f) + 1].str());
    if (fields[f] == "year") year = v;
    if (fields[f] == "month") month = v;
    if (fields[f] == "day") day = v;
    if (fields[f] == "hour") hour = v;
  }
  return detail::days_from_civil(year, month, day) * 86400 + hour * 3600;
}

struct Member {
  Group group;
  std::string path;
  std::vector<int64_t> times;  // seconds since 1970
};

std::vector<int64_t> member_times(const Member& m, const ManyFilesOptions& options) {
  auto coordinate = m.group.arrays.find(options.concat_dim);
  if (coordinate != m.group.arrays.end()) {
    std::vector<int64_t> times;
    try {
      times = decode_cf_times(*coordinate->second, coordinate->second->name());
    } catch (const Error& e) {
      throw e.with_context(fmt::format("member '{}'", m.path));
    }
    for (size_t i = 0; i < times.size(); ++i) {
      if (times[i] == kNotATime) {
        fail(ErrorCode::kInvalidArgument, "member '{}': time {} of '{}' is missing (NaT)", m.path,
             i, options.concat_dim);
      }
    }
    return times;
  }
  if (options.file_pattern.empty() || options.step_seconds <= 0) {
    fail(ErrorCode::kInvalidArgument,
         "member '{}' has no time coordinate '{}': give a time rule (a file_pattern such as "
         "\"{{year}}.h5\" and a step) for files without one",
         m.path, options.concat_dim);
  }
  int64_t count = -1;
  for (const auto& [name, array] : m.group.arrays) {
    if (along_time(*array, name, options.concat_dim)) {
      count = array->metadata().shape[0];
      break;
    }
  }
  if (count < 0) {
    fail(ErrorCode::kInvalidArgument, "member '{}' has no array along '{}'", m.path,
         options.concat_dim);
  }
  const int64_t start = start_from_name(m.path, options.file_pattern);
  std::vector<int64_t> times(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i)
    times[static_cast<size_t>(i)] = start + i * options.step_seconds;
  return times;
}

void check_same_static(const Member& first, const Member& other, const std::string& name) {
  const Array& a = *first.group.arrays.at(name);
  const Array& b = *other.group.arrays.at(name);
  auto differ = [&](const std::string& what) {
    fail(ErrorCode::kInvalidArgument, "members '{}' and '{}' disagree on '{}': {}", first.path,
         other.path, name, what);
  };
  if (a.metadata().shape != b.metadata().shape) {
    differ(fmt::format("shape [{}] against [{}]", fmt::join(a.metadata().shape, ", "),
                       fmt::join(b.metadata().shape, ", ")));
  }
  if (a.metadata().data_type != b.metadata().data_type) {
    differ(fmt::format("dtype {} against {}", a.metadata().data_type.name(),
                       b.metadata().data_type.name()));
  }
  const DTypeKind kind = a.metadata().data_type.kind;
  if (a.metadata().num_elements() > kMaxComparedElements ||
      (kind != DTypeKind::kFloat && kind != DTypeKind::kInt && kind != DTypeKind::kUInt)) {
    return;
  }
  const std::vector<double> u = read_as_doubles(a), v = read_as_doubles(b);
  for (size_t i = 0; i < u.size(); ++i) {
    if (u[i] != v[i] && !(std::isnan(u[i]) && std::isnan(v[i]))) {
      differ(fmt::format("value {} is {} against {}", i, u[i], v[i]));
    }
  }
}

// The joined time coordinate: int64 seconds since 1970 in memory.
ArrayPtr time_coordinate(const std::vector<int64_t>& times, const std::string& dim) {
  auto store = std::make_shared<MemoryStore>();
  const nlohmann::json zarray = {
      {"shape", nlohmann::json::array({times.size()})},
      {"chunks", nlohmann::json::array({std::max<size_t>(times.size(), 1)})},
      {"dtype", "<i8"},
      {"fill_value", nullptr},
      {"order", "C"},
      {"filters", nullptr},
      {"compressor", nullptr},
      {"zarr_format", 2}};
  const nlohmann::json zattrs = {{"_ARRAY_DIMENSIONS", nlohmann::json::array({dim})},
                                 {"units", "seconds since 1970-01-01 00:00:00"},
                                 {"calendar", "proleptic_gregorian"}};
  store->set(".zarray", zarray.dump());
  store->set(".zattrs", zattrs.dump());
  std::vector<std::byte> bytes(std::max<size_t>(times.size(), 1) * 8);
  if (!times.empty()) std::memcpy(bytes.data(), times.data(), times.size() * 8);
  store->set("0", std::move(bytes));
  return open_zarr_array(store, "", dim);
}

std::set<std::string> time_variables(const Member& m, const std::string& dim) {
  std::set<std::string> names;
  for (const auto& [name, array] : m.group.arrays) {
    if (name != dim && along_time(*array, name, dim)) names.insert(name);
  }
  return names;
}

}  // namespace

bool is_glob(const std::string& path) { return path.find_first_of("*?[") != std::string::npos; }

std::vector<std::string> expand_glob(const std::string& pattern) {
  glob_t found{};
  const int rc = ::glob(pattern.c_str(), GLOB_NOSORT, nullptr, &found);
  std::vector<std::string> paths;
  for (size_t i = 0; rc == 0 && i < found.gl_pathc; ++i) paths.emplace_back(found.gl_pathv[i]);
  ::globfree(&found);
  if (paths.empty()) fail(ErrorCode::kNotFound, "no files match '{}'", pattern);
  std::sort(paths.begin(), paths.end());
  return paths;
}

bool same_variables(const std::vector<Group>& groups, const std::string& concat_dim) {
  std::set<std::string> first;
  for (size_t g = 0; g < groups.size(); ++g) {
    Member m{groups[g], groups[g].name, {}};
    std::set<std::string> names;
    try {
      names = time_variables(m, concat_dim);
    } catch (const Error&) {
      return false;
    }
    if (names.empty()) return false;
    if (g == 0)
      first = std::move(names);
    else if (names != first)
      return false;
  }
  return true;
}

std::vector<Group> open_groups(const std::vector<std::string>& paths, const CacheOptions& cache) {
  std::vector<Group> groups(paths.size());
  std::vector<std::exception_ptr> errors(paths.size());
  std::atomic<size_t> next{0};
  std::atomic<bool> stop{false};
  std::mutex mutex;
  std::condition_variable finished;
  size_t running = 0;
  auto work = [&] {
    for (size_t i; !stop.load() && (i = next.fetch_add(1)) < paths.size();) {
      if (interrupt_pending()) {
        stop = true;
        break;
      }
      try {
        groups[i] = open_group(paths[i], cache);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
    std::lock_guard lock(mutex);
    if (--running == 0) finished.notify_all();
  };
  // Opening is metadata reads and waits (a chunk index, a remote request): threads overlap them.
  // The calling thread only waits, checking now and then for an interruption (Ctrl-C), which
  // the workers see before their next member.
  const size_t threads = std::min<size_t>(paths.size(), 8);
  std::vector<std::thread> pool;
  {
    std::unique_lock lock(mutex);
    running = threads;
  }
  try {
    for (size_t t = 0; t < threads; ++t) pool.emplace_back(work);
  } catch (...) {  // no thread to be had: the ones started finish, then the error
    stop = true;
    {
      std::lock_guard lock(mutex);
      running -= threads - pool.size();
    }
    for (auto& t : pool) t.join();
    throw;
  }
  {
    std::unique_lock lock(mutex);
    while (running > 0) {
      if (finished.wait_for(lock, std::chrono::milliseconds(20), [&] { return running == 0; })) {
        break;
      }
      lock.unlock();
      if (!stop && interrupt_pending()) stop = true;
      lock.lock();
    }
  }
  for (auto& t : pool) t.join();
  if (stop) throw Interrupted();                // set only by an interruption
  for (const std::exception_ptr& e : errors) {  // a worker's own poll saw it first
    try {
      if (e) std::rethrow_exception(e);
    } catch (const Interrupted&) {
      throw;
    } catch (...) {
    }
  }
  for (size_t i = 0; i < paths.size(); ++i) {
    if (!errors[i]) continue;
    try {
      std::rethrow_exception(errors[i]);
    } catch (const Error& e) {
      throw e.with_context(fmt::format("member '{}'", paths[i]));
    }
  }
  return groups;
}

JoinedFiles open_many_files(const std::vector<std::string>& paths, const ManyFilesOptions& options,
                            const CacheOptions& cache) {
  if (paths.empty()) fail(ErrorCode::kInvalidArgument, "no files to join");
  return join_along_time(open_groups(paths, cache), paths, options);
}

JoinedFiles join_along_time(std::vector<Group> groups, std::vector<std::string> paths,
                            const ManyFilesOptions& options) {
  std::vector<Member> members;
  for (size_t i = 0; i < groups.size(); ++i) {
    members.push_back({std::move(groups[i]), paths[i], {}});
  }
  for (Member& m : members) {
    check_interrupt();
    m.times = member_times(m, options);
  }
  for (const Member& m : members) {
    if (m.times.empty()) fail(ErrorCode::kInvalidArgument, "member '{}' holds no times", m.path);
    for (size_t i = 1; i < m.times.size(); ++i) {
      if (m.times[i] <= m.times[i - 1]) {
        fail(ErrorCode::kInvalidArgument,
             "member '{}': times are not strictly increasing ({} is followed by {})", m.path,
             format_time(m.times[i - 1]), format_time(m.times[i]));
      }
    }
  }
  std::stable_sort(members.begin(), members.end(),
                   [](const Member& a, const Member& b) { return a.times[0] < b.times[0]; });

  // The step: the smallest one inside a member, else between members.
  int64_t step = 0;
  for (const Member& m : members) {
    for (size_t i = 1; i < m.times.size(); ++i) {
      const int64_t d = m.times[i] - m.times[i - 1];
      if (step == 0 || d < step) step = d;
    }
  }
  JoinedFiles joined;
  joined.segments.push_back(0);
  int64_t length = static_cast<int64_t>(members[0].times.size());
  for (size_t k = 1; k < members.size(); ++k) {
    const Member& prev = members[k - 1];
    const Member& next = members[k];
    if (next.times.front() <= prev.times.back()) {
      fail(ErrorCode::kInvalidArgument,
           "members '{}' and '{}' overlap: '{}' starts at {}, not after the end of '{}' ({})",
           prev.path, next.path, next.path, format_time(next.times.front()), prev.path,
           format_time(prev.times.back()));
    }
    const int64_t d = next.times.front() - prev.times.back();
    if (step == 0) step = d;
    if (d != step) {
      if (!options.allow_gaps) {
        fail(ErrorCode::kInvalidArgument,
             "a gap between members '{}' (ends {}) and '{}' (starts {}): the step is {} s, the "
             "gap {} s (allow gaps to join them anyway; windows then never cross it)",
             prev.path, format_time(prev.times.back()), next.path, format_time(next.times.front()),
             step, d);
      }
      joined.segments.push_back(length);
    }
    length += static_cast<int64_t>(next.times.size());
  }

  // The same variables, dims and statics in every member.
  const Member& first = members[0];
  const std::set<std::string> variables = time_variables(first, options.concat_dim);
  if (variables.empty()) {
    fail(ErrorCode::kInvalidArgument, "member '{}' has no variable along '{}'", first.path,
         options.concat_dim);
  }
  for (const Member& m : members) {
    const std::set<std::string> names = time_variables(m, options.concat_dim);
    for (const std::string& v : variables) {
      if (!names.count(v)) {
        fail(ErrorCode::kInvalidArgument, "member '{}' has no variable '{}' (member '{}' has)",
             m.path, v, first.path);
      }
    }
    for (const std::string& n : names) {
      if (!variables.count(n)) {
        fail(ErrorCode::kInvalidArgument, "member '{}' has variable '{}', member '{}' has not",
             m.path, n, first.path);
      }
    }
    for (const std::string& v : variables) {
      const auto& a = first.group.arrays.at(v)->metadata();
      const auto& b = m.group.arrays.at(v)->metadata();
      if (a.dimension_names != b.dimension_names) {
        fail(ErrorCode::kInvalidArgument,
             "member '{}': variable '{}' has dims ({}), member '{}' has ({})", m.path, v,
             fmt::join(b.dimension_names, ", "), first.path, fmt::join(a.dimension_names, ", "));
      }
      if (a.data_type != b.data_type) {
        fail(ErrorCode::kInvalidArgument, "member '{}': variable '{}' is {}, member '{}' has {}",
             m.path, v, b.data_type.name(), first.path, a.data_type.name());
      }
      if (a.shape.size() != b.shape.size() ||
          !std::equal(a.shape.begin() + 1, a.shape.end(), b.shape.begin() + 1)) {
        fail(ErrorCode::kInvalidArgument,
             "member '{}': variable '{}' has shape [{}], member '{}' has [{}] (only the extent "
             "along '{}' may differ)",
             m.path, v, fmt::join(b.shape, ", "), first.path, fmt::join(a.shape, ", "),
             options.concat_dim);
      }
      if (a.attributes != b.attributes) {
        // Packed values (scale_factor/add_offset/_FillValue) decode differently per member.
        for (const char* key : {"scale_factor", "add_offset", "_FillValue", "missing_value"}) {
          const auto x = a.attributes.find(key), y = b.attributes.find(key);
          const bool hx = x != a.attributes.end(), hy = y != b.attributes.end();
          if (hx != hy || (hx && x->dump() != y->dump())) {  // NaN fill values dump alike
            fail(ErrorCode::kInvalidArgument,
                 "member '{}': variable '{}' has {} {}, member '{}' has {}", m.path, v, key,
                 hy ? y->dump() : "none", first.path, hx ? x->dump() : "none");
          }
        }
      }
      if (b.shape[0] != static_cast<int64_t>(m.times.size())) {
        fail(ErrorCode::kInvalidArgument,
             "member '{}': variable '{}' has {} steps along '{}', its time coordinate {}", m.path,
             v, b.shape[0], options.concat_dim, m.times.size());
      }
    }
  }
  for (const auto& [name, array] : first.group.arrays) {
    if (name == options.concat_dim || variables.count(name)) continue;
    for (size_t k = 1; k < members.size(); ++k) {
      if (!members[k].group.arrays.count(name)) {
        fail(ErrorCode::kInvalidArgument, "member '{}' has no '{}' (member '{}' has)",
             members[k].path, name, first.path);
      }
      check_same_static(first, members[k], name);
    }
  }

  Group& group = joined.group;
  group.name = fmt::format("{} .. {} ({} files)", first.path, members.back().path, members.size());
  group.zarr_format = first.group.zarr_format;
  group.attributes = first.group.attributes;
  group.groups = first.group.groups;
  for (const auto& [name, array] : first.group.arrays) {
    if (name == options.concat_dim) continue;
    if (!variables.count(name)) {
      group.arrays[name] = array;
      continue;
    }
    std::vector<ArrayPtr> parts;
    for (const Member& m : members) parts.push_back(m.group.arrays.at(name));
    group.arrays[name] = concat_arrays(parts, name);
  }
  std::vector<int64_t> times;
  for (const Member& m : members) times.insert(times.end(), m.times.begin(), m.times.end());
  group.arrays[options.concat_dim] = time_coordinate(times, options.concat_dim);
  for (const Member& m : members) joined.members.push_back(m.path);

  if (!options.channels.empty()) {
    auto stacked = group.arrays.find(options.channel_array);
    if (stacked == group.arrays.end()) {
      fail(ErrorCode::kInvalidArgument, "channels name the channels of '{}', which '{}' lacks",
           options.channel_array, first.path);
    }
    const ArrayPtr fields = stacked->second;
    const auto& shape = fields->metadata().shape;
    const int axis = options.channel_axis;
    if (axis <= 0 || static_cast<size_t>(axis) >= shape.size() ||
        shape[static_cast<size_t>(axis)] != static_cast<int64_t>(options.channels.size())) {
      fail(ErrorCode::kInvalidArgument,
           "{} channel names for '{}' of shape [{}]: expected one per index of axis {}",
           options.channels.size(), options.channel_array, fmt::join(shape, ", "), axis);
    }
    for (size_t c = 0; c < options.channels.size(); ++c) {
      const std::string& name = options.channels[c];
      if (group.arrays.count(name)) {
        fail(ErrorCode::kInvalidArgument, "channel name '{}' is already an array of '{}'", name,
             first.path);
      }
      group.arrays[name] = slice_array(fields, axis, static_cast<int64_t>(c), name);
    }
  }
  return joined;
}

std::vector<int64_t> times_within_segments(const std::vector<int64_t>& segments, int64_t length,
                                           const std::vector<int64_t>& offsets) {
  const auto [lo, hi] = std::minmax_element(offsets.begin(), offsets.end());
  std::vector<int64_t> times;
  for (size_t s = 0; s < segments.size(); ++s) {
    const int64_t begin = segments[s];
    const int64_t end = s + 1 < segments.size() ? segments[s + 1] : length;
    for (int64_t t = begin - *lo; t + *hi < end; ++t) {
      if (t + *lo >= begin) times.push_back(t);
    }
  }
  return times;
}

}  // namespace chute
