#include "chute/util/buffer_allocator.h"

#include "chute/util/error.h"
#include "chute/util/page_memory.h"

namespace chute {
namespace {

class PageableAllocator final : public BufferAllocator {
 public:
  std::byte* allocate(size_t bytes) override {
    std::byte* memory = detail::allocate_pages(bytes, /*huge_pages=*/false);
    if (memory == nullptr) {
      fail(ErrorCode::kIoError, "out of memory allocating a batch buffer of {} bytes", bytes);
    }
    return memory;
  }
  void deallocate(std::byte* memory, size_t /*bytes*/) noexcept override {
    detail::free_pages(memory);
  }
  void prefault(std::byte* memory, size_t bytes) override { detail::prefault_pages(memory, bytes); }
  std::string describe() const override { return "pageable host memory"; }
};

}  // namespace

std::shared_ptr<BufferAllocator> pageable_allocator() {
  static const auto allocator = std::make_shared<PageableAllocator>();
  return allocator;
}

}  // namespace chute
