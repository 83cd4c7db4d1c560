// Bindings for datasets and the Loader. Batches become NumPy arrays without a copy: each array
// holds a capsule owning a shared_ptr to the pooled batch buffer, so the memory goes back to the
// pool when the last array (or a DLPack consumer of it) lets go. The Python-side Loader, Batch
// and adapters live in chute/loader.py, chute/torch.py and chute/jax.py.

#include "chute/loader.h"

#include <nanobind/ndarray.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "bindings.h"
#include "chute/dataset/anemoi_dataset.h"
#include "chute/dataset/many_files.h"
#include "chute/format/zarr.h"
#include "chute/util/error.h"

namespace nb = nanobind;

namespace chute::python {
namespace {

using NumpyArray = nb::ndarray<nb::numpy, nb::device::cpu, nb::c_contig>;

nb::dlpack::dtype dlpack_dtype(const DataType& type) {
  nb::dlpack::dtype out{};
  out.bits = static_cast<uint8_t>(type.size * 8);
  out.lanes = 1;
  switch (type.kind) {
    case DTypeKind::kBool:
      out.code = static_cast<uint8_t>(nb::dlpack::dtype_code::Bool);
      break;
    case DTypeKind::kInt:
      out.code = static_cast<uint8_t>(nb::dlpack::dtype_code::Int);
      break;
    case DTypeKind::kUInt:
      out.code = static_cast<uint8_t>(nb::dlpack::dtype_code::UInt);
      break;
    case DTypeKind::kFloat:
      out.code = static_cast<uint8_t>(nb::dlpack::dtype_code::Float);
      break;
    case DTypeKind::kComplex:
      out.code = static_cast<uint8_t>(nb::dlpack::dtype_code::Complex);
      break;
    // NumPy has no bfloat16: hand out its bits as uint16; chute/loader.py views them as
    // ml_dtypes.bfloat16.
    case DTypeKind::kBFloat:
      out.code = static_cast<uint8_t>(nb::dlpack::dtype_code::UInt);
      break;
  }
  return out;
}

/// A capsule holding a reference to the batch buffer of `array`.
nb::capsule buffer_owner(const BatchArray& array) {
  auto* owner = new std::shared_ptr<std::byte>(array.owner);
  return nb::capsule(owner,
                     [](void* p) noexcept { delete static_cast<std::shared_ptr<std::byte>*>(p); });
}

/// A zero-copy NumPy array over `array`, keeping its buffer alive through a capsule.
NumpyArray to_numpy(const BatchArray& array) {
  std::vector<size_t> shape(array.shape.begin(), array.shape.end());
  return NumpyArray(array.data, shape.size(), shape.data(), buffer_owner(array), nullptr,
                    dlpack_dtype(array.dtype));
}

NumpyArray indices_to_numpy(std::vector<int64_t> indices) {
  auto* owner = new std::vector<int64_t>(std::move(indices));
  nb::capsule capsule(owner,
                      [](void* p) noexcept { delete static_cast<std::vector<int64_t>*>(p); });
  size_t shape[1] = {owner->size()};
  return NumpyArray(owner->data(), 1, shape, capsule, nullptr, nb::dtype<int64_t>());
}

// DLPack's C ABI (dlpack.h, v1.0), declared here: a device batch is exported by hand, with the
// stream protocol, which nanobind's ndarray does not implement.
struct DLDevice {
  int32_t device_type;
  int32_t device_id;
};
struct DLDataType {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
};
struct DLTensor {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;
  uint64_t byte_offset;
};
struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor*);
};
struct DLPackVersion {
  uint32_t major;
  uint32_t minor;
};
struct DLManagedTensorVersioned {
  DLPackVersion version;
  void* manager_ctx;
  void (*deleter)(DLManagedTensorVersioned*);
  uint64_t flags;
  DLTensor dl_tensor;
};

/// A batch array in device memory (Loader(device=...)): exported through DLPack only. Holding it
/// (or a tensor made from it) holds the device buffer; the buffer returns to the loader's pool
/// when the last holder lets go (the DLPack deleter).
struct DeviceArray {
  BatchArray array;
  std::string device;
};

// What a DLPack capsule owns: the shape and a reference to the device buffer.
template <typename Managed>
struct Exported {
  Managed managed{};
  std::vector<int64_t> shape;
  std::shared_ptr<std::byte> owner;
};

template <typename Managed>
void fill_tensor(Exported<Managed>& e, const BatchArray& array) {
  DLTensor& t = e.managed.dl_tensor;
  t.data = array.data;
  t.device = {array.place.device_type, array.place.device_id};
  t.ndim = static_cast<int32_t>(e.shape.size());
  nb::dlpack::dtype type = dlpack_dtype(array.dtype);
  if (array.dtype.kind == DTypeKind::kBFloat) {
    type.code = static_cast<uint8_t>(nb::dlpack::dtype_code::Bfloat);
  }
  t.dtype = {type.code, type.bits, type.lanes};
  t.shape = e.shape.data();
  t.strides = nullptr;  // C-contiguous
  t.byte_offset = 0;
  e.managed.manager_ctx = &e;
}

/// The capsule `__dlpack__` returns; its consumer orders itself after chute's copy first.
nb::object export_device_array(const DeviceArray& self, nb::handle stream, nb::handle max_version,
                               nb::handle dl_device, nb::handle copy) {
  const BatchArray& array = self.array;
  if (!copy.is_none() && nb::cast<bool>(copy)) {
    throw nb::buffer_error(
        "chute's device batches are exported without a copy (copy=True is not supported)");
  }
  if (!dl_device.is_none()) {
    auto wanted = nb::cast<std::pair<int, int>>(dl_device);
    if (wanted.first != array.place.device_type || wanted.second != array.place.device_id) {
      throw nb::buffer_error("chute's device batch cannot be exported to another device");
    }
  }
  // DLPack's stream protocol: None is the legacy default stream for CUDA (and "the host" for
  // host memory), -1 asks for no ordering, anything else is the consumer's stream.
  int64_t consumer = 0;
  if (!stream.is_none()) consumer = nb::cast<int64_t>(stream);
  if (array.ready) {
    ReleaseGil release;
    if (stream.is_none()) {
      if (array.place.on_host()) {
        array.ready->wait_host();
      } else {
        array.ready->order_stream(1);
      }
    } else if (consumer != -1) {
      array.ready->order_stream(static_cast<uintptr_t>(consumer));
    }
  }
  bool versioned = false;
  if (!max_version.is_none()) {
    versioned = nb::cast<std::pair<int, int>>(max_version).first >= 1;
  }
  if (versioned) {
    auto* e = new Exported<DLManagedTensorVersioned>();
    e->shape = array.shape;
    e->owner = array.owner;
    fill_tensor(*e, array);
    e->managed.version = {1, 0};
    e->managed.flags = 0;
    e->managed.deleter = [](DLManagedTensorVersioned* m) {
      delete static_cast<Exported<DLManagedTensorVersioned>*>(m->manager_ctx);
    };
    PyObject* capsule = PyCapsule_New(&e->managed, "dltensor_versioned", [](PyObject* o) {
      if (PyCapsule_IsValid(o, "dltensor_versioned")) {  // never consumed
        auto* m =
            static_cast<DLManagedTensorVersioned*>(PyCapsule_GetPointer(o, "dltensor_versioned"));
        m->deleter(m);
      }
    });
    if (capsule == nullptr) {
      delete e;
      throw nb::python_error();
    }
    return nb::steal(capsule);
  }
  auto* e = new Exported<DLManagedTensor>();
  e->shape = array.shape;
  e->owner = array.owner;
  fill_tensor(*e, array);
  e->managed.deleter = [](DLManagedTensor* m) {
    delete static_cast<Exported<DLManagedTensor>*>(m->manager_ctx);
  };
  PyObject* capsule = PyCapsule_New(&e->managed, "dltensor", [](PyObject* o) {
    if (PyCapsule_IsValid(o, "dltensor")) {
      auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(o, "dltensor"));
      m->deleter(m);
    }
  });
  if (capsule == nullptr) {
    delete e;
    throw nb::python_error();
  }
  return nb::steal(capsule);
}

/// (epoch, index, indices, padding, [(name, array, dtype name, DLPack exporter)]) for
/// chute.loader.Batch; a device batch's arrays are (name, None, dtype name, DeviceArray).
/// A host batch's exporter is a DeviceArray too (device "cpu"), typed as the batch is (bfloat16
/// as kDLBfloat, which NumPy's view holds as uint16 bits): its DLPack deleter only drops a C++
/// reference, so a consumer may free the tensor on any thread, without the GIL and at exit
/// (JAX frees buffers on its own threads; nanobind's exporter would take the GIL there).
nb::tuple batch_to_python(Batch batch, const std::string& device) {
  nb::list arrays;
  for (const BatchArray& array : batch.arrays) {
    if (array.ready) {
      arrays.append(
          nb::make_tuple(array.name, nb::none(), array.dtype.name(), DeviceArray{array, device}));
      continue;
    }
    arrays.append(
        nb::make_tuple(array.name, to_numpy(array), array.dtype.name(), DeviceArray{array, "cpu"}));
  }
  return nb::make_tuple(batch.epoch, batch.index, indices_to_numpy(std::move(batch.indices)),
                        batch.padding, arrays);
}

// The output dtype of a dataset built in Python (chute.anemoi).
DataType parse_output_dtype(const std::string& name) {
  if (name == "float32") return {DTypeKind::kFloat, 4};
  if (name == "float16") return {DTypeKind::kFloat, 2};
  if (name == "bfloat16") return {DTypeKind::kBFloat, 2};
  fail(ErrorCode::kInvalidArgument, "dtype must be float32, float16 or bfloat16, got '{}'", name);
}

nb::dict stats_to_python(const LoaderStats& s) {
  nb::dict d;
  d["batches"] = s.batches;
  d["samples"] = s.samples;
  d["wait_s"] = s.wait_ns * 1e-9;
  d["first_batch_s"] = s.first_batch_ns < 0 ? -1.0 : s.first_batch_ns * 1e-9;
  d["produce_s"] = s.produce_ns * 1e-9;
  d["batches_produced"] = s.batches_produced;
  d["finish_s"] = s.finish_ns * 1e-9;
  d["read_s"] = s.read_ns * 1e-9;
  d["decode_s"] = s.decode_ns * 1e-9;
  d["assemble_s"] = s.assemble_ns * 1e-9;
  d["bytes_read"] = s.bytes_read;
  d["bytes_decoded"] = s.bytes_decoded;
  d["chunks"] = s.chunks;
  d["missing_chunks"] = s.missing_chunks;
  d["buffers_allocated"] = s.buffers_allocated;
  d["stored_buffers_allocated"] = s.stored_buffers_allocated;
  d["prefetch"] = s.prefetch;
  d["io_concurrency"] = s.io_concurrency;
  d["read_ahead"] = s.read_ahead;
  d["batches_read_ahead"] = s.batches_read_ahead;
  d["reads_submitted_ahead"] = s.reads_submitted_ahead;
  d["cache"] = s.cache ? nb::object(cache_stats_to_python(*s.cache)) : nb::none();
  if (s.delivery) {
    nb::dict delivery;
    delivery["copies"] = s.delivery->copies;
    delivery["bytes_copied"] = s.delivery->bytes_copied;
    delivery["copy_submit_s"] = s.delivery->copy_submit_ns * 1e-9;
    delivery["acquire_s"] = s.delivery->acquire_ns * 1e-9;
    delivery["host_waits"] = s.delivery->host_waits;
    delivery["host_wait_s"] = s.delivery->host_wait_ns * 1e-9;
    delivery["device_buffers"] = s.delivery->device_buffers;
    delivery["consumer_waits"] = s.delivery->consumer_waits;
    delivery["release_waits"] = s.delivery->release_waits;
    d["delivery"] = delivery;
  } else {
    d["delivery"] = nb::none();
  }
  nb::list occupancy;
  for (const OccupancySample& o : s.occupancy) {
    occupancy.append(nb::make_tuple(o.time_ns * 1e-9, o.queued));
  }
  d["occupancy"] = occupancy;
  return d;
}

}  // namespace

void bind_loader(nb::module_& m) {
  nb::class_<Dataset>(m, "_Dataset",
                      "What a sample is; built by chute.packed() or chute.windows().")
      .def_prop_ro("num_samples", &Dataset::num_samples)
      .def("describe", &Dataset::describe)
      .def("outputs", [](const Dataset& d) {
        nb::list out;
        for (const OutputSpec& spec : d.outputs()) {
          out.append(nb::make_tuple(spec.name, spec.dtype.name(), spec.sample_shape));
        }
        return out;
      });

  nb::class_<WindowDataset, Dataset>(m, "_WindowDataset")
      .def_prop_ro("first_time", &WindowDataset::first_time)
      .def_prop_ro("step_channels", &WindowDataset::step_channels)
      .def("sample_time", &WindowDataset::sample_time, nb::arg("sample"))
      .def("channel_names", &WindowDataset::channel_names, nb::arg("output"));

  m.def(
      "_open_packed",
      [](const std::vector<std::pair<std::string, nb::bytes>>& named, const nb::bytes& cache_dir,
         uint64_t cache_size) -> std::pair<DatasetPtr, int64_t> {
        // Paths come as bytes (os.fsencode): a file name need not be valid UTF-8 on Linux.
        std::vector<std::pair<std::string, std::string>> paths;
        for (const auto& [name, path] : named) {
          paths.emplace_back(name, std::string(path.c_str(), path.size()));
        }
        CacheOptions cache;
        cache.dir = std::string(cache_dir.c_str(), cache_dir.size());
        if (cache_size > 0) cache.max_bytes = cache_size;
        ReleaseGil release;
        std::shared_ptr<PackedDataset> dataset = open_packed_dataset(paths, cache);
        int64_t sample_chunk = 1;  // samples per read chunk along axis 0, for shuffle="chunks"
        for (const auto& [name, array] : dataset->arrays()) {
          sample_chunk = std::max(sample_chunk, array->read_chunk_shape().at(0));
        }
        return std::make_pair(DatasetPtr(std::move(dataset)), sample_chunk);
      },
      nb::arg("paths"), nb::arg("cache") = nb::bytes(""), nb::arg("cache_size") = 0,
      "A packed dataset, and the most samples one read chunk holds along axis 0.");

  m.def(
      "_open_windows",
      [](const std::vector<std::string>& paths, WindowOptions options, const nb::bytes& cache_dir,
         uint64_t cache_size, std::optional<std::map<std::string, ArrayPtr>> joined_arrays,
         std::vector<int64_t> segments) -> std::shared_ptr<WindowDataset> {
        CacheOptions cache;
        cache.dir = std::string(cache_dir.c_str(), cache_dir.size());
        if (cache_size > 0) cache.max_bytes = cache_size;
        ReleaseGil release;
        if (joined_arrays) {  // files joined along time by chute.open_group(paths, ...)
          validate(options);
          JoinedFiles joined;
          joined.group.name = paths.empty() ? std::string("joined files") : paths[0];
          joined.group.arrays = std::move(*joined_arrays);
          joined.segments = segments.empty() ? std::vector<int64_t>{0} : std::move(segments);
          return make_joined_window_dataset(joined, std::move(options));
        }
        return open_window_dataset(paths, std::move(options), cache);
      },
      nb::arg("paths"), nb::arg("options"), nb::arg("cache") = nb::bytes(""),
      nb::arg("cache_size") = 0, nb::arg("joined_arrays") = nb::none(),
      nb::arg("segments") = std::vector<int64_t>{});

  nb::class_<AnemoiDataset, Dataset>(m, "_AnemoiDataset")
      .def_prop_ro("cells", &AnemoiDataset::cells)
      .def_prop_ro("members", &AnemoiDataset::members)
      .def_prop_ro("stored_bytes_per_sample", &AnemoiDataset::stored_bytes_per_sample);

  using AnemoiRead = std::tuple<int64_t, int64_t, int64_t>;
  m.def(
      "_open_anemoi",
      [](std::vector<ArrayPtr> sources, std::vector<std::string> source_names,
         std::vector<std::pair<std::vector<AnemoiRead>, std::vector<int64_t>>> layouts,
         std::vector<int64_t> date_layout, std::vector<int64_t> date_times,
         std::vector<int64_t> date_time_offsets, int64_t num_variables,
         std::vector<int64_t> members, int64_t cell_begin, int64_t cell_end,
         std::vector<int64_t> sample_dates, std::vector<int64_t> input_offsets,
         std::vector<int64_t> target_offsets, std::vector<int64_t> input_variables,
         std::vector<int64_t> target_variables, std::vector<float> mul, std::vector<float> add,
         bool variables_first, const std::string& dtype) -> std::shared_ptr<AnemoiDataset> {
        AnemoiOptions o;
        o.sources = std::move(sources);
        o.source_names = std::move(source_names);
        for (auto& [reads, rows] : layouts) {
          AnemoiOptions::Layout layout;
          for (const auto& [source, begin, end] : reads)
            layout.reads.push_back({source, begin, end});
          layout.rows = std::move(rows);
          o.layouts.push_back(std::move(layout));
        }
        o.date_layout = std::move(date_layout);
        o.date_times = std::move(date_times);
        o.date_time_offsets = std::move(date_time_offsets);
        o.num_variables = num_variables;
        o.members = std::move(members);
        o.cell_begin = cell_begin;
        o.cell_end = cell_end;
        o.sample_dates = std::move(sample_dates);
        o.input_offsets = std::move(input_offsets);
        o.target_offsets = std::move(target_offsets);
        o.input_variables = std::move(input_variables);
        o.target_variables = std::move(target_variables);
        o.mul = std::move(mul);
        o.add = std::move(add);
        o.variables_first = variables_first;
        o.output_dtype = parse_output_dtype(dtype);
        ReleaseGil release;
        return std::make_shared<AnemoiDataset>(std::move(o));
      },
      nb::arg("sources"), nb::arg("source_names"), nb::arg("layouts"), nb::arg("date_layout"),
      nb::arg("date_times"), nb::arg("date_time_offsets"), nb::arg("num_variables"),
      nb::arg("members"), nb::arg("cell_begin"), nb::arg("cell_end"), nb::arg("sample_dates"),
      nb::arg("input_offsets"), nb::arg("target_offsets"), nb::arg("input_variables"),
      nb::arg("target_variables"), nb::arg("mul"), nb::arg("add"), nb::arg("variables_first"),
      nb::arg("dtype"), "An anemoi dataset resolved by chute/_anemoi.py.");

  nb::class_<CropDataset, Dataset>(m, "_CropDataset")
      .def_prop_ro("transform_count", &CropDataset::transform_count)
      .def_prop_ro("grid", &CropDataset::grid)
      .def_prop_ro("size", &CropDataset::size)
      .def(
          "crop",
          [](const CropDataset& d, uint64_t seed, int64_t epoch, int64_t sample) {
            const CropDataset::Crop crop = d.crop(seed, epoch, sample);
            return nb::make_tuple(crop.corner, crop.transform);
          },
          nb::arg("seed"), nb::arg("epoch"), nb::arg("sample"));

  m.def(
      "_open_crops",
      [](std::vector<std::pair<std::string, ArrayPtr>> arrays,
         CropOptions options) -> std::shared_ptr<CropDataset> {
        ReleaseGil release;
        return std::make_shared<CropDataset>(std::move(arrays), std::move(options));
      },
      nb::arg("arrays"), nb::arg("options"));

  m.def(
      "_cube_symmetries",
      [] {
        nb::list table;
        for (int id = 0; id < kCubeSymmetries; ++id) {
          const CubeSymmetry& s = cube_symmetry(id);
          std::vector<int> flips;
          for (int k = 0; k < 3; ++k) {
            if (s.flips[static_cast<size_t>(k)]) flips.push_back(k);
          }
          table.append(nb::make_tuple(nb::make_tuple(s.axes[0], s.axes[1], s.axes[2]),
                                      nb::tuple(nb::cast(flips))));
        }
        return table;
      },
      "(axes, flips) of each cube symmetry id: y = np.flip(np.transpose(x, axes), flips).");

  // For `chute bench --device`: the delivery stage alone, over one assembled page-locked batch
  // buffer of `nbytes` delivered `batches` times (each released at once); seconds.
  m.def(
      "_testing_delivery_seconds",
      [](const std::string& device_name, size_t nbytes, int64_t batches) {
        ReleaseGil release;
        DevicePtr device = open_device(device_name);
        BufferPool host(nbytes, 1, device->pinned_memory(/*consumer_copies=*/false));
        std::shared_ptr<std::byte> buffer = host.acquire();
        host.reserve(1);
        std::memset(buffer.get(), 1, host.buffer_bytes());
        DeviceDelivery delivery(device, host.buffer_bytes(), 4);
        delivery.reserve(4);
        const auto one = [&] {
          Batch batch;
          batch.indices = {0};
          BatchArray array;
          array.dtype = DataType{DTypeKind::kUInt, 1};
          array.shape = {static_cast<int64_t>(host.buffer_bytes())};
          array.data = buffer.get();
          array.owner = buffer;
          batch.arrays.push_back(std::move(array));
          Batch delivered = delivery.deliver(std::move(batch), buffer);
          delivered.arrays[0].ready->order_stream(1);
        };
        one();
        delivery.drain();
        const auto start = std::chrono::steady_clock::now();
        for (int64_t i = 0; i < batches; ++i) one();
        delivery.drain();
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      },
      nb::arg("device"), nb::arg("nbytes"), nb::arg("batches"));

  nb::class_<DeviceArray>(m, "_DeviceArray",
                          "A batch array (in device or host memory), for DLPack consumers "
                          "(torch.from_dlpack, jax.numpy.from_dlpack).")
      .def_prop_ro("shape",
                   [](const DeviceArray& a) {
                     nb::list shape;
                     for (int64_t extent : a.array.shape) shape.append(extent);
                     return nb::tuple(shape);
                   })
      .def_prop_ro("dtype", [](const DeviceArray& a) { return a.array.dtype.name(); })
      .def_prop_ro("device", [](const DeviceArray& a) { return a.device; })
      .def_prop_ro("nbytes", [](const DeviceArray& a) { return a.array.nbytes(); })
      .def("__dlpack_device__",
           [](const DeviceArray& a) {
             return nb::make_tuple(a.array.place.device_type, a.array.place.device_id);
           })
      .def("__dlpack__", &export_device_array, nb::kw_only(), nb::arg("stream").none() = nb::none(),
           nb::arg("max_version").none() = nb::none(), nb::arg("dl_device").none() = nb::none(),
           nb::arg("copy").none() = nb::none(),
           "DLPack export: the consumer's `stream` is ordered after chute's copy (an event, no "
           "synchronisation of the device).")
      .def("__repr__", [](const DeviceArray& a) {
        std::string shape;
        for (int64_t extent : a.array.shape) {
          shape += (shape.empty() ? "" : ", ") + std::to_string(extent);
        }
        return "chute device array(" + a.device + ", " + a.array.dtype.name() + "[" + shape + "])";
      });

  nb::class_<Loader>(m, "_Loader", "The core loader; use chute.Loader instead.")
      .def(
          "__init__",
          [](Loader* self, DatasetPtr dataset, const LoaderOptions& options) {
            ReleaseGil release;  // reserving and faulting in the batch buffers
            new (self) Loader(std::move(dataset), options);
          },
          nb::arg("dataset"), nb::arg("options"))
      .def_prop_ro("options", [](const Loader& l) { return l.options(); })
      .def_prop_ro("batches_per_epoch", &Loader::batches_per_epoch)
      .def_prop_ro("threads", &Loader::threads)
      .def_prop_ro("num_samples", [](const Loader& l) { return l.dataset().num_samples(); })
      .def(
          "begin_epoch",
          [](Loader& l, std::optional<int64_t> epoch, int64_t start_batch) {
            ReleaseGil release;
            if (epoch) {
              l.begin_epoch(*epoch, start_batch);
            } else {
              l.begin_epoch();
            }
          },
          nb::arg("epoch") = nb::none(), nb::arg("start_batch") = 0)
      .def("next",
           [](Loader& l) -> nb::object {
             // Wait in short slices with the GIL released, checking for signals between them,
             // so Ctrl-C raises KeyboardInterrupt at once (the epoch is then stopped and its
             // threads joined) instead of after the batch, or never when a read is stuck.
             // With a timeout, next() below counts the time waited here and throws.
             const auto slice = std::chrono::milliseconds(50);
             const double timeout_s = l.options().timeout_s;
             const auto start = std::chrono::steady_clock::now();
             for (;;) {
               bool ready;
               {
                 ReleaseGil release;
                 ready = l.wait(slice);
               }
               if (ready) break;
               if (PyErr_CheckSignals() != 0) {
                 {
                   ReleaseGil release;
                   l.stop();
                 }
                 throw nb::python_error();
               }
               const std::chrono::duration<double> waited =
                   std::chrono::steady_clock::now() - start;
               if (timeout_s > 0 && waited.count() >= timeout_s) break;
             }
             std::optional<Batch> batch;
             {
               ReleaseGil release;
               batch = l.next();
             }
             if (!batch) return nb::none();
             return batch_to_python(std::move(*batch), l.options().device);
           })
      .def("stop",
           [](Loader& l) {
             ReleaseGil release;
             l.stop();
           })
      .def("state",
           [](const Loader& l) {
             SamplerState s = l.state();
             return nb::make_tuple(s.seed, s.epoch, s.next_batch, s.batch_size, s.world_size,
                                   s.dataset);
           })
      .def(
          "restore",
          [](Loader& l, uint64_t seed, int64_t epoch, int64_t next_batch, int64_t batch_size,
             int64_t world_size, uint64_t dataset) {
            ReleaseGil release;
            SamplerState state{seed, epoch, next_batch};
            state.batch_size = batch_size;
            state.world_size = world_size;
            state.dataset = dataset;
            l.restore(state);
          },
          nb::arg("seed"), nb::arg("epoch"), nb::arg("next_batch"), nb::arg("batch_size") = 0,
          nb::arg("world_size") = 0, nb::arg("dataset") = 0)
      .def("stats", [](const Loader& l) { return stats_to_python(l.stats()); })
      .def("reset_stats", &Loader::reset_stats);
}

}  // namespace chute::python
