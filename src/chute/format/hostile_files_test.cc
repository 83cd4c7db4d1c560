// Zarr folders with something other than a regular file where chute expects one: a FIFO or a
// directory at a chunk key, a FIFO at .zarray/.zattrs/zarr.json or inside a group. Each is a
// clear error naming the array and key, at once (a FIFO opened for reading used to block
// forever, a directory at a chunk key read as the fill value).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <vector>

#include "chute/format/open.h"
#include "chute/store/file_store.h"
#include "chute/util/error.h"

namespace chute {
namespace {

namespace fs = std::filesystem;

class HostileFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("chute_hostile_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_ / "a");
    std::ofstream(root_ / "a" / ".zarray")
        << R"({"zarr_format":2,"shape":[4],"chunks":[2],"dtype":"<f4","compressor":null,)"
           R"("fill_value":0,"filters":null,"order":"C"})";
    const float values[2] = {1.5f, 2.5f};
    std::ofstream(root_ / "a" / "0", std::ios::binary)
        .write(reinterpret_cast<const char*>(values), sizeof values);
    std::ofstream(root_ / ".zgroup") << R"({"zarr_format":2})";
  }
  void TearDown() override { fs::remove_all(root_); }

  void make_fifo(const fs::path& path) {
    fs::remove_all(path);
    ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0) << path;
  }
  std::string array_path() const { return (root_ / "a").string(); }

  fs::path root_;
};

const std::vector<int64_t> kOrigin = {0};

std::string error_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an error";
  return {};
}

void read_all(const std::string& path) {
  ArrayPtr array = open_array(path);
  std::vector<float> out(4);
  array->read(kOrigin, StridedView::contiguous(reinterpret_cast<std::byte*>(out.data()), {4}, 4));
}

void expect_mentions(const std::string& message, std::initializer_list<std::string> parts) {
  for (const std::string& part : parts) {
    EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' not in: " << message;
  }
}

TEST_F(HostileFiles, RegularFilesStillRead) {
  ArrayPtr array = open_array(array_path());
  std::vector<float> out(4);
  array->read(kOrigin, StridedView::contiguous(reinterpret_cast<std::byte*>(out.data()), {4}, 4));
  EXPECT_EQ(out, (std::vector<float>{1.5f, 2.5f, 0.0f, 0.0f}));  // chunk 1 missing: fill value
}

TEST_F(HostileFiles, FifoAtAChunkKey) {
  make_fifo(root_ / "a" / "1");
  expect_mentions(error_of([&] { read_all(array_path()); }),
                  {"array '" + array_path() + "'", "chunk '1'", "is a FIFO"});
}

TEST_F(HostileFiles, DirectoryAtAChunkKeyIsNotTheFillValue) {
  fs::create_directory(root_ / "a" / "1");
  expect_mentions(error_of([&] { read_all(array_path()); }),
                  {"array '" + array_path() + "'", "chunk '1'", "is a directory"});
}

TEST_F(HostileFiles, FifoAtMetadataKeys) {
  make_fifo(root_ / "a" / ".zattrs");
  expect_mentions(error_of([&] { open_array(array_path()); }), {".zattrs", "is a FIFO"});
  fs::remove(root_ / "a" / ".zattrs");
  make_fifo(root_ / "a" / ".zarray");
  expect_mentions(error_of([&] { open_array(array_path()); }), {".zarray", "is a FIFO"});
  make_fifo(root_ / "a" / "zarr.json");
  expect_mentions(error_of([&] { open_array(array_path()); }), {"zarr.json", "is a FIFO"});
}

TEST_F(HostileFiles, FifoInsideAGroup) {
  make_fifo(root_ / "stray");  // a FIFO member is not a node: listed, never opened
  EXPECT_EQ(open_group(root_.string()).arrays.size(), 1u);
  make_fifo(root_ / "a" / ".zarray");
  expect_mentions(error_of([&] { open_group(root_.string()); }), {"a/.zarray", "is a FIFO"});
}

TEST_F(HostileFiles, SymlinkedChunkFollowedUnlessConfined) {
  const fs::path outside = root_.string() + "_outside";
  fs::create_directories(outside);
  const float values[2] = {7.0f, 8.0f};
  std::ofstream(outside / "chunk", std::ios::binary)
      .write(reinterpret_cast<const char*>(values), sizeof values);
  fs::create_symlink(outside / "chunk", root_ / "a" / "1");
  ArrayPtr array = open_array(array_path());
  std::vector<float> out(4);
  array->read(kOrigin, StridedView::contiguous(reinterpret_cast<std::byte*>(out.data()), {4}, 4));
  EXPECT_EQ(out[2], 7.0f);

  set_default_file_store_options(FileStoreOptions{.follow_symlinks = false});
  std::string message;
  try {
    read_all(array_path());
  } catch (const Error& e) {
    message = e.what();
  }
  set_default_file_store_options(FileStoreOptions{});
  expect_mentions(message, {"chunk '1'", "follow_symlinks is off"});
  fs::remove_all(outside);
}

}  // namespace
}  // namespace chute
