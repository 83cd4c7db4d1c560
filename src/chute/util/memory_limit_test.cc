#include "chute/util/memory_limit.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace chute {
namespace {

namespace fs = std::filesystem;

TEST(MemoryLimit, TheSmallestLimitWinsAndIsNamed) {
  EXPECT_EQ(smallest_memory_limit(64, std::nullopt, "", std::nullopt).source, "physical memory");
  const MemoryLimit cgroup = smallest_memory_limit(64, 32, "/sys/fs/cgroup/x/memory.max", 48);
  EXPECT_EQ(cgroup.bytes, 32u);
  EXPECT_EQ(cgroup.source, "the cgroup limit (/sys/fs/cgroup/x/memory.max)");
  const MemoryLimit as = smallest_memory_limit(64, 32, "f", 16);
  EXPECT_EQ(as.bytes, 16u);
  EXPECT_EQ(as.source, "RLIMIT_AS");
  EXPECT_LE(memory_limit().bytes, smallest_memory_limit(UINT64_MAX, {}, "", {}).bytes);
}

class CgroupLimit : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("chute_cgroup_" + std::to_string(getpid()));
    fs::remove_all(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  void write(const fs::path& relative, const std::string& text) {
    fs::create_directories((root_ / relative).parent_path());
    std::ofstream(root_ / relative) << text << "\n";
  }
  fs::path root_;
};

TEST_F(CgroupLimit, V2ReadsTheCgroupAndItsAncestors) {
  write("slurm/job_7/step_0/memory.max", "max");
  write("slurm/job_7/memory.max", "4294967296");
  write("slurm/memory.max", "8589934592");
  std::string file;
  EXPECT_EQ(cgroup_memory_limit("0::/slurm/job_7/step_0\n", root_.string(), &file),
            uint64_t{4294967296});
  EXPECT_EQ(file, (root_ / "slurm/job_7/memory.max").string());
}

TEST_F(CgroupLimit, V1ReadsTheMemoryController) {
  write("memory/docker/abc/memory.limit_in_bytes", "1073741824");
  std::string file;
  EXPECT_EQ(cgroup_memory_limit("5:cpu,cpuacct:/docker/abc\n4:memory:/docker/abc\n", root_.string(),
                                &file),
            uint64_t{1073741824});
  EXPECT_EQ(file, (root_ / "memory/docker/abc/memory.limit_in_bytes").string());
}

TEST_F(CgroupLimit, NoLimitWhenUnsetOrTheV1Sentinel) {
  write("memory/memory.limit_in_bytes", "9223372036854771712");
  write("memory.max", "max");
  std::string file;
  EXPECT_EQ(cgroup_memory_limit("4:memory:/\n0::/\n", root_.string(), &file), std::nullopt);
  EXPECT_EQ(cgroup_memory_limit("garbage", root_.string(), &file), std::nullopt);
}

}  // namespace
}  // namespace chute
