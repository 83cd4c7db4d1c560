// How fast the W3 volume's blosc-lz4 chunks decode, per decoded byte, by chunk edge: one 64³
// region of one channel of `make-dataset volume --size 512` (the same field, seed and noise),
// cut into chunks of edge 64 (c-blosc's 512 KiB blocks: split streams of 128 KiB), 32 (one
// 128 KiB block: 32 KiB streams) or 16 (16 KiB: 4 KiB streams), each compressed with the
// blosc-lz4 preset (clevel 5, byte shuffle) and decoded whole through the codec chain (chute's
// own block decoder). Bytes/s counts decoded bytes. The second argument is c-blosc's clevel.
// Smaller chunks decode fewer bytes per crop (docs/design/volume-crops.md) but LZ4 decodes the
// partly noisy mantissa byte slower per byte in shorter streams: this shows the trade.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "chute/codec/codec_chain.h"
#include "chute/synth/field.h"
#include "chute/util/byte_buffer.h"

namespace chute {
namespace {

constexpr int64_t kRegion = 64;

/// The values of `make-dataset volume --size 512`'s target, channel 0, [64, 128)³.
std::vector<float> volume_region() {
  synth::FieldSpec spec;
  spec.shape = {5, 512, 512, 512};
  const double wave = 512 / 3.0;
  spec.wavelength = {3.0, wave, wave, wave};
  spec.channel_axis = 0;
  // make_volume's `target` of seed 0 (array_seed(0, 101)); channel 0 is filled.
  const uint64_t seed = synth::mix64(101);
  spec.channels = synth::random_channel_levels(5, seed, 1.0, 1.0, /*noise=*/0.02);
  for (auto& level : spec.channels) level.offset += 4.0;  // as make_volume: positive, ~3..5
  spec.seed = seed;
  const synth::Field field(spec);
  std::vector<float> values(static_cast<size_t>(kRegion * kRegion * kRegion));
  const int64_t start[] = {0, 64, 64, 64};
  const int64_t shape[] = {1, kRegion, kRegion, kRegion};
  field.fill(start, shape, values);
  return values;
}

void BM_DecodeVolumeChunks(benchmark::State& state) {
  const int64_t edge = state.range(0);
  const int clevel = static_cast<int>(state.range(1));
  static const std::vector<float> region = volume_region();
  const std::vector<int64_t> chunk_shape = {edge, edge, edge};
  const CodecSpec specs[] = {
      {"bytes", {{"endian", "little"}}},
      {"blosc", {{"cname", "lz4"}, {"clevel", clevel}, {"shuffle", "shuffle"}, {"typesize", 4}}}};
  const auto chain = CodecChain::create(specs, DataType{DTypeKind::kFloat, 4}, chunk_shape);
  CodecScratch scratch;
  // Every chunk of the region, encoded once.
  std::vector<ByteBuffer> encoded;
  std::vector<float> chunk(static_cast<size_t>(edge * edge * edge));
  for (int64_t x = 0; x < kRegion; x += edge) {
    for (int64_t y = 0; y < kRegion; y += edge) {
      for (int64_t z = 0; z < kRegion; z += edge) {
        for (int64_t i = 0; i < edge; ++i) {
          for (int64_t j = 0; j < edge; ++j) {
            const float* row = region.data() + ((x + i) * kRegion + y + j) * kRegion + z;
            std::copy_n(row, edge, chunk.data() + (i * edge + j) * edge);
          }
        }
        chain->encode(std::as_bytes(std::span(chunk)), encoded.emplace_back(), scratch);
      }
    }
  }
  size_t stored = 0;
  for (const ByteBuffer& e : encoded) stored += e.size();
  std::vector<std::byte> out(chunk.size() * sizeof(float));
  for (auto _ : state) {
    for (const ByteBuffer& e : encoded) chain->decode(e.span(), out, scratch);
    benchmark::DoNotOptimize(out.data());
  }
  const auto decoded = static_cast<int64_t>(region.size() * sizeof(float));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * decoded);
  state.counters["ratio"] = static_cast<double>(decoded) / static_cast<double>(stored);
}

BENCHMARK(BM_DecodeVolumeChunks)
    ->ArgsProduct({{64, 32, 16}, {1, 5, 9}})
    ->ArgNames({"edge", "clevel"});

}  // namespace
}  // namespace chute
