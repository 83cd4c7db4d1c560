#pragma once
// How much memory this process may use: the smallest of the machine's physical memory, the
// memory limit of its cgroup (v2 memory.max or v1 memory.limit_in_bytes, the cgroup's and its
// ancestors') and its address-space limit (RLIMIT_AS). A job in a Slurm or container allocation
// smaller than the node is held to the allocation, not to the node.

#include <cstdint>
#include <optional>
#include <string>

namespace chute {

struct MemoryLimit {
  uint64_t bytes = UINT64_MAX;
  std::string source;  // "physical memory", "the cgroup limit (<file>)", "RLIMIT_AS"
};

/// The limit that applies to this process now.
MemoryLimit memory_limit();

/// The cgroup memory limit of the process whose /proc/<pid>/cgroup text is `self_cgroup`, with
/// the cgroup file systems mounted under `root` (/sys/fs/cgroup); the file it came from in
/// `*file`. nullopt when no limit is set or none can be read.
std::optional<uint64_t> cgroup_memory_limit(const std::string& self_cgroup, const std::string& root,
                                            std::string* file);

/// The smallest of the three (absent ones ignored), naming where it came from.
MemoryLimit smallest_memory_limit(uint64_t physical, std::optional<uint64_t> cgroup,
                                  const std::string& cgroup_file,
                                  std::optional<uint64_t> address_space);

}  // namespace chute
