// The open-file cache: a bounded LRU of descriptors that never reads a replaced or removed
// file through its old descriptor.
#include "chute/store/open_file_cache.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "chute/util/fork_test_util.h"

namespace chute::detail {
namespace {

namespace fs = std::filesystem;

class OpenFileCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("chute_open_files_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
  static std::string read_all(const OpenFile& file) {
    char buffer[64];
    const ssize_t n = ::pread(file.fd(), buffer, sizeof buffer, 0);
    return std::string(buffer, n > 0 ? static_cast<size_t>(n) : 0);
  }
  fs::path dir_;
};

TEST_F(OpenFileCacheTest, KeepsTheMostRecentlyUsedUpToItsCapacity) {
  OpenFileCache cache(3);
  std::shared_ptr<const OpenFile> file;
  struct stat st {};
  std::string paths[5];
  for (int i = 0; i < 5; ++i) {
    paths[i] = write("f" + std::to_string(i), "value " + std::to_string(i));
    ASSERT_EQ(cache.open(paths[i], file, st), OpenFileCache::Found::kRegular);
    EXPECT_EQ(read_all(*file), "value " + std::to_string(i));
  }
  EXPECT_EQ(cache.kept(), 3u);
  EXPECT_EQ(cache.opens(), 5u);
  for (int i = 2; i < 5; ++i)
    ASSERT_EQ(cache.open(paths[i], file, st), OpenFileCache::Found::kRegular);
  EXPECT_EQ(cache.opens(), 5u);  // all three kept: nothing opened
  ASSERT_EQ(cache.open(paths[0], file, st), OpenFileCache::Found::kRegular);
  EXPECT_EQ(cache.opens(), 6u);  // dropped earlier: opened again, and f2 goes
  EXPECT_EQ(cache.kept(), 3u);
  EXPECT_EQ(st.st_size, 7);
}

TEST_F(OpenFileCacheTest, AReplacedOrRemovedFileIsNeverReadThroughItsOldDescriptor) {
  OpenFileCache cache(8);
  std::shared_ptr<const OpenFile> file;
  struct stat st {};
  const std::string path = write("entry", "old bytes");
  ASSERT_EQ(cache.open(path, file, st), OpenFileCache::Found::kRegular);
  const std::shared_ptr<const OpenFile> old = file;
  // Another process renames a new file over it (a new inode at the same path).
  fs::rename(write("temp", "new bytes"), path);
  ASSERT_EQ(cache.open(path, file, st), OpenFileCache::Found::kRegular);
  EXPECT_EQ(read_all(*file), "new bytes");
  EXPECT_NE(file.get(), old.get());
  EXPECT_EQ(read_all(*old), "old bytes");  // a reader still holding the old one is unharmed
  EXPECT_EQ(cache.opens(), 2u);
  // Removed (evicted by another process): absent, and its descriptor is let go.
  fs::remove(path);
  EXPECT_EQ(cache.open(path, file, st), OpenFileCache::Found::kAbsent);
  EXPECT_EQ(file, nullptr);
  EXPECT_EQ(cache.kept(), 0u);
}

TEST_F(OpenFileCacheTest, OnlyRegularFilesAreOpened) {
  OpenFileCache cache(8);
  std::shared_ptr<const OpenFile> file;
  struct stat st {};
  const std::string target = write("target", "x");
  const std::string link = (dir_ / "link").string();
  fs::create_symlink(target, link);
  EXPECT_EQ(cache.open(link, file, st), OpenFileCache::Found::kDamaged);
  EXPECT_EQ(cache.open(dir_.string(), file, st), OpenFileCache::Found::kDamaged);
  const std::string fifo = (dir_ / "fifo").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(cache.open(fifo, file, st), OpenFileCache::Found::kDamaged);  // without blocking
  EXPECT_EQ(file, nullptr);
  EXPECT_EQ(cache.kept(), 0u);
}

TEST_F(OpenFileCacheTest, CapacityZeroKeepsNothing) {
  OpenFileCache cache(0);
  std::shared_ptr<const OpenFile> file;
  struct stat st {};
  const std::string path = write("f", "abc");
  for (int i = 0; i < 3; ++i) ASSERT_EQ(cache.open(path, file, st), OpenFileCache::Found::kRegular);
  EXPECT_EQ(cache.opens(), 3u);
  EXPECT_EQ(cache.kept(), 0u);
  EXPECT_GE(default_open_file_capacity(), 1u);
}

// Another process unlinking kept files (a node cache evicting entries that other ranks keep
// open): their space is not held past the next sweep, which every kSweepEvery-th open() runs.
TEST_F(OpenFileCacheTest, FilesUnlinkedByOthersAreLetGoAtTheNextSweep) {
  OpenFileCache cache(64);
  std::shared_ptr<const OpenFile> file;
  struct stat st {};
  std::vector<std::string> paths;
  for (int i = 0; i < 10; ++i) {
    paths.push_back(write("e" + std::to_string(i), "entry " + std::to_string(i)));
    ASSERT_EQ(cache.open(paths.back(), file, st), OpenFileCache::Found::kRegular);
  }
  file.reset();
  for (int i = 0; i < 6; ++i) fs::remove(paths[static_cast<size_t>(i)]);  // "another process"
  EXPECT_EQ(cache.kept(), 10u);
  cache.drop_unlinked();
  EXPECT_EQ(cache.kept(), 4u);
  // Without being asked: the sweep comes within kSweepEvery opens of still-named files.
  for (int i = 6; i < 10; ++i) fs::remove(paths[static_cast<size_t>(i)]);
  const std::string other = write("other", "x");
  for (uint64_t i = 0; i < OpenFileCache::kSweepEvery; ++i) {
    ASSERT_EQ(cache.open(other, file, st), OpenFileCache::Found::kRegular);
  }
  EXPECT_EQ(cache.kept(), 1u);
}

// The kept files are bounded in bytes as well as in number.
TEST_F(OpenFileCacheTest, KeptFilesAreBoundedInBytes) {
  OpenFileCache cache(100, 25);
  std::shared_ptr<const OpenFile> file;
  struct stat st {};
  for (int i = 0; i < 5; ++i) {
    ASSERT_EQ(cache.open(write("b" + std::to_string(i), std::string(10, 'a')), file, st),
              OpenFileCache::Found::kRegular);
  }
  EXPECT_EQ(cache.kept(), 2u);  // 20 of 25 bytes
}

// Out of descriptors says nothing about the file: kUnavailable, so a node cache treats it as a
// miss and never unlinks a good entry for it.
TEST_F(OpenFileCacheTest, RunningOutOfDescriptorsIsUnavailableNotDamaged) {
  const std::string path = write("f", "abc");
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &saved), 0);
  std::vector<int> held;
  for (;;) {  // use every descriptor below a small limit
    rlimit low = saved;
    low.rlim_cur = 64;
    ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
    const int fd = ::dup(0);
    if (fd < 0) break;
    held.push_back(fd);
  }
  OpenFileCache cache(8);
  std::shared_ptr<const OpenFile> file;
  struct stat st {};
  const auto found = cache.open(path, file, st);
  for (int fd : held) ::close(fd);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &saved), 0);
  EXPECT_EQ(found, OpenFileCache::Found::kUnavailable);
  EXPECT_EQ(file, nullptr);
  EXPECT_TRUE(fs::exists(path));
  EXPECT_EQ(cache.open(path, file, st), OpenFileCache::Found::kRegular);
}

// A DataLoader worker forked while the parent's readers open files: the child's first open
// through the same cache must not wait for a reader the child does not have (it hung).
TEST_F(OpenFileCacheTest, ForkWhileOtherThreadsOpenLeavesTheChildACacheItCanUse) {
  if (chute::testing::kSanitized)
    GTEST_SKIP() << "sanitizers do not support fork() of a threaded process";
  std::vector<std::string> paths;
  for (int i = 0; i < 6; ++i)
    paths.push_back(write("f" + std::to_string(i), "v" + std::to_string(i)));
  OpenFileCache cache(2);  // fewer than the files: opens and evictions all the time
  std::atomic<bool> stop{false};
  std::vector<std::thread> readers;
  for (int t = 0; t < 3; ++t) {
    readers.emplace_back([&, t] {
      std::shared_ptr<const OpenFile> file;
      struct stat st {};
      for (size_t i = t; !stop; ++i) cache.open(paths[i % paths.size()], file, st);
    });
  }
  for (int fork = 0; fork < 20; ++fork) {
    const int status = chute::testing::in_forked_child(
        [&] {
          std::shared_ptr<const OpenFile> file;
          struct stat st {};
          if (cache.open(paths[0], file, st) != OpenFileCache::Found::kRegular) return 1;
          return read_all(*file) == "v0" ? 0 : 2;
        },
        10);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      ADD_FAILURE() << "fork " << fork << ": child "
                    << (WIFEXITED(status) ? "exited " : "killed by signal ")
                    << (WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status))
                    << " (14: hung)";
      break;
    }
  }
  stop = true;
  for (auto& t : readers) t.join();
}

}  // namespace
}  // namespace chute::detail
