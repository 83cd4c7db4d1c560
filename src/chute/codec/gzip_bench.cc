// Single-thread inflate of one weather-like float32 chunk (a smooth field plus noise, as model
// output compresses) at zlib levels 1 and 6: zlib's streaming inflate, libdeflate's whole-buffer
// inflate, and the chute codec chain (`zlib`, which uses libdeflate for chunks of known size).
// Reports decoded bytes/s.

#include <benchmark/benchmark.h>
#include <libdeflate.h>
#include <zlib.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "chute/codec/codec_chain.h"
#include "chute/util/error.h"

namespace chute {
namespace {

std::vector<std::byte> weather_plane(int64_t lat, int64_t lon) {
  std::mt19937 rng(0);
  std::normal_distribution<float> noise(0.f, 0.05f);
  std::vector<float> v(static_cast<size_t>(lat * lon));
  for (int64_t i = 0; i < lat; ++i) {
    for (int64_t j = 0; j < lon; ++j) {
      const double y = M_PI * static_cast<double>(i) / static_cast<double>(lat - 1);
      const double x = 2 * M_PI * static_cast<double>(j) / static_cast<double>(lon - 1);
      v[static_cast<size_t>(i * lon + j)] =
          static_cast<float>(280.0 + 20.0 * std::sin(2 * y) * std::cos(3 * x)) + noise(rng);
    }
  }
  std::vector<std::byte> out(v.size() * 4);
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

std::vector<std::byte> zlib_compress(const std::vector<std::byte>& in, int level) {
  uLongf n = compressBound(static_cast<uLong>(in.size()));
  std::vector<std::byte> out(n);
  if (compress2(reinterpret_cast<Bytef*>(out.data()), &n, reinterpret_cast<const Bytef*>(in.data()),
                static_cast<uLong>(in.size()), level) != Z_OK) {
    fail(ErrorCode::kInternal, "compress2 failed");
  }
  out.resize(n);
  return out;
}

// Args: zlib level, lat, lon.
struct Case {
  explicit Case(const benchmark::State& state)
      : plain(weather_plane(state.range(1), state.range(2))),
        packed(zlib_compress(plain, static_cast<int>(state.range(0)))),
        out(plain.size()) {}
  void finish(benchmark::State& state) {
    if (out != plain) state.SkipWithError("decoded bytes differ");
    state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(plain.size()));
    state.counters["ratio"] =
        static_cast<double>(plain.size()) / static_cast<double>(packed.size());
  }
  std::vector<std::byte> plain, packed, out;
};

void BM_InflateZlib(benchmark::State& state) {
  Case c(state);
  z_stream z{};
  inflateInit(&z);
  for (auto _ : state) {
    inflateReset(&z);
    z.next_in = reinterpret_cast<Bytef*>(c.packed.data());
    z.avail_in = static_cast<uInt>(c.packed.size());
    z.next_out = reinterpret_cast<Bytef*>(c.out.data());
    z.avail_out = static_cast<uInt>(c.out.size());
    if (inflate(&z, Z_FINISH) != Z_STREAM_END) state.SkipWithError("inflate failed");
  }
  inflateEnd(&z);
  c.finish(state);
}

void BM_InflateLibdeflate(benchmark::State& state) {
  Case c(state);
  libdeflate_decompressor* d = libdeflate_alloc_decompressor();
  for (auto _ : state) {
    if (libdeflate_zlib_decompress(d, c.packed.data(), c.packed.size(), c.out.data(), c.out.size(),
                                   nullptr) != LIBDEFLATE_SUCCESS) {
      state.SkipWithError("libdeflate failed");
    }
  }
  libdeflate_free_decompressor(d);
  c.finish(state);
}

void BM_InflateChuteChain(benchmark::State& state) {
  Case c(state);
  const std::vector<CodecSpec> specs{{"bytes", {{"endian", "little"}}},
                                     {"zlib", nlohmann::json::object()}};
  const std::vector<int64_t> shape{state.range(1), state.range(2)};
  auto chain = CodecChain::create(specs, DataType{DTypeKind::kFloat, 4}, shape);
  CodecScratch scratch;
  for (auto _ : state) chain->decode(c.packed, c.out, scratch);
  c.finish(state);
}

#define CHUTE_INFLATE_ARGS \
  Args({1, 121, 240})->Args({6, 121, 240})->Args({1, 721, 1440})->Args({6, 721, 1440})
BENCHMARK(BM_InflateZlib)->CHUTE_INFLATE_ARGS;
BENCHMARK(BM_InflateLibdeflate)->CHUTE_INFLATE_ARGS;
BENCHMARK(BM_InflateChuteChain)->CHUTE_INFLATE_ARGS;

}  // namespace
}  // namespace chute
