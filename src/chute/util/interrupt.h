#pragma once
// Interrupting long opens. Opening a file can walk millions of chunk-index entries, expand a
// reference set's generators or open thousands of member files; those loops call
// poll_interrupt() every so often, which throws Interrupted once an interruption is pending.
//
// An interruption is pending when request_interrupt() was called (a C++ program's own signal
// handler may call it: it only stores to an atomic) or when the hook installed with
// set_interrupt_hook() says so. The Python bindings install a hook that lets the interpreter
// run its signal handlers, so Ctrl-C during chute.open raises KeyboardInterrupt there. Without
// a hook and without a request, polling costs a counter increment and, every 1024 calls, one
// relaxed atomic load.
//
// Interrupted is not a chute::Error: code that catches Error to add context or to fall back to
// another reading must not turn an interruption into a failure of the file.

#include <atomic>
#include <cstdint>
#include <exception>

namespace chute {

class Interrupted : public std::exception {
 public:
  const char* what() const noexcept override { return "interrupted"; }
};

/// Called from any thread; true when the work in progress should stop. Must be cheap when
/// nothing is pending and safe to call concurrently.
using InterruptHook = bool (*)();

/// Installs (or with nullptr removes) the process-wide hook.
void set_interrupt_hook(InterruptHook hook);

/// Marks an interruption pending (async-signal-safe: one atomic store).
void request_interrupt() noexcept;

/// Clears a pending interruption (after it was reported to the caller).
void clear_interrupt() noexcept;

/// True when an interruption is pending; asks the hook when the flag is not set, and sets the
/// flag when the hook says yes, so other threads of the same open stop too.
bool interrupt_pending();

/// Throws Interrupted when interrupt_pending().
void check_interrupt();

/// A loop's poll: call once per item; every `every` calls it checks for an interruption.
class InterruptPoll {
 public:
  InterruptPoll() = default;
  explicit InterruptPoll(uint32_t every) : every_(every == 0 ? 1 : every) {}
  void operator()() {
    if (++count_ >= every_) {
      count_ = 0;
      check_interrupt();
    }
  }

 private:
  uint32_t every_ = 1024;
  uint32_t count_ = 0;
};

}  // namespace chute
