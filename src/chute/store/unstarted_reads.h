#pragma once
// For Store::submit() implementations that queue their requests one by one: when queueing one
// fails (out of memory), those not queued yet are completed as failed, so submit() does not
// throw after starting some of its requests (the caller could not tell which ones run).

#include <cstddef>
#include <span>

#include "chute/store/store.h"

namespace chute {

/// Completes requests [first, n) as kFailed with the current exception (call it in a catch).
void fail_unstarted(std::span<const ReadRequest> requests, size_t first, const ReadCallback& done);

}  // namespace chute
