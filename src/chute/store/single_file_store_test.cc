// A mapped file truncated after it was opened: reads raise kCorruptData naming it, instead of
// the process dying of SIGBUS (issues 11 and 15).

#include "chute/store/single_file_store.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "chute/util/error.h"

namespace chute {
namespace {

namespace fs = std::filesystem;

class MappedFile : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = fs::temp_directory_path() /
            ("chute_mapped_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::ofstream out(path_, std::ios::binary);
    for (size_t i = 0; i < kBytes; ++i) out.put(static_cast<char>(i % 251));
  }
  void TearDown() override { fs::remove(path_); }

  static constexpr size_t kBytes = 5 * 4096 + 123;
  fs::path path_;
};

// Copies the whole mapping through read_mapped; returns the error's message ("" if none).
std::string copy_all(const SingleFileStore& file, std::vector<std::byte>& out) {
  try {
    file.read_mapped([&] { std::memcpy(out.data(), file.mapping(), out.size()); });
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kCorruptData);
    return error.what();
  }
  return "";
}

TEST_F(MappedFile, ReadsWhileTheFileIsWhole) {
  SingleFileStore file(path_.string());
  std::vector<std::byte> out(kBytes);
  EXPECT_EQ(copy_all(file, out), "");
  EXPECT_EQ(out[4096 * 3 + 7], std::byte{(4096 * 3 + 7) % 251});
}

TEST_F(MappedFile, TruncatedToZeroIsAnErrorNotSigbus) {
  SingleFileStore file(path_.string());
  std::vector<std::byte> out(kBytes);
  ASSERT_EQ(copy_all(file, out), "");
  fs::resize_file(path_, 0);
  const std::string message = copy_all(file, out);
  EXPECT_NE(message.find(path_.string()), std::string::npos) << message;
  EXPECT_NE(message.find("truncated after it was opened"), std::string::npos) << message;
  EXPECT_NE(message.find("now 0"), std::string::npos) << message;
  // Restoring the size does not make the zero pages the file's content: still an error.
  fs::resize_file(path_, kBytes);
  EXPECT_NE(copy_all(file, out), "");
}

TEST_F(MappedFile, TruncatedInsideTheLastPageIsAnError) {
  SingleFileStore file(path_.string());
  std::vector<std::byte> out(kBytes);
  fs::resize_file(path_, kBytes - 50);  // no fault: the rest of the page reads as zeros
  // The size is checked on a thread's first copy and every 64th after: a fresh thread's first
  // copy must find the cut (this test's own thread may have copied in earlier tests).
  std::string message;
  std::thread reader([&] { message = copy_all(file, out); });
  reader.join();
  EXPECT_NE(message.find("truncated after it was opened"), std::string::npos) << message;
}

TEST_F(MappedFile, OtherFilesKeepReading) {
  SingleFileStore cut(path_.string());
  const fs::path other_path = path_.string() + ".other";
  fs::copy_file(path_, other_path);
  SingleFileStore other(other_path.string());
  std::vector<std::byte> out(kBytes);
  fs::resize_file(path_, 4096);
  EXPECT_NE(copy_all(cut, out), "");
  EXPECT_EQ(copy_all(other, out), "");
  fs::remove(other_path);
}

}  // namespace
}  // namespace chute
