#include "chute/bench/machine.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace chute::bench {
namespace {

/// Reads "Key:   1234 kB" from a /proc file; 0 when absent.
int64_t proc_kib(const char* path, const std::string& key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) == 0) {
      std::istringstream fields(line.substr(key.size() + 1));
      int64_t kib = 0;
      fields >> kib;
      return kib * 1024;
    }
  }
  return 0;
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      if (size_t colon = line.find(':'); colon != std::string::npos) {
        size_t start = line.find_first_not_of(' ', colon + 1);
        return start == std::string::npos ? "" : line.substr(start);
      }
    }
  }
  return "unknown";
}

}  // namespace

MachineInfo describe_machine() {
  MachineInfo info;
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0) info.hostname = host;
  info.cpu_model = cpu_model();
  utsname names{};
  if (uname(&names) == 0) {
    info.os = std::string(names.sysname) + " " + names.release + " " + names.machine;
  }
  info.logical_cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  info.usable_cores = info.logical_cores;
#ifdef __linux__
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) info.usable_cores = CPU_COUNT(&set);
#endif
  info.memory_total_bytes = proc_kib("/proc/meminfo", "MemTotal");
  info.memory_available_bytes = proc_kib("/proc/meminfo", "MemAvailable");
  if (info.memory_total_bytes == 0) {
    info.memory_total_bytes =
        static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<int64_t>(sysconf(_SC_PAGESIZE));
  }
  return info;
}

PeakMemory peak_memory() {
  PeakMemory memory;
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) == 0) {
    memory.maxrss_bytes = static_cast<int64_t>(usage.ru_maxrss) * 1024;  // KiB on Linux
  }
  memory.vm_hwm_bytes = proc_kib("/proc/self/status", "VmHWM");
  memory.vm_rss_bytes = proc_kib("/proc/self/status", "VmRSS");
  return memory;
}

double page_cache_resident_fraction(const std::vector<std::string>& paths) {
  const int64_t page = sysconf(_SC_PAGESIZE);
  int64_t total_pages = 0, resident_pages = 0;
  std::vector<unsigned char> residency;
  for (const std::string& path : paths) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    const off_t size = lseek(fd, 0, SEEK_END);
    if (size > 0) {
      const int64_t pages = (size + page - 1) / page;
      total_pages += pages;
      void* mapped = mmap(nullptr, static_cast<size_t>(size), PROT_READ, MAP_SHARED, fd, 0);
      if (mapped != MAP_FAILED) {
        residency.resize(static_cast<size_t>(pages));
        if (mincore(mapped, static_cast<size_t>(size), residency.data()) == 0) {
          for (unsigned char flags : residency) resident_pages += flags & 1;
        } else {
          munmap(mapped, static_cast<size_t>(size));
          ::close(fd);
          return -1;
        }
        munmap(mapped, static_cast<size_t>(size));
      }
    }
    ::close(fd);
  }
  return total_pages == 0 ? 0.0 : static_cast<double>(resident_pages) / total_pages;
}

size_t evict_page_cache(const std::vector<std::string>& paths) {
  size_t advised = 0;
  for (const std::string& path : paths) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) continue;
    // DONTNEED drops clean pages only and merely starts writeback of dirty ones, so a dataset
    // written just before the run (make-dataset, then bench) would stay resident: write it
    // back first. A no-op for files already on storage.
    ::fdatasync(fd);
    advised += ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0;
    ::close(fd);
  }
  return advised;
}

std::vector<std::string> files_under(const std::vector<std::string>& roots) {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  std::error_code ec;
  for (const std::string& root : roots) {
    fs::path path(root);
    while (!path.empty() && !fs::exists(path, ec) && path.has_parent_path() &&
           path.parent_path() != path) {
      path = path.parent_path();
    }
    if (fs::is_regular_file(path, ec)) {
      files.push_back(path.string());
      continue;
    }
    if (!fs::is_directory(path, ec)) continue;
    for (auto it = fs::recursive_directory_iterator(path, ec); !ec && it != fs::end(it);
         it.increment(ec)) {
      if (it->is_regular_file(ec)) files.push_back(it->path().string());
    }
  }
  std::sort(files.begin(), files.end());
  files.erase(std::unique(files.begin(), files.end()), files.end());
  return files;
}

nlohmann::json to_json(const MachineInfo& m) {
  return {{"hostname", m.hostname},
          {"cpu_model", m.cpu_model},
          {"os", m.os},
          {"logical_cores", m.logical_cores},
          {"usable_cores", m.usable_cores},
          {"memory_total_bytes", m.memory_total_bytes},
          {"memory_available_bytes", m.memory_available_bytes}};
}

nlohmann::json to_json(const PeakMemory& m) {
  return {{"maxrss_bytes", m.maxrss_bytes},
          {"vm_hwm_bytes", m.vm_hwm_bytes},
          {"vm_rss_bytes", m.vm_rss_bytes}};
}

}  // namespace chute::bench
