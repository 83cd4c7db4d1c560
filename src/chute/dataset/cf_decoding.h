#pragma once
// CF conventions as xarray writes them into Zarr attributes, and the fused pass that turns
// stored planes into output channels.
//
// Decoding (xarray's order): a stored value equal to one of the missing values (`_FillValue`,
// `missing_value`; for Zarr v2 also the array's fill_value, which xarray reads as `_FillValue`)
// becomes NaN; any other becomes value × scale_factor + add_offset, computed in float64 and
// rounded once to float32. Then optional normalisation (x - mean) × inv_std in float32, then the
// cast to the output type (float32, float16, bfloat16).

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "chute/array/dtype.h"
#include "chute/array/metadata.h"

// Internal (installed because chute/dataset/window_dataset.h uses it): not part of the
// stable API.
namespace chute::detail {

struct CfEncoding {
  double scale = 1.0;
  double offset = 0.0;
  bool scaled = false;  // scale_factor or add_offset present
  // Stored values meaning "missing": sorted, unique, no NaN (normalize_missing).
  std::vector<double> missing;
  bool any() const { return scaled || !missing.empty(); }
};

/// Reads scale_factor, add_offset, _FillValue and missing_value from `meta` (the attributes;
/// for Zarr v2 the non-null fill_value counts as _FillValue, as in xarray). Throws
/// kInvalidMetadata naming array `name` when one is not a number (or a list of numbers), and
/// kUnsupported when the stored dtype is not an integer or float type while an encoding is set.
CfEncoding parse_cf_encoding(const ArrayMetadata& meta, const std::string& name);

/// Everything the fused pass needs to turn one stored plane into one output channel.
struct ChannelDecode {
  DataType stored{DTypeKind::kFloat, 4};
  CfEncoding cf;
  float mean = 0.0f;
  float inv_std = 1.0f;
  bool replace_nan = false;  // a decoded NaN becomes nan_value (before normalisation)
  float nan_value = 0.0f;
};

/// True when `stored` is a type decode_run reads: int8..int64, uint8..uint64, float16/32/64,
/// bfloat16.
bool is_decodable(DataType stored);

/// dst[i × dst_stride] = cast(normalise(decode(src[i]))) for i < count, where src holds `count`
/// contiguous values of decode.stored and dst elements of out_type (float32, float16 or
/// bfloat16); dst_stride counts elements. src and dst may be the same memory only when both are
/// float32 and dst_stride is 1.
void decode_run(const std::byte* src, int64_t count, const ChannelDecode& decode, std::byte* dst,
                int64_t dst_stride, DataType out_type);

/// Copies n bytes to dst with non-temporal stores where the target allows (x86 SSE2), then
/// fences them.
void stream_out(std::byte* dst, const std::byte* src, size_t n);

}  // namespace chute::detail
