#include "chute/util/interrupt.h"

namespace chute {
namespace {
std::atomic<InterruptHook> g_interrupt_hook{nullptr};
std::atomic<bool> g_interrupt_flag{false};
}  // namespace

void set_interrupt_hook(InterruptHook hook) { g_interrupt_hook.store(hook); }

void request_interrupt() noexcept { g_interrupt_flag.store(true, std::memory_order_relaxed); }

void clear_interrupt() noexcept { g_interrupt_flag.store(false, std::memory_order_relaxed); }

bool interrupt_pending() {
  if (g_interrupt_flag.load(std::memory_order_relaxed)) return true;
  InterruptHook hook = g_interrupt_hook.load(std::memory_order_acquire);
  if (hook == nullptr || !hook()) return false;
  request_interrupt();
  return true;
}

void check_interrupt() {
  if (interrupt_pending()) throw Interrupted();
}

}  // namespace chute
