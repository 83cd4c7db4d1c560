#include "chute/bench/machine.h"

#include <gtest/gtest.h>
#include <linux/magic.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace chute::bench {
namespace {

namespace fs = std::filesystem;

// A file written just before eviction holds dirty pages, which POSIX_FADV_DONTNEED alone
// leaves in memory: `chute make-dataset` followed by `chute bench --page-cache cold` then
// measured the page cache. Eviction writes them back first.
TEST(PageCache, EvictsAFileWrittenJustBefore) {
  const fs::path dir = fs::temp_directory_path() / ("chute_evict_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  struct statfs info {};
  ASSERT_EQ(::statfs(dir.c_str(), &info), 0);
  if (info.f_type == TMPFS_MAGIC || info.f_type == RAMFS_MAGIC) {
    fs::remove_all(dir);
    GTEST_SKIP() << "the temporary folder is in memory (tmpfs): its pages cannot be evicted";
  }
  const std::string path = (dir / "chunk").string();
  {
    std::ofstream out(path, std::ios::binary);
    const std::string block(1 << 16, 'x');
    for (int i = 0; i < 64; ++i) out << block;  // 4 MiB, no fsync
  }
  const std::vector<std::string> files{path};
  const double before = page_cache_resident_fraction(files);
  ASSERT_GE(before, 0.0) << "mincore unavailable";
  EXPECT_GT(before, 0.5) << "the file just written should be in the page cache";
  EXPECT_EQ(evict_page_cache(files), 1u);
  EXPECT_LT(page_cache_resident_fraction(files), 0.05);
  fs::remove_all(dir);
}

TEST(PageCache, FilesThatCannotBeOpenedAreSkipped) {
  EXPECT_EQ(evict_page_cache({"/nonexistent/chute/file"}), 0u);
  EXPECT_EQ(page_cache_resident_fraction({"/nonexistent/chute/file"}), 0.0);
}

}  // namespace
}  // namespace chute::bench
