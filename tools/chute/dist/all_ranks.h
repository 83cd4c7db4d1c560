#pragma once
// Agreeing on failure across ranks. When one rank cannot open its data and simply throws, the
// other ranks block forever in their next collective. run_on_all_ranks() makes every rank learn
// the outcome of a step, so all of them throw the same error naming the rank that failed.

#include <functional>
#include <string_view>

#include "chute/dist/comm.h"

namespace chute::dist {

/// Runs `step` on this rank and then, collectively, checks whether it failed on any rank. If it
/// failed anywhere, every rank throws chute::Error with the code of the lowest failing rank's
/// error and the message "<what> failed on rank R of N: <its message>" (plus how many other
/// ranks failed). Exceptions that are not chute::Error count as kInternal. Collective: every
/// rank of `comm` must call it with the same `what`. Call from the thread that owns `comm`.
void run_on_all_ranks(Comm& comm, std::string_view what, const std::function<void()>& step);

}  // namespace chute::dist
