// WindowDataset: the placement pass after the reads (window_dataset.h): decoding, normalisation,
// casts, NaN policies and masks, computed forcings, and the channels-last interleave.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>

#include "chute/dataset/channel_interleave.h"
#include "chute/dataset/computed_forcings.h"
#include "chute/dataset/window_dataset.h"
#include "chute/pipeline/transforms.h"
#include "chute/util/error.h"
#include "chute/util/thread_pool.h"

namespace chute {

namespace {

/// The time index plan() wrote at the start of a staged slot.
int64_t slot_time(const std::byte* slot) {
  int64_t time;
  std::memcpy(&time, slot, sizeof(time));
  return time;
}

}  // namespace

void WindowDataset::place_computed(const Channel& c, int64_t time, int64_t p0, int64_t n,
                                   std::byte* dst, int64_t stride, DataType out_type) const {
  const auto kind = static_cast<ComputedForcing>(c.computed);
  const int64_t seconds = options_.time_seconds[static_cast<size_t>(time + c.offset)];
  thread_local std::vector<float> values;
  values.resize(static_cast<size_t>(n));
  computed_forcing_run(
      kind, seconds,
      std::span(options_.lat_values)
          .subspan(static_cast<size_t>(options_.lat_start), static_cast<size_t>(height_)),
      std::span(options_.lon_values)
          .subspan(static_cast<size_t>(options_.lon_start), static_cast<size_t>(width_)),
      p0, n, values.data());
  detail::decode_run(reinterpret_cast<const std::byte*>(values.data()), n, c.decode, dst, stride,
                     out_type);
}

void WindowDataset::check_no_nan(const Channel& c, int64_t time, const float* values,
                                 int64_t n) const {
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isnan(values[i])) continue;
    const std::string level =
        c.level < 0 ? std::string()
                    : fmt::format(" level {}", level_values_.empty()
                                                   ? static_cast<double>(c.level)
                                                   : level_values_[static_cast<size_t>(c.level)]);
    fail(ErrorCode::kInvalidArgument,
         "variable '{}'{} holds a missing value (NaN) at time index {} (nan='error'; pass "
         "nan='keep' or a fill value)",
         c.variable->name, level, c.timeless ? 0 : time + c.offset);
  }
}

namespace {

/// dst[i] = cast((values[i] - mean[i]) * inv_std[i]): per-grid-point normalisation, the same
/// float arithmetic as the per-channel one in decode_run.
template <typename Out, typename Cast>
void normalise_points_typed(const float* values, const float* mean, const float* inv_std, int64_t n,
                            Out* dst, Cast cast) {
  for (int64_t i = 0; i < n; ++i) dst[i] = cast((values[i] - mean[i]) * inv_std[i]);
}

void normalise_points(const float* values, const float* mean, const float* inv_std, int64_t n,
                      std::byte* dst, DataType out_type) {
  if (out_type == kFloat32) {
    normalise_points_typed(values, mean, inv_std, n, reinterpret_cast<float*>(dst),
                           [](float v) { return v; });
  } else if (out_type.kind == DTypeKind::kBFloat) {
    normalise_points_typed(values, mean, inv_std, n, reinterpret_cast<uint16_t*>(dst),
                           [](float v) { return float_to_bfloat16(v); });
  } else {
    normalise_points_typed(values, mean, inv_std, n, reinterpret_cast<uint16_t*>(dst),
                           [](float v) { return float_to_half(v); });
  }
}

}  // namespace

void WindowDataset::make_row(const Channel& c, const std::byte* slot_in, int64_t p0, int64_t n,
                             std::byte* dst, DataType out_type, float* scratch) const {
  const std::byte* src = slot_in + c.plane_offset + p0 * c.decode.stored.size;
  auto* floats = reinterpret_cast<std::byte*>(scratch);
  if (c.computed >= 0) {
    place_computed(c, slot_time(slot_in), p0, n, dst, 1, out_type);
    return;
  }
  if (c.mask_of >= 0) {
    detail::decode_run(src, n, c.decode, floats, 1, kFloat32);
    for (int64_t k = 0; k < n; ++k) scratch[k] = std::isnan(scratch[k]) ? 1.0f : 0.0f;
    detail::decode_run(floats, n, detail::ChannelDecode{}, dst, 1, out_type);
    return;
  }
  const bool check = options_.nan == WindowOptions::NanPolicy::kError;
  if (c.point_mean == nullptr && !check) {  // the common case: one fused pass
    detail::decode_run(src, n, c.decode, dst, 1, out_type);
    return;
  }
  detail::ChannelDecode plain = c.decode;  // decode, check, then normalise
  plain.mean = 0, plain.inv_std = 1;
  detail::decode_run(src, n, plain, floats, 1, kFloat32);
  if (check) check_no_nan(c, slot_time(slot_in), scratch, n);
  if (c.point_mean != nullptr) {
    normalise_points(scratch, c.point_mean + p0, c.point_inv_std + p0, n, dst, out_type);
  } else {
    detail::ChannelDecode normalise;
    normalise.mean = c.decode.mean, normalise.inv_std = c.decode.inv_std;
    detail::decode_run(floats, n, normalise, dst, 1, out_type);
  }
}

void WindowDataset::place_plane(size_t k, const std::byte* slot_in, std::byte* slot_out,
                                int64_t ci) const {
  const Output& output = layout_[k];
  const int64_t plane = height_ * width_;
  const DataType out_type = options_.output_dtype;
  thread_local std::vector<float> scratch;
  scratch.resize(static_cast<size_t>(plane));
  make_row(output.channels[static_cast<size_t>(ci)], slot_in, 0, plane,
           slot_out + ci * plane * static_cast<int64_t>(out_type.size), out_type, scratch.data());
}

int64_t WindowDataset::tile_pixels(size_t k) const {
  // Each group of 8 channels of a tile is decoded, normalised and cast into a small tile of
  // rows of the output type (SIMD-friendly), then transposed into a cache-resident bounce
  // buffer holding the tile's pixels × channels, which is then streamed out (non-temporal
  // stores): the batch is written once, front to back, without reading its lines first.
  constexpr int64_t kBounceBytes = 128 << 10;
  const auto channels = static_cast<int64_t>(layout_[k].channels.size());
  const auto osize = static_cast<int64_t>(options_.output_dtype.size);
  return std::clamp<int64_t>(kBounceBytes / (channels * osize), 16, 4096);
}

void WindowDataset::place_tiles(size_t k, const std::byte* slot_in, std::byte* slot_out,
                                int64_t first_tile, int64_t end_tile) const {
  const Output& output = layout_[k];
  const int64_t plane = height_ * width_;
  const DataType out_type = options_.output_dtype;
  const auto osize = static_cast<int64_t>(out_type.size);
  const auto channels = static_cast<int64_t>(output.channels.size());
  const int64_t pixels = tile_pixels(k);
  thread_local std::vector<std::byte> tile, bounce;
  thread_local std::vector<float> values;
  tile.resize(static_cast<size_t>(detail::kInterleaveGroup * pixels * osize));
  bounce.resize(static_cast<size_t>(pixels * channels * osize));
  values.resize(static_cast<size_t>(pixels));
  for (int64_t tl = first_tile; tl < end_tile; ++tl) {
    const int64_t p0 = tl * pixels, n = std::min(pixels, plane - p0);
    for (int64_t c0 = 0; c0 < channels; c0 += detail::kInterleaveGroup) {
      const int64_t group = std::min(detail::kInterleaveGroup, channels - c0);
      for (int64_t j = 0; j < group; ++j) {
        make_row(output.channels[static_cast<size_t>(c0 + j)], slot_in, p0, n,
                 tile.data() + j * pixels * osize, out_type, values.data());
      }
      detail::interleave_rows(tile.data(), pixels, group, n, bounce.data() + c0 * osize, channels,
                              osize);
    }
    detail::stream_out(slot_out + p0 * channels * osize, bounce.data(),
                       static_cast<size_t>(n * channels * osize));
  }
}

void WindowDataset::finish_sample(const BatchMemory& memory, int64_t slot) const {
  if (!staged()) return;  // finishes_per_sample() is false: finish() does the batch
  std::vector<const std::byte*> in;
  std::vector<std::byte*> out;
  for (size_t k = 0; k < layout_.size(); ++k) {
    in.push_back(memory.staging[k] + slot * layout_[k].slot_bytes);
    out.push_back(memory.outputs[k] + slot * outputs_[k].sample_nbytes());
  }
  place_sample(in, out);
}

void WindowDataset::place_sample(std::span<const std::byte* const> staged,
                                 std::span<std::byte* const> out) const {
  for (size_t k = 0; k < layout_.size(); ++k) {
    if (options_.channels_last) {
      const int64_t pixels = tile_pixels(k);
      place_tiles(k, staged[k], out[k], 0, (height_ * width_ + pixels - 1) / pixels);
    } else {
      const auto channels = static_cast<int64_t>(layout_[k].channels.size());
      for (int64_t ci = 0; ci < channels; ++ci) place_plane(k, staged[k], out[k], ci);
    }
  }
}

void WindowDataset::finish(const BatchMemory& memory, ThreadPool* pool) const {
  if (!staged() && !normalise_) return;
  const int64_t plane = height_ * width_;
  const DataType out_type = options_.output_dtype;
  const int64_t batch = memory.batch_size;
  auto run = [&](size_t n, const std::function<void(size_t)>& item) {
    if (pool) {
      pool->parallel_for(n, [&](size_t i, size_t) { item(i); });
    } else {
      for (size_t i = 0; i < n; ++i) item(i);
    }
  };
  for (size_t k = 0; k < layout_.size(); ++k) {
    const Output& output = layout_[k];
    const auto channels = static_cast<int64_t>(output.channels.size());
    std::byte* out = memory.outputs[k];
    if (!staged() && options_.channels_last) {  // direct: normalise in place, as placed
      std::vector<float> mean, inv_std;
      for (const Channel& c : output.channels) {
        mean.push_back(c.decode.mean), inv_std.push_back(c.decode.inv_std);
      }
      run(static_cast<size_t>(batch), [&](size_t slot) {
        auto* values =
            reinterpret_cast<float*>(out) + static_cast<int64_t>(slot) * plane * channels;
        normalize_cast(values, reinterpret_cast<std::byte*>(values), out_type,
                       ChannelLayout{plane, channels, 1}, mean.data(), inv_std.data(), channels);
      });
      continue;
    }
    if (!options_.channels_last) {
      // One plane per item: decode, normalise and cast it into its place (in place when direct).
      const std::byte* in = staged() ? memory.staging[k] : memory.outputs[k];
      const int64_t out_bytes = outputs_[k].sample_nbytes();
      run(static_cast<size_t>(batch * channels), [&](size_t i) {
        const int64_t slot = static_cast<int64_t>(i) / channels;
        place_plane(k, in + slot * output.slot_bytes, out + slot * out_bytes,
                    static_cast<int64_t>(i) % channels);
      });
      continue;
    }
    // Channels-last: tiles of pixels, a few per item.
    constexpr int64_t kTilesPerItem = 4;
    const int64_t pixels = tile_pixels(k);
    const int64_t tiles = (plane + pixels - 1) / pixels;
    const int64_t items_per_slot = (tiles + kTilesPerItem - 1) / kTilesPerItem;
    run(static_cast<size_t>(batch * items_per_slot), [&](size_t i) {
      const int64_t first_tile = (static_cast<int64_t>(i) % items_per_slot) * kTilesPerItem;
      const int64_t slot = static_cast<int64_t>(i) / items_per_slot;
      place_tiles(k, memory.staging[k] + slot * output.slot_bytes,
                  out + slot * outputs_[k].sample_nbytes(), first_tile,
                  std::min(tiles, first_tile + kTilesPerItem));
    });
  }
}

}  // namespace chute
