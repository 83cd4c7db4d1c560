// Bindings for datasets and the Loader. Batches become NumPy arrays without a copy: each array
// holds a capsule owning a shared_ptr to the pooled batch buffer, so the memory goes back to the
// pool when the last array (or a DLPack consumer of it) lets go. The Python-side Loader, Batch
// and adapters live in chute/loader.py, chute/torch.py and chute/jax.py.

#include "chute/loader.h"

#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "bindings.h"
#include "chute/format/zarr.h"
#include "chute/util/error.h"

namespace nb = nanobind;

namespace chute::python {
namespace {

using NumpyArray = nb::ndarray<nb::numpy, nb::device::cpu, nb::c_contig>;
// nanobind's array-API object: it exports DLPack (__dlpack__, __dlpack_device__) with the batch's
// own dtype, bfloat16 (kDLBfloat) included, for torch.from_dlpack and jax.numpy.from_dlpack.
using DlpackArray = nb::ndarray<nb::array_api, nb::device::cpu, nb::c_contig>;

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

/// The same buffer for DLPack consumers, typed as it is: bfloat16 as kDLBfloat (NumPy's view of
/// it is uint16 bits, which torch and jax would take for integers).
DlpackArray to_dlpack(const BatchArray& array) {
  std::vector<size_t> shape(array.shape.begin(), array.shape.end());
  nb::dlpack::dtype type = dlpack_dtype(array.dtype);
  if (array.dtype.kind == DTypeKind::kBFloat) {
    type.code = static_cast<uint8_t>(nb::dlpack::dtype_code::Bfloat);
  }
  return DlpackArray(array.data, shape.size(), shape.data(), buffer_owner(array), nullptr, type);
}

NumpyArray indices_to_numpy(std::vector<int64_t> indices) {
  auto* owner = new std::vector<int64_t>(std::move(indices));
  nb::capsule capsule(owner,
                      [](void* p) noexcept { delete static_cast<std::vector<int64_t>*>(p); });
  size_t shape[1] = {owner->size()};
  return NumpyArray(owner->data(), 1, shape, capsule, nullptr, nb::dtype<int64_t>());
}

/// (epoch, index, indices, padding, [(name, array, dtype name, DLPack export)]) for
/// chute.loader.Batch.
nb::tuple batch_to_python(Batch batch) {
  nb::list arrays;
  for (const BatchArray& array : batch.arrays) {
    arrays.append(
        nb::make_tuple(array.name, to_numpy(array), array.dtype.name(), to_dlpack(array)));
  }
  return nb::make_tuple(batch.epoch, batch.index, indices_to_numpy(std::move(batch.indices)),
                        batch.padding, arrays);
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
        nb::gil_scoped_release release;
        std::shared_ptr<PackedDataset> dataset = open_packed_dataset(paths, cache);
        int64_t sample_chunk = 1;  // samples per read chunk along axis 0, for shuffle="chunks"
        for (const auto& [name, array] : dataset->arrays()) {
          sample_chunk = std::max(sample_chunk, array->read_chunk_shape().at(0));
        }
        return std::make_pair(DatasetPtr(std::move(dataset)), sample_chunk);
      },
      nb::arg("paths"), nb::arg("cache") = nb::bytes(""), nb::arg("cache_size") = 0,
      "A W1 dataset, and the most samples one read chunk holds along axis 0.");

  m.def(
      "_open_windows",
      [](const std::vector<std::string>& paths, WindowOptions options, const nb::bytes& cache_dir,
         uint64_t cache_size) -> std::shared_ptr<WindowDataset> {
        CacheOptions cache;
        cache.dir = std::string(cache_dir.c_str(), cache_dir.size());
        if (cache_size > 0) cache.max_bytes = cache_size;
        nb::gil_scoped_release release;
        return open_window_dataset(paths, std::move(options), cache);
      },
      nb::arg("paths"), nb::arg("options"), nb::arg("cache") = nb::bytes(""),
      nb::arg("cache_size") = 0);

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
        nb::gil_scoped_release release;
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

  nb::class_<Loader>(m, "_Loader", "The core loader; use chute.Loader instead.")
      .def(
          "__init__",
          [](Loader* self, DatasetPtr dataset, const LoaderOptions& options) {
            nb::gil_scoped_release release;  // reserving and faulting in the batch buffers
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
            nb::gil_scoped_release release;
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
                 nb::gil_scoped_release release;
                 ready = l.wait(slice);
               }
               if (ready) break;
               if (PyErr_CheckSignals() != 0) {
                 {
                   nb::gil_scoped_release release;
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
               nb::gil_scoped_release release;
               batch = l.next();
             }
             if (!batch) return nb::none();
             return batch_to_python(std::move(*batch));
           })
      .def("stop",
           [](Loader& l) {
             nb::gil_scoped_release release;
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
            nb::gil_scoped_release release;
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
