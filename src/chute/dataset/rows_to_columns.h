#pragma once
// Rows to columns with an optional affine map: the variables-last placement of anemoi samples
// (variables stored as rows of cells, written as cells × variables) in one pass, with AVX2 or
// SSE2 transposes in registers where the CPU has them.

#include <cstdint>

namespace chute::detail {

/// out[i × out_stride + q] = rows[q][i] × mul[q] + add[q] for q < count and i < n (without the
/// map where mul and add are null). out_stride >= count; rows, mul and add hold count entries.
void rows_to_columns(const float* const* rows, const float* mul, const float* add, int64_t count,
                     int64_t n, float* out, int64_t out_stride);

/// Tests: true keeps to the portable scalar loop (the SIMD kernels are compared against it).
void set_portable_rows_to_columns(bool portable);

}  // namespace chute::detail
