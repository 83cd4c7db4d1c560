#pragma once
// Each binding file registers its part of the _chute module.

#include <nanobind/nanobind.h>

#include "chute/store/caching_store.h"
#include "gil.h"

namespace chute::python {

void bind_errors(nanobind::module_& m);
void bind_arrays(nanobind::module_& m);
void bind_loader(nanobind::module_& m);
void bind_options(nanobind::module_& m);
void bind_http(nanobind::module_& m);
void bind_stores(nanobind::module_& m);
void bind_interrupts(nanobind::module_& m);

/// Node-local cache counters as a dict (hits, misses, bytes_from_cache, bytes_fetched,
/// bytes_written, evicted, discarded).
nanobind::dict cache_stats_to_python(const CacheStats& stats);

}  // namespace chute::python
