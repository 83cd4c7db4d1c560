#include "chute/util/memory_limit.h"

#include <sys/resource.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <vector>

namespace chute {
namespace {

// Above this a cgroup "limit" means none (v1 writes 2^63 rounded down to a page).
constexpr uint64_t kUnlimited = uint64_t{1} << 62;

std::optional<uint64_t> read_limit(const std::string& path) {
  std::ifstream in(path);
  std::string text;
  if (!in || !(in >> text) || text == "max") return std::nullopt;
  try {
    size_t used = 0;
    const uint64_t value = std::stoull(text, &used);
    if (used != text.size() || value >= kUnlimited) return std::nullopt;
    return value;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

/// The smallest limit set in `dir`/`file` or in a parent folder of `dir` up to `top`.
std::optional<uint64_t> limit_up_to(std::string dir, const std::string& top,
                                    const std::string& file, std::string* from) {
  std::optional<uint64_t> best;
  while (true) {
    const std::string path = dir + "/" + file;
    if (auto v = read_limit(path); v && (!best || *v < *best)) {
      best = v;
      *from = path;
    }
    if (dir.size() <= top.size()) break;
    dir.resize(dir.rfind('/'));
  }
  return best;
}

uint64_t physical_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page_size = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_size <= 0) return UINT64_MAX;
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size);
}

}  // namespace

std::optional<uint64_t> cgroup_memory_limit(const std::string& self_cgroup, const std::string& root,
                                            std::string* file) {
  std::istringstream lines(self_cgroup);
  std::string line;
  std::optional<uint64_t> best;
  auto consider = [&](std::optional<uint64_t> v, const std::string& from) {
    if (v && (!best || *v < *best)) {
      best = v;
      *file = from;
    }
  };
  while (std::getline(lines, line)) {
    // "<id>:<controllers>:<path>"; v2 has id 0 and no controllers.
    const size_t a = line.find(':');
    const size_t b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1);
    std::string path = line.substr(b + 1);
    while (!path.empty() && path.back() == '/') path.pop_back();
    std::string from;
    if (controllers.empty()) {
      consider(limit_up_to(root + path, root, "memory.max", &from), from);
      // Inside a cgroup namespace the process's own cgroup is the root.
      consider(limit_up_to(root, root, "memory.max", &from), from);
    } else if (("," + controllers + ",").find(",memory,") != std::string::npos) {
      const std::string top = root + "/memory";
      consider(limit_up_to(top + path, top, "memory.limit_in_bytes", &from), from);
    }
  }
  return best;
}

MemoryLimit smallest_memory_limit(uint64_t physical, std::optional<uint64_t> cgroup,
                                  const std::string& cgroup_file,
                                  std::optional<uint64_t> address_space) {
  MemoryLimit limit{physical, "physical memory"};
  if (cgroup && *cgroup < limit.bytes) limit = {*cgroup, "the cgroup limit (" + cgroup_file + ")"};
  if (address_space && *address_space < limit.bytes) limit = {*address_space, "RLIMIT_AS"};
  return limit;
}

MemoryLimit memory_limit() {
  std::ifstream in("/proc/self/cgroup");
  std::stringstream text;
  text << in.rdbuf();
  std::string file;
  const std::optional<uint64_t> cgroup = cgroup_memory_limit(text.str(), "/sys/fs/cgroup", &file);
  std::optional<uint64_t> address_space;
  struct rlimit rl;
  if (::getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
    address_space = static_cast<uint64_t>(rl.rlim_cur);
  }
  return smallest_memory_limit(physical_memory_bytes(), cgroup, file, address_space);
}

}  // namespace chute
