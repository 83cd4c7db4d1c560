#include "gil.h"

#include <nanobind/nanobind.h>
#include <unistd.h>

#include <atomic>

namespace nb = nanobind;

namespace chute::python {
namespace {
std::atomic<unsigned long> g_main_thread{0};
}  // namespace

void remember_main_thread() {
  nb::object main = nb::module_::import_("threading").attr("main_thread")();
  g_main_thread = nb::cast<unsigned long>(main.attr("ident"));
}

bool on_main_thread() { return PyThread_get_thread_ident() == g_main_thread.load(); }

bool must_park() {
#if PY_VERSION_HEX >= 0x030D0000
  const bool finalizing = Py_IsFinalizing() != 0;
#else
  const bool finalizing = _Py_IsFinalizing() != 0;
#endif
  return finalizing && PyThread_get_thread_ident() != g_main_thread.load();
}

void park_forever() {
  for (;;) ::pause();
}

}  // namespace chute::python
