// Process-wide options of the s3:// and gs:// stores, for chute.set_storage_options().
#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>

#include "bindings.h"
#include "chute/store/s3_store.h"

namespace nb = nanobind;

namespace chute::python {

void bind_object_store(nb::module_& m) {
  m.def("_storage_options",
        [](const std::string& scheme) { return object_store_options(scheme).settings; });
  m.def("_set_storage_options",
        [](const std::string& scheme, const std::map<std::string, std::string>& settings) {
          set_object_store_options(scheme, StoreOpenOptions{settings});
        });
}

}  // namespace chute::python
