#pragma once
// What the benchmark knows about the machine it runs on: cores, memory, CPU model, and the
// process's own peak resident memory. Linux first; other systems report what POSIX gives.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace chute::bench {

struct MachineInfo {
  std::string hostname;
  std::string cpu_model;
  std::string os;                      // e.g. "Linux 6.1.0-18-amd64 x86_64"
  int logical_cores = 1;               // hardware threads
  int usable_cores = 1;                // in this process's CPU affinity mask
  int64_t memory_total_bytes = 0;      // MemTotal
  int64_t memory_available_bytes = 0;  // MemAvailable at start
};

MachineInfo describe_machine();

struct PeakMemory {
  int64_t maxrss_bytes = 0;  // getrusage(RUSAGE_SELF).ru_maxrss
  int64_t vm_hwm_bytes = 0;  // /proc/self/status VmHWM (0 when unavailable)
  int64_t vm_rss_bytes = 0;  // /proc/self/status VmRSS now
};

PeakMemory peak_memory();

/// Fraction of the pages of `paths` resident in the page cache (mmap + mincore), in [0, 1];
/// files that cannot be opened count as not resident. -1 when mincore is unavailable.
double page_cache_resident_fraction(const std::vector<std::string>& paths);

/// Asks the kernel to drop the cached pages of every file of `paths` (posix_fadvise
/// POSIX_FADV_DONTNEED on the whole file, after fdatasync so pages written just before are
/// clean and can go), so the next reads come from storage. Pages another process has mapped,
/// or a file system that keeps everything in memory (tmpfs), may stay: check with
/// page_cache_resident_fraction().
/// Returns the number of files advised.
size_t evict_page_cache(const std::vector<std::string>& paths);

/// The regular files under each of `roots` (a root that is a file is itself; "group/member"
/// paths and "file.h5/dataset" paths fall back to the nearest existing parent), sorted.
std::vector<std::string> files_under(const std::vector<std::string>& roots);

nlohmann::json to_json(const MachineInfo& machine);
nlohmann::json to_json(const PeakMemory& memory);

}  // namespace chute::bench
