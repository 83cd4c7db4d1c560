// How to read a 64³ crop of a contiguous L³ float32 channel (W3: an HDF5 contiguous dataset or
// an .npy file): 64² runs of 256 bytes, one per row. Compares one pread per run, preadv of up to
// IOV_MAX runs per call, and memcpy out of a read-only mapping of the file. Argument 0: with the
// file in the page cache (read through once before timing, the mapping populated, as a mapping
// that chute keeps open ends up); 1: cold, the file's pages dropped
// before every crop (madvise(MADV_DONTNEED) on the mapping, then posix_fadvise(DONTNEED), not
// timed), so each crop is read from storage. L from CHUTE_CROP_BENCH_L (default 512).
// The choice for the contiguous source follows these numbers (docs/design/reading.md and
// docs/design/volume-crops.md, "Crops from cold storage").

#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

constexpr int64_t kCrop = 64;

int64_t edge() {
  const char* env = std::getenv("CHUTE_CROP_BENCH_L");
  return env ? std::atoll(env) : 512;
}

/// The benchmark's file: L³ float32, created once under /tmp.
const std::string& volume_path() {
  static const std::string path = [] {
    const int64_t l = edge();
    std::string p = "/tmp/chute_crop_bench_" + std::to_string(l) + ".f32";
    struct stat st {};
    const auto nbytes = static_cast<off_t>(l * l * l * 4);
    if (stat(p.c_str(), &st) != 0 || st.st_size != nbytes) {
      const int fd = open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      std::vector<float> plane(static_cast<size_t>(l * l));
      for (int64_t z = 0; z < l; ++z) {
        for (size_t i = 0; i < plane.size(); ++i) plane[i] = static_cast<float>(z * 7 + i);
        if (write(fd, plane.data(), plane.size() * 4) < 0) std::abort();
      }
      close(fd);
    }
    return p;
  }();
  return path;
}

/// Drops the file's pages from the page cache (and the mapping's, when given) without timing
/// it, when the benchmark runs cold (argument 1).
void evict_if_cold(benchmark::State& state, int fd, void* map = nullptr, size_t nbytes = 0) {
  if (state.range(0) == 0) return;
  state.PauseTiming();
  if (map != nullptr) madvise(map, nbytes, MADV_DONTNEED);
  posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  state.ResumeTiming();
}

/// Warm runs (argument 0) start with the whole file in the page cache: a cold run before
/// them dropped it, and random crops would otherwise fault pages in as they go.
void load_if_warm(benchmark::State& state, int fd) {
  if (state.range(0) != 0) return;
  std::vector<char> buffer(8 << 20);
  for (off_t at = 0;; at += static_cast<off_t>(buffer.size())) {
    if (pread(fd, buffer.data(), buffer.size(), at) <= 0) break;
  }
}

struct Crops {
  std::mt19937_64 rng{0};
  int64_t l = edge();
  std::uniform_int_distribution<int64_t> pick{0, edge() - kCrop};
  /// Byte offset of row (z, y) of a fresh random crop's corner.
  void next(int64_t* z0, int64_t* y0, int64_t* x0) {
    *z0 = pick(rng);
    *y0 = pick(rng);
    *x0 = pick(rng);
  }
  int64_t offset(int64_t z, int64_t y, int64_t x) const { return ((z * l + y) * l + x) * 4; }
};

void BM_CropPreadPerRun(benchmark::State& state) {
  const int fd = open(volume_path().c_str(), O_RDONLY);
  load_if_warm(state, fd);
  std::vector<float> out(kCrop * kCrop * kCrop);
  Crops crops;
  for (auto _ : state) {
    evict_if_cold(state, fd);
    int64_t z0, y0, x0;
    crops.next(&z0, &y0, &x0);
    float* dst = out.data();
    for (int64_t z = 0; z < kCrop; ++z) {
      for (int64_t y = 0; y < kCrop; ++y, dst += kCrop) {
        if (pread(fd, dst, kCrop * 4, crops.offset(z0 + z, y0 + y, x0)) != kCrop * 4) std::abort();
      }
    }
    benchmark::DoNotOptimize(out.data());
  }
  close(fd);
  state.SetBytesProcessed(state.iterations() * kCrop * kCrop * kCrop * 4);
}
BENCHMARK(BM_CropPreadPerRun)->Arg(0)->Arg(1)->UseRealTime();

void BM_CropPreadvPerPlane(benchmark::State& state) {
  // preadv reads consecutive file bytes into scattered buffers: one call per run of the file
  // still, unless runs are adjacent. So batch the runs of a plane with one call each to
  // preadv2-style vectors is not possible; measure the honest form: one preadv per run group
  // of a whole row-span (the 64 rows of a plane span 64 file rows: read the span, keep rows).
  const int fd = open(volume_path().c_str(), O_RDONLY);
  load_if_warm(state, fd);
  const int64_t l = edge();
  std::vector<float> out(kCrop * kCrop * kCrop);
  std::vector<float> skip(static_cast<size_t>(l));
  Crops crops;
  std::vector<iovec> iov;
  for (auto _ : state) {
    evict_if_cold(state, fd);
    int64_t z0, y0, x0;
    crops.next(&z0, &y0, &x0);
    float* dst = out.data();
    for (int64_t z = 0; z < kCrop; ++z) {
      // One call per plane: the 64 wanted runs interleaved with the (l - 64)-float gaps.
      iov.clear();
      for (int64_t y = 0; y < kCrop; ++y, dst += kCrop) {
        iov.push_back({dst, kCrop * 4});
        if (y + 1 < kCrop) iov.push_back({skip.data(), static_cast<size_t>((l - kCrop) * 4)});
      }
      const auto want = static_cast<ssize_t>((kCrop * l - (l - kCrop)) * 4);
      if (preadv(fd, iov.data(), static_cast<int>(iov.size()), crops.offset(z0 + z, y0, x0)) !=
          want) {
        std::abort();
      }
    }
    benchmark::DoNotOptimize(out.data());
  }
  close(fd);
  state.SetBytesProcessed(state.iterations() * kCrop * kCrop * kCrop * 4);
}
BENCHMARK(BM_CropPreadvPerPlane)->Arg(0)->Arg(1)->UseRealTime();

void BM_CropMmapMemcpy(benchmark::State& state) {
  const int fd = open(volume_path().c_str(), O_RDONLY);
  load_if_warm(state, fd);
  const int64_t l = edge();
  const auto nbytes = static_cast<size_t>(l * l * l * 4);
  const int populate = state.range(0) == 0 ? MAP_POPULATE : 0;
  auto* base =
      static_cast<const std::byte*>(mmap(nullptr, nbytes, PROT_READ, MAP_SHARED | populate, fd, 0));
  std::vector<float> out(kCrop * kCrop * kCrop);
  Crops crops;
  for (auto _ : state) {
    evict_if_cold(state, fd, const_cast<std::byte*>(base), nbytes);
    int64_t z0, y0, x0;
    crops.next(&z0, &y0, &x0);
    float* dst = out.data();
    for (int64_t z = 0; z < kCrop; ++z) {
      for (int64_t y = 0; y < kCrop; ++y, dst += kCrop) {
        std::memcpy(dst, base + crops.offset(z0 + z, y0 + y, x0), kCrop * 4);
      }
    }
    benchmark::DoNotOptimize(out.data());
  }
  munmap(const_cast<std::byte*>(base), nbytes);
  close(fd);
  state.SetBytesProcessed(state.iterations() * kCrop * kCrop * kCrop * 4);
}
BENCHMARK(BM_CropMmapMemcpy)->Arg(0)->Arg(1)->UseRealTime();

void BM_CropMmapWillneedMemcpy(benchmark::State& state) {
  // The mapping again, but each plane's span of the crop is announced with
  // madvise(MADV_WILLNEED) before the copy: from cold storage the kernel starts all 64 planes'
  // reads at once instead of one page fault's read-around at a time.
  const int fd = open(volume_path().c_str(), O_RDONLY);
  load_if_warm(state, fd);
  const int64_t l = edge();
  const auto nbytes = static_cast<size_t>(l * l * l * 4);
  const int populate = state.range(0) == 0 ? MAP_POPULATE : 0;
  auto* base =
      static_cast<std::byte*>(mmap(nullptr, nbytes, PROT_READ, MAP_SHARED | populate, fd, 0));
  const auto page = static_cast<int64_t>(sysconf(_SC_PAGESIZE));
  std::vector<float> out(kCrop * kCrop * kCrop);
  Crops crops;
  for (auto _ : state) {
    evict_if_cold(state, fd, base, nbytes);
    int64_t z0, y0, x0;
    crops.next(&z0, &y0, &x0);
    for (int64_t z = 0; z < kCrop; ++z) {
      const int64_t first = crops.offset(z0 + z, y0, x0) / page * page;
      const int64_t last = crops.offset(z0 + z, y0 + kCrop - 1, x0 + kCrop);
      madvise(base + first, static_cast<size_t>(last - first), MADV_WILLNEED);
    }
    float* dst = out.data();
    for (int64_t z = 0; z < kCrop; ++z) {
      for (int64_t y = 0; y < kCrop; ++y, dst += kCrop) {
        std::memcpy(dst, base + crops.offset(z0 + z, y0 + y, x0), kCrop * 4);
      }
    }
    benchmark::DoNotOptimize(out.data());
  }
  munmap(base, nbytes);
  close(fd);
  state.SetBytesProcessed(state.iterations() * kCrop * kCrop * kCrop * 4);
}
BENCHMARK(BM_CropMmapWillneedMemcpy)->Arg(0)->Arg(1)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
