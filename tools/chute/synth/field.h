#pragma once
// Synthetic float32 fields that look and compress like model data: a few separable low-frequency
// waves per array (smooth over every axis, different per channel) plus uniform noise. Every value
// is a pure function of (seed, global element position), so a chunk can be generated alone, in
// any order, on any thread, and the same array chunked differently holds the same values.

#include <cstdint>
#include <span>
#include <vector>

namespace chute::synth {

/// Offset, amplitude of the smooth part and amplitude of the noise of one channel.
struct ChannelLevels {
  double offset = 0.0;
  double amplitude = 1.0;
  double noise = 0.02;
};

struct FieldSpec {
  std::vector<int64_t> shape;  // the whole array
  /// Per axis: roughly how many elements one wave spans (the axis extent for a spatial axis,
  /// a few for a channel axis). Values <= 0 make the field constant along that axis.
  std::vector<double> wavelength;
  /// The axis whose index selects `channels[i]`, or -1 when every element uses channels[0].
  int channel_axis = -1;
  std::vector<ChannelLevels> channels;  // shape[channel_axis] entries, or 1 when no channel axis
  uint64_t seed = 0;
  int waves = 4;  // separable terms summed
};

/// Levels for `count` channels drawn from `seed`: offsets in [-offset_range, offset_range],
/// amplitudes in [0.5, 1.5] * amplitude, noise = noise_fraction * amplitude.
std::vector<ChannelLevels> random_channel_levels(int64_t count, uint64_t seed, double offset_range,
                                                 double amplitude, double noise_fraction);

/// Precomputed wave parameters of one FieldSpec; cheap to share between threads (const).
class Field {
 public:
  /// Throws kInvalidArgument when the spec is inconsistent (ranks, channel count).
  explicit Field(FieldSpec spec);

  const FieldSpec& spec() const { return spec_; }

  /// Fills `out` (C order, box_shape elements) with the values of box [start, start+box_shape).
  /// The box may extend past the array's shape (edge chunks): those values are defined too.
  void fill(std::span<const int64_t> start, std::span<const int64_t> box_shape,
            std::span<float> out) const;

 private:
  struct Wave {
    std::vector<double> frequency;  // radians per element, per axis
    std::vector<double> phase;      // per axis
    double weight = 1.0;
  };
  FieldSpec spec_;
  std::vector<Wave> waves_;
  std::vector<int64_t> global_strides_;  // elements, C order over spec_.shape
};

/// A 64-bit mix (splitmix64's finaliser): a cheap, well-spread hash of one integer.
inline uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

/// Uniform double in [0, 1) from a hash value.
inline double unit_double(uint64_t h) { return static_cast<double>(h >> 11) * 0x1.0p-53; }

}  // namespace chute::synth
