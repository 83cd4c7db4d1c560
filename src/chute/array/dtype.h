#pragma once
// Data types live in vocab/ (below codec/ and array/); this header keeps older includes working.
#include "chute/vocab/dtype.h"
