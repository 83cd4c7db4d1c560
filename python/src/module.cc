#include "bindings.h"

NB_MODULE(_chute, m) {
  m.doc() = "chute: training batches from chunked scientific arrays";
  chute::python::bind_errors(m);
  chute::python::bind_arrays(m);
  chute::python::bind_loader(m);
}
