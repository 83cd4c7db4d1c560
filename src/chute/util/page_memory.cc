#include "chute/util/page_memory.h"

#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>

namespace chute::detail {

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

void prefault_pages(std::byte* memory, size_t bytes) {
  constexpr size_t kPageBytes = 4096;
  if (memory == nullptr || bytes == 0) return;
#ifdef MADV_POPULATE_WRITE
  // madvise needs a page-aligned start; allocate_pages() memory is.
  const auto start = reinterpret_cast<uintptr_t>(memory);
  if (start % kPageBytes == 0 && ::madvise(memory, bytes, MADV_POPULATE_WRITE) == 0) return;
#endif
  for (size_t offset = 0; offset < bytes; offset += kPageBytes) {
    reinterpret_cast<volatile std::byte*>(memory)[offset] = std::byte{0};
  }
}

}  // namespace chute::detail
