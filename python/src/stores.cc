// Stores as opaque objects, for the test-only module chute_testing: it wraps a store made here
// (_file_store) in one of its own (a store that delays reads) and opens arrays over it here
// (_packed_over_store), so every read, decode and I/O thread runs in this module's core and
// chute_testing carries no core of its own beyond its store. Not part of the public API.
#include <nanobind/nanobind.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "bindings.h"
#include "chute/dataset/packed_dataset.h"
#include "chute/format/zarr.h"
#include "chute/store/file_store.h"
#include "chute/store/store.h"

namespace nb = nanobind;

namespace chute::python {

void bind_stores(nb::module_& m) {
  nb::class_<Store>(m, "_Store", "A store, opaque (for chute_testing).");
  m.def(
      "_file_store",
      [](const nb::bytes& root) -> std::shared_ptr<Store> {
        return std::make_shared<FileStore>(std::string(root.c_str(), root.size()));
      },
      nb::arg("root"), "The files under `root` as a store.");
  m.def(
      "_packed_over_store",
      [](std::shared_ptr<Store> store,
         const std::vector<std::pair<std::string, nb::bytes>>& named) -> DatasetPtr {
        std::vector<std::pair<std::string, ArrayPtr>> arrays;
        ReleaseGil release;
        for (const auto& [name, key] : named) {
          const std::string prefix(key.c_str(), key.size());
          arrays.emplace_back(name, open_zarr_array(store, prefix, prefix));
        }
        return std::make_shared<PackedDataset>(std::move(arrays));
      },
      nb::arg("store"), nb::arg("keys"),
      "A packed dataset of the Zarr arrays at `keys` (name, key in the store) of `store`.");
}

}  // namespace chute::python
