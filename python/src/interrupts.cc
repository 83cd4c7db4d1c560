// Ctrl-C during a long open. The core polls chute::check_interrupt() in its long loops (chunk
// index walks, member files, reference sets); the hook installed here answers it.
//
// Python runs signal handlers only on its main thread and only with the GIL, and opens run with
// the GIL released. So the hook, called from any thread, answers only on the main thread: at most
// every 20 ms there it takes the GIL back briefly and calls PyErr_CheckSignals(), which runs the
// Python handlers (the default one raises KeyboardInterrupt). When a handler raised, the
// exception is kept, the core's pending flag set (so an open's worker threads stop too) and the
// core unwinds with chute::Interrupted; the translator below raises the kept exception itself,
// never a chute.Error. Other threads' polls see only the flag: Python interrupts the main thread.

#include <Python.h>
#include <pythread.h>

#include <atomic>
#include <chrono>

#include "bindings.h"
#include "chute/util/interrupt.h"
#include "gil.h"

namespace nb = nanobind;

namespace chute::python {
namespace {

constexpr auto kInterruptCheckEvery = std::chrono::milliseconds(20);

std::atomic<int64_t> g_next_signal_check{0};
// The exception a signal handler raised, until the translator raises it (guarded by the GIL).
struct KeptException {
#if PY_VERSION_HEX >= 0x030C0000
  PyObject* value = nullptr;
  bool empty() const { return value == nullptr; }
  void keep() {
    Py_XDECREF(value);
    value = PyErr_GetRaisedException();
  }
  void raise() {
    PyErr_SetRaisedException(value);
    value = nullptr;
  }
#else
  PyObject* type = nullptr;
  PyObject* value = nullptr;
  PyObject* traceback = nullptr;
  bool empty() const { return type == nullptr; }
  void keep() {
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(traceback);
    PyErr_Fetch(&type, &value, &traceback);
  }
  void raise() {
    PyErr_Restore(type, value, traceback);
    type = value = traceback = nullptr;
  }
#endif
};
KeptException g_interrupt_exception;

bool python_signal_pending() {
  if (!on_main_thread()) return false;
  const int64_t now = std::chrono::steady_clock::now().time_since_epoch().count();
  if (now < g_next_signal_check.load(std::memory_order_relaxed)) return false;
  g_next_signal_check.store(
      now + std::chrono::duration_cast<std::chrono::steady_clock::duration>(kInterruptCheckEvery)
                .count(),
      std::memory_order_relaxed);
  const PyGILState_STATE state = PyGILState_Ensure();
  bool raised = false;
  if (PyErr_CheckSignals() != 0) {
    g_interrupt_exception.keep();
    raised = true;
  }
  PyGILState_Release(state);
  return raised;
}

void translate_interrupted(const std::exception_ptr& p, void*) {
  try {
    std::rethrow_exception(p);
  } catch (const Interrupted&) {
    clear_interrupt();
    if (!g_interrupt_exception.empty()) {
      g_interrupt_exception.raise();
    } else {  // requested from C++ (request_interrupt) or by another thread's signal
      PyErr_SetNone(PyExc_KeyboardInterrupt);
    }
  }
}

}  // namespace

void bind_interrupts(nb::module_& m) {
  nb::register_exception_translator(&translate_interrupted);
  set_interrupt_hook(&python_signal_pending);
  m.def(
      "_request_interrupt", [] { request_interrupt(); },
      "Marks an interruption pending, as Ctrl-C does: the open in progress, or the next long "
      "one, raises KeyboardInterrupt.");
}

}  // namespace chute::python
