// Reads in flight on local files, two ways: a pool of blocking pread threads (what chute's
// IoExecutor does) and io_uring (liburing) with the same queue depth. Writes N files of S
// bytes, then reads each whole once per trial in a shuffled order, warm (page cache) and cold
// (posix_fadvise(DONTNEED) on every file before the trial). Prints GB/s and reads/s.
//
//   io_engine_probe DIR [files=256] [bytes=1048576] [depth=32] [trials=3]
//
// Built only with CHUTE_BUILD_BENCHMARKS and when pkg-config finds liburing.

#include <fcntl.h>
#include <liburing.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

struct File {
  std::string path;
  int fd = -1;
};

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void evict(const std::vector<File>& files) {
  for (const File& f : files) posix_fadvise(f.fd, 0, 0, POSIX_FADV_DONTNEED);
}

double pread_pool(const std::vector<File>& files, const std::vector<size_t>& order, size_t bytes,
                  int depth) {
  std::atomic<size_t> next{0};
  const double start = now_s();
  std::vector<std::thread> threads;
  for (int t = 0; t < depth; ++t) {
    threads.emplace_back([&] {
      std::vector<char> buffer(bytes);
      for (size_t i; (i = next.fetch_add(1)) < order.size();) {
        size_t done = 0;
        while (done < bytes) {
          const ssize_t n = pread(files[order[i]].fd, buffer.data() + done, bytes - done, done);
          if (n <= 0) std::abort();
          done += static_cast<size_t>(n);
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  return now_s() - start;
}

double uring(const std::vector<File>& files, const std::vector<size_t>& order, size_t bytes,
             int depth) {
  io_uring ring;
  if (io_uring_queue_init(static_cast<unsigned>(depth), &ring, 0) != 0) std::abort();
  std::vector<std::vector<char>> buffers(static_cast<size_t>(depth), std::vector<char>(bytes));
  std::vector<int> free_slots;
  for (int s = 0; s < depth; ++s) free_slots.push_back(s);
  const double start = now_s();
  size_t submitted = 0, completed = 0;
  while (completed < order.size()) {
    while (!free_slots.empty() && submitted < order.size()) {
      const int slot = free_slots.back();
      free_slots.pop_back();
      io_uring_sqe* sqe = io_uring_get_sqe(&ring);
      io_uring_prep_read(sqe, files[order[submitted]].fd, buffers[static_cast<size_t>(slot)].data(),
                         static_cast<unsigned>(bytes), 0);
      io_uring_sqe_set_data64(sqe, static_cast<uint64_t>(slot));
      ++submitted;
    }
    io_uring_submit(&ring);
    io_uring_cqe* cqe = nullptr;
    if (io_uring_wait_cqe(&ring, &cqe) != 0) std::abort();
    do {
      if (cqe->res != static_cast<int>(bytes)) std::abort();  // whole files of `bytes`
      free_slots.push_back(static_cast<int>(io_uring_cqe_get_data64(cqe)));
      io_uring_cqe_seen(&ring, cqe);
      ++completed;
    } while (io_uring_peek_cqe(&ring, &cqe) == 0);
  }
  io_uring_queue_exit(&ring);
  return now_s() - start;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s DIR [files] [bytes] [depth] [trials]\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  const size_t n = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 256;
  const size_t bytes = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 1 << 20;
  const int depth = argc > 4 ? std::atoi(argv[4]) : 32;
  const int trials = argc > 5 ? std::atoi(argv[5]) : 3;
  std::vector<File> files(n);
  std::vector<char> data(bytes, 'x');
  for (size_t i = 0; i < n; ++i) {
    files[i].path = dir + "/probe_" + std::to_string(i);
    int fd = open(files[i].path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || write(fd, data.data(), bytes) != static_cast<ssize_t>(bytes)) return 1;
    fsync(fd);
    close(fd);
    files[i].fd = open(files[i].path.c_str(), O_RDONLY);
  }
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  std::mt19937_64 rng(1);
  std::printf("%zu files of %zu bytes, depth %d\n", n, bytes, depth);
  for (const bool cold : {false, true}) {
    for (int t = 0; t < trials; ++t) {
      std::shuffle(order.begin(), order.end(), rng);
      for (const bool use_uring : {false, true}) {
        if (cold) evict(files);
        const double s =
            use_uring ? uring(files, order, bytes, depth) : pread_pool(files, order, bytes, depth);
        std::printf("%s %-12s trial %d: %7.3f GB/s %9.0f reads/s\n", cold ? "cold" : "warm",
                    use_uring ? "io_uring" : "pread pool", t, n * bytes / s / 1e9, n / s);
      }
    }
  }
  for (File& f : files) {
    close(f.fd);
    unlink(f.path.c_str());
  }
}
