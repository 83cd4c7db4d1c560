#include "bindings.h"
#include "chute/version.h"

NB_MODULE(_chute, m) {
  m.doc() = "chute: training batches from chunked scientific arrays";
  m.attr("__version__") = chute::kVersion;
  chute::python::remember_main_thread();
  chute::python::bind_errors(m);
  chute::python::bind_arrays(m);
  chute::python::bind_options(m);
  chute::python::bind_loader(m);
  chute::python::bind_http(m);
  chute::python::bind_stores(m);
  chute::python::bind_interrupts(m);
  m.def(
      "_set_leak_warnings", [](bool on) { nanobind::set_leak_warnings(on); }, nanobind::arg("on"),
      "nanobind's report of objects still alive at exit (chute.__init__ turns it off when a "
      "daemon thread, which the interpreter never stops, may hold them).");
}
