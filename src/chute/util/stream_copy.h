#pragma once
// Copies whose destination is not read again soon (a batch, a chunk's stored bytes that wait
// for a decode thread): non-temporal stores where the target has them (x86 SSE2), so the
// destination lines are not first read into the cache, and the source stays in it.

#include <cstddef>

namespace chute {

/// Copies n bytes to dst with non-temporal stores where the target allows (x86 SSE2): the
/// destination lines are not read into the cache first. Call stream_fence() before the data is
/// handed to another thread.
void stream_bytes(std::byte* dst, const std::byte* src, size_t n);
/// Orders the streaming stores made so far before later stores (a no-op without SSE2).
void stream_fence();

}  // namespace chute
