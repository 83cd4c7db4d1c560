// Bindings for opening arrays and groups and reading boxes into NumPy arrays. This layer is thin:
// indexing, dtype handling and the Group mapping live in chute/_array.py; here are the calls that
// touch the core, each releasing the GIL while it works.

#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>
#include <unistd.h>

#include <cmath>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "bindings.h"
#include "chute/array/element_convert.h"
#include "chute/codec/codec_chain.h"
#include "chute/dataset/cf_time.h"
#include "chute/dataset/many_files.h"
#include "chute/dataset/store_join.h"
#include "chute/format/hdf5_strings.h"
#include "chute/format/open.h"
#include "chute/format/zarr.h"
#include "chute/store/file_store.h"
#include "chute/store/reference_store.h"
#include "chute/util/error.h"
#include "chute/util/fork_safe_mutex.h"
#include "chute/util/missing_values.h"
#include "chute/util/thread_pool.h"

namespace nb = nanobind;

namespace chute::python {
namespace {

// The module-wide pool that Array reads run on; replaced by set_threads(). Readers hold a
// shared_ptr so a replacement never destroys a pool that a read in flight still uses.
// After fork() (PyTorch DataLoader workers, multiprocessing) the child has none of the pool's
// threads: the first read there makes a fresh pool of the same size, and the inherited one is
// left alone (destroying it would wait for workers that do not exist). The lock is fork-safe:
// the child never inherits it locked.
detail::ForkSafeMutex g_pool_mutex;
std::shared_ptr<ThreadPool> g_pool;
int g_pool_pid = 0;
size_t g_pool_threads = 0;  // 0: default_thread_count()

std::shared_ptr<ThreadPool> shared_pool() {
  std::lock_guard lock(g_pool_mutex);
  if (g_pool && g_pool_pid != ::getpid()) {
    (void)new std::shared_ptr<ThreadPool>(std::move(g_pool));  // inherited: leak, never join
  }
  if (!g_pool) {
    g_pool =
        std::make_shared<ThreadPool>(g_pool_threads == 0 ? default_thread_count() : g_pool_threads);
    g_pool_pid = ::getpid();
  }
  return g_pool;
}

void set_threads(int64_t threads) {
  if (threads < 0) fail(ErrorCode::kInvalidArgument, "threads must be >= 0, got {}", threads);
  if (static_cast<uint64_t>(threads) > max_reader_threads()) {
    fail(ErrorCode::kInvalidArgument,
         "set_threads({}) is more than this machine can run: at most {} (16 per hardware "
         "thread, {} here); 0 uses one per hardware thread",
         threads, max_reader_threads(), default_thread_count());
  }
  size_t count = threads == 0 ? default_thread_count() : static_cast<size_t>(threads);
  auto pool = std::make_shared<ThreadPool>(count);
  std::shared_ptr<ThreadPool> old;
  {
    std::lock_guard lock(g_pool_mutex);
    old = std::move(g_pool);
    if (old && g_pool_pid != ::getpid()) {
      (void)new std::shared_ptr<ThreadPool>(std::move(old));  // inherited from before fork()
    }
    g_pool = std::move(pool);
    g_pool_pid = ::getpid();
    g_pool_threads = static_cast<size_t>(threads);
  }
  // `old` is destroyed here (joining its workers) unless a read still holds it.
}

size_t get_threads() { return shared_pool()->size(); }

using NumpyOut = nb::ndarray<nb::numpy, nb::device::cpu>;

/// The view of `out` for box [start, start + out.shape) of `array`: it must have the array's
/// rank, elements of `item_size` bytes and non-negative strides. Empty boxes give no data.
StridedView destination(const Array& array, const std::vector<int64_t>& start, NumpyOut out,
                        int64_t item_size, const std::string& what) {
  const ArrayMetadata& meta = array.metadata();
  if (out.ndim() != meta.rank() || start.size() != meta.rank()) {
    fail(ErrorCode::kInvalidArgument,
         "{}: expected a box of rank {}, got start of rank {} and "
         "destination of rank {}",
         array.name(), meta.rank(), start.size(), out.ndim());
  }
  if (static_cast<int64_t>(out.itemsize()) != item_size) {
    fail(ErrorCode::kInvalidArgument,
         "{}: expected a destination of {}-byte elements ({}), got "
         "{}-byte elements",
         array.name(), item_size, what, out.itemsize());
  }
  StridedView view;
  view.data = static_cast<std::byte*>(out.data());
  int64_t elements = 1;
  for (size_t d = 0; d < out.ndim(); ++d) {
    view.shape.push_back(static_cast<int64_t>(out.shape(d)));
    if (out.stride(d) < 0) {
      fail(ErrorCode::kInvalidArgument, "{}: destination strides must be non-negative",
           array.name());
    }
    view.byte_strides.push_back(out.stride(d) * item_size);
    elements *= view.shape.back();
  }
  if (elements == 0) view.data = nullptr;
  return view;
}

/// Reads box [start, start + out.shape) of `array` into `out`, which must have the array's rank,
/// an item size equal to the array's element size and non-negative strides.
void read_into(const Array& array, const std::vector<int64_t>& start, NumpyOut out) {
  const DataType type = array.metadata().data_type;
  const StridedView view = destination(array, start, out, type.size, type.name());
  if (view.data == nullptr) return;
  std::shared_ptr<ThreadPool> pool = shared_pool();
  ReleaseGil release;
  array.read(start, view, pool.get());
}

/// read_into() decoding CF values while each chunk is placed (chute/_cf.py works out the
/// numbers): `out` is float32 or float64; stored values in `missing` become NaN, the others
/// × scale then + offset (each when given).
void read_decoded_into(const Array& array, const std::vector<int64_t>& start, NumpyOut out,
                       std::optional<double> scale, std::optional<double> offset,
                       std::vector<double> missing) {
  if (out.dtype() != nb::dtype<float>() && out.dtype() != nb::dtype<double>()) {
    fail(ErrorCode::kInvalidArgument, "{}: decoded reads go into float32 or float64 arrays",
         array.name());
  }
  const DataType decoded{DTypeKind::kFloat, static_cast<uint8_t>(out.itemsize())};
  normalize_missing(missing);
  ElementConvert convert{array.metadata().data_type, decoded, scale, offset, std::move(missing)};
  check_convert(convert, array.name());
  const StridedView view = destination(array, start, out, decoded.size, decoded.name());
  if (view.data == nullptr) return;
  std::shared_ptr<ThreadPool> pool = shared_pool();
  ReleaseGil release;
  array.read_converted(start, view, convert, pool.get());
}

/// JSON text Python's json.loads reads back, with non-finite floats as its NaN, Infinity and
/// -Infinity (an HDF5 attribute _FillValue = NaN stays a float; nlohmann writes null).
void python_json(const nlohmann::json& value, std::string& out) {
  if (value.is_number_float() && !std::isfinite(value.get<double>())) {
    const double v = value.get<double>();
    out += std::isnan(v) ? "NaN" : (v > 0 ? "Infinity" : "-Infinity");
  } else if (value.is_object()) {
    out += '{';
    bool first = true;
    for (auto it = value.begin(); it != value.end(); ++it) {
      if (!first) out += ',';
      first = false;
      out += nlohmann::json(it.key()).dump();
      out += ':';
      python_json(it.value(), out);
    }
    out += '}';
  } else if (value.is_array()) {
    out += '[';
    for (size_t i = 0; i < value.size(); ++i) {
      if (i) out += ',';
      python_json(value[i], out);
    }
    out += ']';
  } else {
    out += value.dump();
  }
}

std::string python_json(const nlohmann::json& value) {
  std::string out;
  python_json(value, out);
  return out;
}

nb::dict attribute_types(const Array& array) {
  nb::dict types;
  for (const auto& [name, type] : array.metadata().attribute_types) {
    types[nb::str(name.c_str(), name.size())] = type.numpy_str();
  }
  return types;
}

nb::bytes fill_value_bytes(const Array& array) {
  const std::vector<std::byte>& fill = array.metadata().fill_value;
  return nb::bytes(reinterpret_cast<const char*>(fill.data()), fill.size());
}

nb::list codec_specs(const Array& array) {
  nb::list specs;
  for (const CodecSpec& spec : array.metadata().codecs) {
    nb::dict entry;
    entry["name"] = spec.name;
    entry["configuration"] = spec.configuration.dump();
    specs.append(entry);
  }
  return specs;
}

struct FileStoreScope {
  std::optional<ScopedFileStoreOptions> scope;
};

ArrayPtr open_path(const std::string& path, const CacheOptions& cache) {
  ReleaseGil release;
  return open_array(path, cache);
}

CacheOptions cache_options(const nb::bytes& dir, uint64_t max_bytes) {
  CacheOptions options;
  options.dir = std::string(dir.c_str(), dir.size());
  if (max_bytes > 0) options.max_bytes = max_bytes;
  return options;
}

nb::object cache_stats_dict(const Array& array) {
  const std::optional<CacheStats> stats = cache_stats_of(array.store());
  if (!stats) return nb::none();
  return cache_stats_to_python(*stats);
}

/// A file-system name as str, the way os.fsdecode makes it: bytes that are not UTF-8 become
/// surrogates (so os.fsencode gives the same bytes back) instead of failing the conversion.
nb::str fs_str(const std::string& name) {
  PyObject* text =
      PyUnicode_DecodeFSDefaultAndSize(name.data(), static_cast<Py_ssize_t>(name.size()));
  if (text == nullptr) throw nb::python_error();
  return nb::steal<nb::str>(text);
}

nb::dict group_to_python(const Group& group) {
  nb::dict arrays;
  for (const auto& [member, array] : group.arrays) arrays[fs_str(member)] = array;
  nb::list groups;
  for (const std::string& member : group.groups) groups.append(fs_str(member));
  nb::dict result;
  result["name"] = fs_str(group.name);
  result["format"] = group.format;
  result["zarr_format"] = group.zarr_format;
  result["attrs_json"] = python_json(group.attributes);
  nb::dict unsupported;
  for (const auto& [member, why] : group.unsupported) unsupported[fs_str(member)] = why;
  result["unsupported"] = unsupported;
  nb::list strings;
  for (const std::string& member : group.strings) strings.append(fs_str(member));
  result["strings"] = strings;
  result["arrays"] = arrays;
  result["groups"] = groups;
  return result;
}

/// The string dataset at `path` as a dict (its values as bytes, row-major), or None when `path`
/// is no HDF5 string dataset.
nb::object open_strings_path(const std::string& path) {
  std::optional<StringDataset> strings;
  {
    ReleaseGil release;
    strings = open_strings(path);
  }
  if (!strings) return nb::none();
  nb::dict result;
  result["name"] = fs_str(strings->name);
  result["shape"] = nb::tuple(nb::cast(strings->shape));
  nb::list dims;
  for (const std::string& d : strings->dimension_names) dims.append(d);
  result["dims"] = dims;
  result["attrs_json"] = python_json(strings->attributes);
  result["variable_length"] = strings->variable_length;
  result["size"] = strings->size;
  result["utf8"] = strings->utf8;
  nb::list values;
  for (const std::string& v : strings->values) values.append(nb::bytes(v.data(), v.size()));
  result["values"] = values;
  return result;
}

nb::dict open_group_path(const std::string& path, const CacheOptions& cache) {
  Group group;
  {
    ReleaseGil release;
    group = open_group(path, cache);
  }
  return group_to_python(group);
}

}  // namespace

nb::dict cache_stats_to_python(const CacheStats& stats) {
  nb::dict d;
  d["hits"] = stats.hits;
  d["misses"] = stats.misses;
  d["bytes_from_cache"] = stats.bytes_from_cache;
  d["bytes_fetched"] = stats.bytes_fetched;
  d["bytes_written"] = stats.bytes_written;
  d["evicted"] = stats.evicted;
  d["discarded"] = stats.discarded;
  return d;
}

void bind_arrays(nb::module_& m) {
  m.def(
      "set_follow_symlinks",
      [](bool follow) { set_default_file_store_options(FileStoreOptions{follow}); },
      nb::arg("follow"),
      "Whether arrays and loaders opened from now on follow symbolic links inside their folder "
      "(default True, as zarr-python); False confines every read to the folder opened.");
  m.def(
      "get_follow_symlinks", [] { return default_file_store_options().follow_symlinks; },
      "Whether stores opened now follow symbolic links (see set_follow_symlinks).");
  // Per-call follow_symlinks (chute.open(..., follow_symlinks=False)): the opens between enter
  // and exit on this thread take it; other threads keep the process-wide default.
  nb::class_<FileStoreScope>(m, "_FileStoreScope")
      .def(nb::init<>())
      .def("enter",
           [](FileStoreScope& s, bool follow) { s.scope.emplace(FileStoreOptions{follow}); })
      .def("exit", [](FileStoreScope& s) { s.scope.reset(); });
  nb::class_<Array>(m, "_Array", "An opened array of the core; use chute.Array instead.")
      .def_prop_ro("path", [](const Array& a) { return fs_str(a.name()); })
      .def_prop_ro("shape", [](const Array& a) { return a.metadata().shape; })
      .def_prop_ro("chunks", [](const Array& a) { return a.metadata().chunk_shape; })
      .def_prop_ro("read_chunks", &Array::read_chunk_shape)
      .def_prop_ro("dtype_str", [](const Array& a) { return a.metadata().data_type.numpy_str(); })
      .def_prop_ro("dtype_name", [](const Array& a) { return a.metadata().data_type.name(); })
      .def_prop_ro("fill_value_bytes", &fill_value_bytes)
      .def_prop_ro("fill_value_null", [](const Array& a) { return a.metadata().fill_value_null; })
      .def_prop_ro("attrs_json",
                   [](const Array& a) { return python_json(a.metadata().attributes); })
      .def_prop_ro("attribute_types", &attribute_types)
      .def_prop_ro("dimension_names", [](const Array& a) { return a.metadata().dimension_names; })
      .def_prop_ro("zarr_format", [](const Array& a) { return a.metadata().zarr_format; })
      .def_prop_ro("format", [](const Array& a) { return a.metadata().format; })
      .def_prop_ro("codec_specs", &codec_specs)
      .def_prop_ro("codecs", [](const Array& a) { return a.codecs().describe(); })
      .def_prop_ro("cache_stats", &cache_stats_dict)
      .def("storage_key",
           [](const Array& a, const std::vector<int64_t>& coords) { return a.storage_key(coords); })
      .def(
          "decode_cf_times",
          [](const Array& a) {
            ReleaseGil release;
            return decode_cf_times(a, a.name());
          },
          "The CF time coordinate decoded in C++ (units, calendar, scale/offset, fill values): "
          "int64 seconds since 1970-01-01 UTC, INT64_MIN (NaT) where missing.")
      .def("read_into", &read_into, nb::arg("start"), nb::arg("out"),
           "Reads box [start, start + out.shape) into the NumPy array `out` (GIL released).")
      .def("read_decoded_into", &read_decoded_into, nb::arg("start"), nb::arg("out"),
           nb::arg("scale").none(), nb::arg("offset").none(), nb::arg("missing"),
           "read_into() decoding CF values as each chunk is placed into the float32/float64 "
           "`out`: values in `missing` -> NaN, the others × scale then + offset (each unless "
           "None).");

  // Paths come as bytes (os.fsencode): a file name need not be valid UTF-8 on Linux.
  auto native = [](const nb::bytes& path) { return std::string(path.c_str(), path.size()); };
  m.def(
      "_open_array",
      [native](const nb::bytes& path, const nb::bytes& cache, uint64_t cache_size) {
        return open_path(native(path), cache_options(cache, cache_size));
      },
      nb::arg("path"), nb::arg("cache") = nb::bytes(""), nb::arg("cache_size") = 0);
  m.def(
      "_open_strings", [native](const nb::bytes& path) { return open_strings_path(native(path)); },
      nb::arg("path"));
  m.def(
      "_open_group",
      [native](const nb::bytes& path, const nb::bytes& cache, uint64_t cache_size) {
        return open_group_path(native(path), cache_options(cache, cache_size));
      },
      nb::arg("path"), nb::arg("cache") = nb::bytes(""), nb::arg("cache_size") = 0);
  m.def(
      "_open_many",
      [native](const std::vector<nb::bytes>& paths, const std::string& concat_dim, bool allow_gaps,
               const std::string& file_pattern, int64_t step_seconds,
               const std::vector<std::string>& channels, const std::string& channel_array,
               bool or_by_name, const nb::bytes& cache, uint64_t cache_size) {
        std::vector<std::string> files;
        for (const nb::bytes& p : paths) {
          const std::string path = native(p);
          if (is_glob(path)) {
            for (std::string& f : expand_glob(path)) files.push_back(std::move(f));
          } else {
            files.push_back(path);
          }
        }
        ManyFilesOptions options;
        options.concat_dim = concat_dim;
        options.allow_gaps = allow_gaps;
        options.file_pattern = file_pattern;
        options.step_seconds = step_seconds;
        options.channels = channels;
        options.channel_array = channel_array;
        JoinedFiles joined;
        {
          ReleaseGil release;
          std::vector<Group> groups = open_groups(files, cache_options(cache, cache_size));
          // Stores of different variables (pressure and single levels): joined by name.
          if (or_by_name && !same_variables(groups, concat_dim)) {
            joined.group = join_stores(groups);
            joined.members = files;
            joined.segments = {0};
          } else {
            joined = join_along_time(std::move(groups), files, options);
          }
        }
        nb::dict result = group_to_python(joined.group);
        nb::list members;
        for (const std::string& m : joined.members) members.append(fs_str(m));
        result["members"] = members;
        result["segments"] = joined.segments;
        return result;
      },
      nb::arg("paths"), nb::arg("concat_dim"), nb::arg("allow_gaps"), nb::arg("file_pattern"),
      nb::arg("step_seconds"), nb::arg("channels"), nb::arg("channel_array"),
      nb::arg("or_by_name") = false, nb::arg("cache") = nb::bytes(""), nb::arg("cache_size") = 0,
      "Opens files (paths or glob patterns) joined along one dimension (many_files.h).");
  m.def(
      "_register_references",
      [](const std::string& location, const std::vector<std::string>& keys,
         const std::vector<std::string>& urls, const std::vector<uint64_t>& offsets,
         const std::vector<int64_t>& lengths, const std::vector<nb::bytes>& inline_values) {
        const size_t n = keys.size();
        if (urls.size() != n || offsets.size() != n || lengths.size() != n ||
            inline_values.size() != n) {
          fail(ErrorCode::kInvalidArgument, "_register_references: columns of unequal length");
        }
        std::vector<Reference> refs(n);
        for (size_t i = 0; i < n; ++i) {
          refs[i].key = keys[i];
          refs[i].url = urls[i];
          refs[i].offset = offsets[i];
          if (lengths[i] >= 0) refs[i].length = static_cast<uint64_t>(lengths[i]);
          const auto* p = reinterpret_cast<const std::byte*>(inline_values[i].c_str());
          refs[i].data.assign(p, p + inline_values[i].size());
        }
        register_reference_set(
            location, std::make_shared<const ReferenceStore>(std::move(refs), location, location));
      },
      nb::arg("location"), nb::arg("keys"), nb::arg("urls"), nb::arg("offsets"), nb::arg("lengths"),
      nb::arg("inline_values"),
      "Registers a reference set read by the Python layer (Parquet) under `location`.");
  m.def(
      "_is_group", [native](const nb::bytes& path) { return is_group(native(path)); },
      nb::arg("path"));
  m.def("_max_reader_threads", [] { return static_cast<uint64_t>(max_reader_threads()); });
  m.def("set_threads", &set_threads, nb::arg("threads"),
        "Sets the number of threads array reads use (0: one per CPU this process may run on).");
  m.def("get_threads", &get_threads, "The number of threads array reads use.");
}

}  // namespace chute::python
