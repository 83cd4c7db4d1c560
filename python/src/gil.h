#pragma once
// Releasing the GIL around work in the core, safely at interpreter exit.
//
// A daemon thread (a training script's prefetch thread, say) may be waiting in chute with the
// GIL released when the program ends. If its work finishes while the interpreter finalizes,
// taking the GIL back makes CPython (before 3.14) end the thread with pthread_exit(), whose
// unwinding through the C++ frames on its stack (a destructor, implicitly noexcept) aborts the
// process: "terminate called without an active exception". ReleaseGil parks such a thread
// instead, until the process exits, as CPython 3.14 does itself. The thread that finalizes
// (normally the main thread) takes the GIL back as usual.

#include <Python.h>
#include <pythread.h>

namespace chute::python {

/// Records the thread that will finalize the interpreter (the one that imports the module:
/// Python's main thread). Called once at import.
void remember_main_thread();

/// True on the thread remembered by remember_main_thread().
bool on_main_thread();

/// True when the interpreter is finalizing and this is not the thread finalizing it.
bool must_park();

/// Waits until the process exits (never returns).
[[noreturn]] void park_forever();

/// As nb::gil_scoped_release, but parks instead of taking the GIL back where that would end the
/// thread (see above).
class ReleaseGil {
 public:
  ReleaseGil() : state_(PyEval_SaveThread()) {}
  ~ReleaseGil() {
    if (must_park()) park_forever();
    PyEval_RestoreThread(state_);
  }
  ReleaseGil(const ReleaseGil&) = delete;
  ReleaseGil& operator=(const ReleaseGil&) = delete;

 private:
  PyThreadState* state_;
};

}  // namespace chute::python
