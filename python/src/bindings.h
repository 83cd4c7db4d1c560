#pragma once
// Each binding file registers its part of the _chute module.

#include <nanobind/nanobind.h>

namespace chute::python {

void bind_errors(nanobind::module_& m);
void bind_arrays(nanobind::module_& m);
void bind_loader(nanobind::module_& m);
void bind_http(nanobind::module_& m);
void bind_object_store(nanobind::module_& m);

}  // namespace chute::python
