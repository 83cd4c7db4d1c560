// chute_testing: helpers for the Python tests, built with the C++ tests (CHUTE_BUILD_TESTS) and
// never installed, so the shipped chute._chute carries no testing code. It holds one store of
// its own (LatencyStore) and nothing else of the core: the files under it are a store made by
// chute._chute, and the arrays over it are opened there, so every read, decode and I/O thread
// is chute._chute's (one executor per process). Import chute first: the store and dataset types
// are the ones chute._chute binds (nanobind shares them between the two modules).

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

#include "chute/store/latency_store.h"
#include "chute/util/error.h"

namespace nb = nanobind;

NB_MODULE(chute_testing, m) {
  using namespace chute;
  m.doc() = "Testing only: helpers for chute's Python tests (not part of the package).";
  nb::module_ core = nb::module_::import_("chute._chute");
  // A store that answers each read after `delay_s` seconds without holding a thread, and counts
  // the reads in flight.
  nb::class_<LatencyStore, Store>(m, "LatencyStore", "A store that delays reads and counts them.")
      .def_prop_ro("reads", &LatencyStore::reads)
      .def_prop_ro("in_flight", &LatencyStore::in_flight)
      .def_prop_ro("max_in_flight", &LatencyStore::max_in_flight)
      .def("reset_counts", &LatencyStore::reset_counts);
  m.def(
      "latency_packed",
      [core](const std::vector<std::pair<std::string, nb::bytes>>& named, double delay_s) {
        std::shared_ptr<Store> files =
            nb::cast<std::shared_ptr<Store>>(core.attr("_file_store")(nb::bytes("/", 1)));
        auto slow = std::make_shared<LatencyStore>(
            files, std::chrono::nanoseconds(static_cast<int64_t>(delay_s * 1e9)));
        nb::list keys;
        for (const auto& [name, path] : named) {
          const std::string absolute(path.c_str(), path.size());
          if (absolute.empty() || absolute[0] != '/') {
            fail(ErrorCode::kInvalidArgument, "expected an absolute path, got '{}'", absolute);
          }
          keys.append(nb::make_tuple(name, nb::bytes(absolute.data() + 1, absolute.size() - 1)));
        }
        nb::object dataset = core.attr("_packed_over_store")(nb::cast(slow), keys);
        return nb::make_tuple(dataset, nb::cast(slow));
      },
      nb::arg("paths"), nb::arg("delay_s"),
      "A dataset of Zarr arrays (arrays sharing axis 0) read through a LatencyStore.");
}
