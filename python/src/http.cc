// The HTTP client's lifetime, for the tests (its settings are bound in options.cc).
#include <nanobind/nanobind.h>

#include "bindings.h"
#include "chute/store/http/http_client.h"

namespace nb = nanobind;

namespace chute::python {
void bind_http(nb::module_& m) {
  m.def("_http_shutdown", [] {
    ReleaseGil release;
    http::shutdown();
  });
  m.def("_http_running", [] { return http::running(); });
}

}  // namespace chute::python
