#pragma once
// A growable byte buffer that never zero-initialises and never shrinks, so a buffer reused
// across chunks stops allocating once it has seen the largest chunk (no allocation in the
// steady state). Large buffers get huge pages (see page_memory.h).

#include <cstddef>
#include <cstring>
#include <new>
#include <span>
#include <utility>

#include "chute/util/page_memory.h"

namespace chute {

class ByteBuffer {
 public:
  ByteBuffer() = default;
  explicit ByteBuffer(size_t size) { resize(size); }
  // A moved-from buffer is empty with no capacity (the defaults would keep the sizes while the
  // memory moved away, and a later resize within that capacity would write through null).
  ByteBuffer(ByteBuffer&& other) noexcept
      : data_(std::move(other.data_)),
        size_(std::exchange(other.size_, 0)),
        capacity_(std::exchange(other.capacity_, 0)) {}
  ByteBuffer& operator=(ByteBuffer&& other) noexcept {
    data_ = std::move(other.data_);
    size_ = std::exchange(other.size_, 0);
    capacity_ = std::exchange(other.capacity_, 0);
    return *this;
  }

  /// Sets the size; contents up to min(old, new) size are kept, the rest is uninitialised.
  void resize(size_t size) { grow_to(size, /*keep=*/true); }
  /// Sets the size for a caller that overwrites every byte next: when it must grow, the old
  /// bytes are not copied, so the contents are unspecified (within the capacity they stay).
  void resize_for_overwrite(size_t size) { grow_to(size, /*keep=*/false); }
  void clear() { size_ = 0; }

  std::byte* data() { return data_.get(); }
  const std::byte* data() const { return data_.get(); }
  size_t size() const { return size_; }
  size_t capacity() const { return capacity_; }
  bool empty() const { return size_ == 0; }
  std::span<std::byte> span() { return {data_.get(), size_}; }
  std::span<const std::byte> span() const { return {data_.get(), size_}; }

 private:
  void grow_to(size_t size, bool keep) {
    if (size > capacity_) {
      size_t capacity = capacity_ ? capacity_ : 4096;
      while (capacity < size) capacity *= 2;
      detail::PageMemory grown(detail::allocate_pages(capacity, /*huge_pages=*/true));
      if (!grown) throw std::bad_alloc();
      if (keep && size_) std::memcpy(grown.get(), data_.get(), size_);
      data_ = std::move(grown);
      capacity_ = capacity;
    }
    size_ = size;
  }

  detail::PageMemory data_;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

}  // namespace chute
