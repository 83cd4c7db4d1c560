// The open-file cache: a bounded LRU of descriptors that never reads a replaced or removed
// file through its old descriptor.
#include "chute/store/open_file_cache.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

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

}  // namespace
}  // namespace chute::detail
