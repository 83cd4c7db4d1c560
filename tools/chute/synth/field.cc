#include "chute/synth/field.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "chute/util/error.h"

namespace chute::synth {
namespace {

/// murmur3's 32-bit finaliser: cheap enough to run once per generated element.
inline uint32_t fmix32(uint32_t h) {
  h ^= h >> 16;
  h *= 0x85ebca6bU;
  h ^= h >> 13;
  h *= 0xc2b2ae35U;
  h ^= h >> 16;
  return h;
}

/// A stream of uniform doubles in [0, 1) from a seed (splitmix64).
class SplitMix {
 public:
  explicit SplitMix(uint64_t seed) : state_(seed) {}
  double next() {
    state_ += 0x9e3779b97f4a7c15ULL;
    return unit_double(mix64(state_));
  }

 private:
  uint64_t state_;
};

}  // namespace

std::vector<ChannelLevels> random_channel_levels(int64_t count, uint64_t seed, double offset_range,
                                                 double amplitude, double noise_fraction) {
  SplitMix rng(mix64(seed ^ 0x636861726e656c73ULL));
  std::vector<ChannelLevels> levels(static_cast<size_t>(count));
  for (auto& level : levels) {
    level.offset = offset_range * (2.0 * rng.next() - 1.0);
    level.amplitude = amplitude * (0.5 + rng.next());
    level.noise = noise_fraction * level.amplitude;
  }
  return levels;
}

Field::Field(FieldSpec spec) : spec_(std::move(spec)) {
  const size_t rank = spec_.shape.size();
  if (rank == 0) fail(ErrorCode::kInvalidArgument, "synthetic field: expected rank >= 1, got 0");
  if (spec_.wavelength.size() != rank) {
    fail(ErrorCode::kInvalidArgument, "synthetic field: expected {} wavelengths, got {}", rank,
         spec_.wavelength.size());
  }
  if (spec_.channel_axis >= static_cast<int>(rank) || spec_.channel_axis < -1) {
    fail(ErrorCode::kInvalidArgument, "synthetic field: channel axis {} outside rank {}",
         spec_.channel_axis, rank);
  }
  const size_t channel_count =
      spec_.channel_axis < 0 ? 1 : static_cast<size_t>(spec_.shape[spec_.channel_axis]);
  if (spec_.channels.empty()) spec_.channels.resize(1);
  if (spec_.channels.size() != 1 && spec_.channels.size() != channel_count) {
    fail(ErrorCode::kInvalidArgument, "synthetic field: expected 1 or {} channel levels, got {}",
         channel_count, spec_.channels.size());
  }
  if (spec_.waves < 1) spec_.waves = 1;

  SplitMix rng(mix64(spec_.seed ^ 0x7761766573ULL));
  double weight_sum = 0.0;
  for (int k = 0; k < spec_.waves; ++k) {
    Wave wave;
    wave.weight = 1.0 / (k + 1);
    weight_sum += wave.weight;
    for (size_t d = 0; d < rank; ++d) {
      double cycles = 0.5 + 2.0 * rng.next();
      double phase = 2.0 * std::numbers::pi * rng.next();
      bool varies = spec_.wavelength[d] > 0;
      wave.frequency.push_back(varies ? 2.0 * std::numbers::pi * cycles / spec_.wavelength[d]
                                      : 0.0);
      wave.phase.push_back(varies ? phase : 0.0);
    }
    waves_.push_back(std::move(wave));
  }
  for (auto& wave : waves_) wave.weight /= weight_sum;  // smooth part stays in [-1, 1]

  global_strides_.assign(rank, 1);
  for (size_t d = rank - 1; d > 0; --d)
    global_strides_[d - 1] = global_strides_[d] * spec_.shape[d];
}

void Field::fill(std::span<const int64_t> start, std::span<const int64_t> box_shape,
                 std::span<float> out) const {
  const size_t rank = spec_.shape.size();
  if (start.size() != rank || box_shape.size() != rank) {
    fail(ErrorCode::kInvalidArgument, "synthetic field: expected a box of rank {}, got {}", rank,
         box_shape.size());
  }
  int64_t total = 1;
  for (int64_t n : box_shape) total *= n;
  if (static_cast<int64_t>(out.size()) != total) {
    fail(ErrorCode::kInvalidArgument, "synthetic field: expected {} output elements, got {}", total,
         out.size());
  }
  if (total == 0) return;

  // tables[k][d][j]: wave k's factor along axis d at box index j.
  const size_t waves = waves_.size();
  std::vector<std::vector<std::vector<float>>> tables(waves, std::vector<std::vector<float>>(rank));
  for (size_t k = 0; k < waves; ++k) {
    for (size_t d = 0; d < rank; ++d) {
      auto& table = tables[k][d];
      table.resize(static_cast<size_t>(box_shape[d]));
      for (int64_t j = 0; j < box_shape[d]; ++j) {
        double x = static_cast<double>(start[d] + j);
        double v = std::cos(waves_[k].frequency[d] * x + waves_[k].phase[d]);
        table[j] = static_cast<float>(d == 0 ? v * waves_[k].weight : v);
      }
    }
  }
  auto levels_at = [&](int64_t channel_index) -> const ChannelLevels& {
    // Edge chunks reach past the last channel; those padding values reuse its levels.
    const auto last_channel = static_cast<int64_t>(spec_.channels.size()) - 1;
    return spec_.channels[static_cast<size_t>(std::clamp<int64_t>(channel_index, 0, last_channel))];
  };

  const size_t last = rank - 1;
  const int64_t row_length = box_shape[last];
  const bool channel_is_last = spec_.channel_axis == static_cast<int>(last);
  std::vector<float> row_offset, row_amplitude, row_noise;
  if (channel_is_last) {
    for (int64_t j = 0; j < row_length; ++j) {
      const auto& level = levels_at(start[last] + j);
      row_offset.push_back(static_cast<float>(level.offset));
      row_amplitude.push_back(static_cast<float>(level.amplitude));
      row_noise.push_back(static_cast<float>(level.noise) * 0x1.0p-31f);
    }
  }

  // Rows are visited in C order; the wave factors of every axis but the last two are multiplied
  // once per plane (prefix), the second-to-last axis's once per row.
  const int64_t rows = total / row_length;
  const size_t row_axis = last == 0 ? 0 : last - 1;  // meaningful only when rank >= 2
  std::vector<int64_t> index(rank, 0);               // box index of the current row
  std::vector<float> prefix(waves, 1.0f), partial(waves);
  const uint32_t key32 = static_cast<uint32_t>(mix64(spec_.seed ^ 0x6e6f697365ULL));
  float* dst = out.data();
  for (int64_t row = 0; row < rows; ++row) {
    if (rank >= 2 && (row == 0 || index[row_axis] == 0)) {
      for (size_t k = 0; k < waves; ++k) {
        float p = 1.0f;
        for (size_t d = 0; d < row_axis; ++d) p *= tables[k][d][index[d]];
        prefix[k] = p;
      }
    }
    for (size_t k = 0; k < waves; ++k) {
      partial[k] = rank >= 2 ? prefix[k] * tables[k][row_axis][index[row_axis]] : 1.0f;
    }
    uint64_t linear = static_cast<uint64_t>(start[last]);  // global index of the row's first
    for (size_t d = 0; d < last; ++d) {
      linear +=
          static_cast<uint64_t>(start[d] + index[d]) * static_cast<uint64_t>(global_strides_[d]);
    }
    // Noise: a hash of (seed, global element index), so values do not depend on the chunking.
    auto noise_at = [&](int64_t j) {
      uint64_t i = linear + static_cast<uint64_t>(j);
      uint32_t h = fmix32(static_cast<uint32_t>(i) * 0x9e3779b9U ^ key32 ^
                          static_cast<uint32_t>(i >> 32) * 0x85ebca6bU);
      return static_cast<float>(static_cast<int32_t>(h));  // uniform in [-2^31, 2^31)
    };

    if (channel_is_last) {
      for (int64_t j = 0; j < row_length; ++j) {
        float s = 0.0f;
        for (size_t k = 0; k < waves; ++k) s += partial[k] * tables[k][last][j];
        dst[j] = row_offset[j] + row_amplitude[j] * s + row_noise[j] * noise_at(j);
      }
    } else {
      const auto& level =
          levels_at(spec_.channel_axis < 0 ? 0
                                           : start[spec_.channel_axis] +
                                                 index[static_cast<size_t>(spec_.channel_axis)]);
      const float offset = static_cast<float>(level.offset);
      const float amplitude = static_cast<float>(level.amplitude);
      const float noise = static_cast<float>(level.noise) * 0x1.0p-31f;
      for (int64_t j = 0; j < row_length; ++j) {
        float s = 0.0f;
        for (size_t k = 0; k < waves; ++k) s += partial[k] * tables[k][last][j];
        dst[j] = offset + amplitude * s + noise * noise_at(j);
      }
    }
    dst += row_length;
    for (size_t d = last; d-- > 0;) {  // advance the row index, C order
      if (++index[d] < box_shape[d]) break;
      index[d] = 0;
    }
  }
}

}  // namespace chute::synth
