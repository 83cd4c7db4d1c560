#include "chute/store/mapped_read_guard.h"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <mutex>

namespace chute::detail {
namespace {

// Plain (no constructor) thread-local: read from the signal handler, written by the thread
// itself just before it touches the mapping, so its TLS block exists when a fault comes.
thread_local MappedRegion* t_region = nullptr;
struct sigaction g_previous;
uintptr_t g_page_mask = 0;

void pass_on(int signal, siginfo_t* info, void* context) {
  if (g_previous.sa_flags & SA_SIGINFO) {
    if (g_previous.sa_sigaction != nullptr) {
      g_previous.sa_sigaction(signal, info, context);
      return;
    }
  } else if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN) {
    g_previous.sa_handler(signal);
    return;
  }
  // Default action: restore it; returning re-executes the access, which faults again and
  // terminates the process as it would have without chute.
  ::signal(signal, SIG_DFL);
}

void on_sigbus(int signal, siginfo_t* info, void* context) {
  MappedRegion* region = t_region;
  const auto* address = static_cast<const std::byte*>(info->si_addr);
  if (region != nullptr && address >= region->begin && address < region->end) {
    region->truncated->store(true);
    void* page = reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(address) & g_page_mask);
    // mmap is a plain system call here (no locks), so it is safe in a handler.
    if (::mmap(page, ~g_page_mask + 1, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) !=
        MAP_FAILED) {
      return;
    }
  }
  pass_on(signal, info, context);
}

}  // namespace

void install_mapped_read_guard() {
  static std::once_flag installed;
  std::call_once(installed, [] {
    g_page_mask = ~(static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE)) - 1);
    struct sigaction action;
    std::memset(&action, 0, sizeof action);
    action.sa_sigaction = on_sigbus;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGBUS, &action, &g_previous);
  });
}

MappedReadScope::MappedReadScope(MappedRegion* region) { t_region = region; }
MappedReadScope::~MappedReadScope() { t_region = nullptr; }

}  // namespace chute::detail
