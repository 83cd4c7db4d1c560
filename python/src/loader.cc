#include "bindings.h"

namespace chute::python {

// Filled in by the Loader work (issue 3).
void bind_loader(nanobind::module_& m) {}

}  // namespace chute::python
