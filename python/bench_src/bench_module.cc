// chute._bench: the measuring side of the Python package, built apart from chute._chute so that
// the reading module links the library only (chute_core) and not the benchmark harness.

#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <string>
#include <vector>

#include "chute/bench/machine.h"
#include "chute/bench/roofline.h"
#include "chute/format/open.h"
#include "chute/util/thread_pool.h"

namespace nb = nanobind;

namespace {

/// The roofline (bench::measure_roofline) on the chunks holding the given boxes (start, shape)
/// of the array at `path`, or on all of it when there are none; a JSON document.
std::string roofline_json(const std::string& path, std::vector<std::vector<int64_t>> starts,
                          std::vector<std::vector<int64_t>> shapes, int64_t threads) {
  nb::gil_scoped_release release;
  const chute::ArrayPtr array = chute::open_array(path);
  if (starts.empty() && shapes.empty()) {
    starts.emplace_back(array->rank(), 0);
    shapes.push_back(array->metadata().shape);
  }
  chute::bench::RooflineOptions options;
  options.threads =
      static_cast<int>(threads > 0 ? threads : static_cast<int64_t>(chute::default_thread_count()));
  options.usable_cores = chute::bench::describe_machine().usable_cores;
  const auto refs = chute::bench::chunks_in_boxes(*array, starts, shapes);
  return chute::bench::to_json(chute::bench::measure_roofline(refs, options)).dump();
}

}  // namespace

NB_MODULE(_bench, m) {
  m.doc() = "chute._bench: roofline probes for benchmark scripts (scripts/read_throughput.py)";
  m.def("roofline_json", &roofline_json, nb::arg("path"), nb::arg("starts"), nb::arg("shapes"),
        nb::arg("threads") = 0);
}
