// chute_testing: helpers for the Python tests, built with the C++ tests (CHUTE_BUILD_TESTS) and
// never installed, so the shipped chute._chute carries no testing code. Its datasets are the
// types chute._chute binds (nanobind shares them between the two modules): import chute first.

#include <nanobind/nanobind.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chute/dataset/packed_dataset.h"
#include "chute/format/zarr.h"
#include "chute/store/file_store.h"
#include "chute/store/io_executor.h"
#include "chute/store/latency_store.h"
#include "chute/util/error.h"

namespace nb = nanobind;

NB_MODULE(chute_testing, m) {
  using namespace chute;
  m.doc() = "Testing only: helpers for chute's Python tests (not part of the package).";
  // This module links its own copy of the core, so its stores have their own I/O executor.
  m.def(
      "io_thread_count", [] { return IoExecutor::shared()->threads(); },
      "Threads of this module's own I/O executor (tests count the process's chute-io threads).");
  // Zarr arrays read through a store that answers each read after `delay_s` seconds without
  // holding a thread, and counts the reads in flight.
  nb::class_<LatencyStore>(m, "LatencyStore", "A store that delays reads and counts them.")
      .def_prop_ro("reads", &LatencyStore::reads)
      .def_prop_ro("in_flight", &LatencyStore::in_flight)
      .def_prop_ro("max_in_flight", &LatencyStore::max_in_flight)
      .def("reset_counts", &LatencyStore::reset_counts);
  m.def(
      "latency_packed",
      [](const std::vector<std::pair<std::string, nb::bytes>>& named, double delay_s) {
        auto slow = std::make_shared<LatencyStore>(
            std::make_shared<FileStore>("/"),
            std::chrono::nanoseconds(static_cast<int64_t>(delay_s * 1e9)));
        std::vector<std::pair<std::string, ArrayPtr>> arrays;
        {
          nb::gil_scoped_release release;
          for (const auto& [name, path] : named) {
            std::string absolute(path.c_str(), path.size());
            if (absolute.empty() || absolute[0] != '/') {
              fail(ErrorCode::kInvalidArgument, "expected an absolute path, got '{}'", absolute);
            }
            arrays.emplace_back(name, open_zarr_array(slow, absolute.substr(1), absolute));
          }
        }
        DatasetPtr dataset = std::make_shared<PackedDataset>(std::move(arrays));
        return std::make_pair(dataset, slow);
      },
      nb::arg("paths"), nb::arg("delay_s"),
      "A dataset of Zarr arrays (arrays sharing axis 0) read through a LatencyStore.");
}
