#pragma once
// Memory for large, long-lived buffers: page-aligned and, on request from 2 MiB on, aligned to
// and advised for transparent huge pages. Per-worker buffers (encoded chunk, staging) take huge
// pages: the read path streams hundreds of MB per batch through them, and the TLB misses of
// pread's copy and of decoding with 4 KiB pages cost about 3% of the loader's throughput
// (`chute bench` on packed samples). Batch buffers do not: a 250 MB buffer allocated while the
// loader runs (the pool grows when the consumer holds batches) stalled the pipeline, most likely
// while the kernel compacted memory (accelerator utilisation 97% -> 88% in `chute bench --mode
// full`). Kernels in THP "madvise" mode (the Debian default) only back advised ranges.

#include <cstddef>
#include <memory>

// Internal (installed because chute/util/byte_buffer.h uses it): not part of the stable API.
namespace chute::detail {

inline constexpr size_t kHugePageBytes = size_t{2} << 20;

/// At least `bytes` of uninitialised memory; returns null when the allocation fails.
/// Release it with free_pages().
std::byte* allocate_pages(size_t bytes, bool huge_pages);
void free_pages(std::byte* memory);

/// Backs `bytes` of `memory` with pages now (MADV_POPULATE_WRITE, or one write per page where
/// the kernel lacks it), so that the first writes to it later do not fault page by page.
void prefault_pages(std::byte* memory, size_t bytes);

struct FreePages {
  void operator()(std::byte* memory) const { free_pages(memory); }
};
using PageMemory = std::unique_ptr<std::byte[], FreePages>;

}  // namespace chute::detail
