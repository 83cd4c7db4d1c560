#include "bindings.h"
#include "chute/version.h"

NB_MODULE(_chute, m) {
  m.doc() = "chute: training batches from chunked scientific arrays";
  m.attr("__version__") = chute::kVersion;
  chute::python::bind_errors(m);
  chute::python::bind_arrays(m);
  chute::python::bind_options(m);
  chute::python::bind_loader(m);
  chute::python::bind_http(m);
  chute::python::bind_stores(m);
}
