#include "chute/util/page_memory.h"

#include <sys/mman.h>

#include <cstdlib>

namespace chute {

std::byte* allocate_pages(size_t bytes, bool huge_pages) {
  constexpr size_t kPageBytes = 4096;
  const size_t alignment = huge_pages && bytes >= kHugePageBytes ? kHugePageBytes : kPageBytes;
  void* memory = nullptr;
  if (::posix_memalign(&memory, alignment, bytes == 0 ? 1 : bytes) != 0) return nullptr;
#ifdef MADV_HUGEPAGE
  // Advice only: kernels without THP, or with it off, refuse it and nothing changes.
  if (alignment == kHugePageBytes) ::madvise(memory, bytes, MADV_HUGEPAGE);
#endif
  return static_cast<std::byte*>(memory);
}

void free_pages(std::byte* memory) { std::free(memory); }

}  // namespace chute
