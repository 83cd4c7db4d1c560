// FileStore keeps files open between reads (OpenFileCache): reads stay exact, a file read
// again is not opened again, a file replaced by a rename or removed is noticed, symlinks keep
// the store's own rules, and the descriptors kept stay under the process's limit.

#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "chute/store/file_store.h"
#include "chute/util/error.h"

namespace chute {
namespace {

namespace fs = std::filesystem;

fs::path fresh_folder(const std::string& name) {
  static int counter = 0;
  fs::path root =
      fs::temp_directory_path() / ("chute_open_files_" + name + "_" + std::to_string(::getpid()) +
                                   "_" + std::to_string(counter++));
  fs::remove_all(root);
  fs::create_directories(root);
  return root;
}

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// Writes `text` beside `path` and renames it over `path` (a new inode at the same name).
void replace_file(const fs::path& path, const std::string& text) {
  const fs::path temporary = path.string() + ".tmp";
  write_file(temporary, text);
  fs::rename(temporary, path);
}

std::string read_text(const Store& store, const std::string& key) {
  ByteBuffer buffer;
  if (!store.read(key, buffer)) return "<missing>";
  return std::string(reinterpret_cast<const char*>(buffer.data()), buffer.size());
}

std::string content_of(int i) { return "file " + std::to_string(i) + std::string(i * 37, 'x'); }

size_t open_descriptors() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

TEST(FileStoreOpenFiles, ReadsAreExactAndAFileReadAgainIsNotOpenedAgain) {
  const fs::path root = fresh_folder("exact");
  constexpr int kFiles = 20;
  for (int i = 0; i < kFiles; ++i) write_file(root / ("c" + std::to_string(i)), content_of(i));
  FileStore store(root.string());
  for (int pass = 0; pass < 3; ++pass) {
    for (int i = 0; i < kFiles; ++i) {
      const std::string key = "c" + std::to_string(i);
      const std::string expected = content_of(i);
      EXPECT_EQ(read_text(store, key), expected);
      std::string part(4, '\0');
      ASSERT_TRUE(store.read_range(key, 1, std::as_writable_bytes(std::span(part))));
      EXPECT_EQ(part, expected.substr(1, 4));
      EXPECT_EQ(store.size(key), expected.size());
    }
    // A batch of ranges of one file (one task) and whole reads, through the executor.
    std::vector<std::string> parts(3, std::string(3, '\0'));
    std::vector<ByteBuffer> wholes(2);
    std::vector<ReadRequest> requests;
    for (int j = 0; j < 3; ++j) {
      requests.push_back(
          {"c19", ByteRange::at(j * 5, 3), std::as_writable_bytes(std::span(parts[j])), nullptr});
    }
    requests.push_back({"c3", ByteRange::whole(), {}, &wholes[0]});
    requests.push_back({"c4", ByteRange::whole(), {}, &wholes[1]});
    for (const ReadOutcome& outcome : store.read_all(requests)) {
      EXPECT_EQ(outcome.status, ReadStatus::kOk);
    }
    for (int j = 0; j < 3; ++j) EXPECT_EQ(parts[j], content_of(19).substr(j * 5, 3));
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(wholes[0].data()), wholes[0].size()),
              content_of(3));
    EXPECT_EQ(store.files_opened(), uint64_t{kFiles}) << "pass " << pass;
  }
  EXPECT_EQ(store.kept_open_files(), size_t{kFiles});
  EXPECT_EQ(read_text(store, "nope"), "<missing>");
  fs::remove_all(root);
}

TEST(FileStoreOpenFiles, AFileReplacedByARenameOrRemovedIsNoticed) {
  const fs::path root = fresh_folder("replaced");
  write_file(root / "a", "first");
  for (bool follow : {true, false}) {
    SCOPED_TRACE(follow ? "follow_symlinks" : "confined");
    FileStore store(root.string(), FileStoreOptions{.follow_symlinks = follow});
    write_file(root / "a", "first");  // written in place: the same inode
    EXPECT_EQ(read_text(store, "a"), "first");
    replace_file(root / "a", "second, longer");
    EXPECT_EQ(read_text(store, "a"), "second, longer");
    EXPECT_EQ(store.size("a"), 14u);
    EXPECT_EQ(store.files_opened(), 2u);
    fs::remove(root / "a");
    EXPECT_EQ(read_text(store, "a"), "<missing>");
    EXPECT_EQ(store.size("a"), std::nullopt);
    write_file(root / "a", "third");
    EXPECT_EQ(read_text(store, "a"), "third");
  }
  fs::remove_all(root);
}

// A dataset's symlinks inside its folder (an .npy linked where DALI expects it) are read, and
// a replaced target is noticed through the link; a confined store refuses a file that became a
// symlink even though it kept the file's descriptor.
TEST(FileStoreOpenFiles, SymlinksKeepTheStoresRules) {
  const fs::path root = fresh_folder("links");
  fs::create_directories(root / "data");
  write_file(root / "data" / "x.npy", "target one");
  fs::create_symlink("data/x.npy", root / "link.npy");
  FileStore store(root.string());
  EXPECT_EQ(read_text(store, "link.npy"), "target one");
  EXPECT_EQ(read_text(store, "link.npy"), "target one");
  EXPECT_EQ(store.files_opened(), 1u);
  replace_file(root / "data" / "x.npy", "target two");
  EXPECT_EQ(read_text(store, "link.npy"), "target two");

  FileStore confined(root.string(), FileStoreOptions{.follow_symlinks = false});
  write_file(root / "plain", "plain");
  EXPECT_EQ(read_text(confined, "plain"), "plain");
  EXPECT_THROW(read_text(confined, "link.npy"), Error);
  // "plain" becomes a symlink by a rename over it: the kept descriptor must not be used.
  fs::create_symlink("data/x.npy", root / "plain.tmp");
  fs::rename(root / "plain.tmp", root / "plain");
  try {
    read_text(confined, "plain");
    FAIL() << "a symlink read by a confined store";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kPermissionDenied);
    EXPECT_NE(std::string(e.what()).find("follow_symlinks is off"), std::string::npos) << e.what();
  }
  EXPECT_EQ(read_text(store, "plain"), "target two");  // the default store follows it
  fs::remove_all(root);
}

TEST(FileStoreOpenFiles, KeepsNoMoreDescriptorsThanTheLimitAllows) {
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &saved), 0);
  const size_t before = open_descriptors();
  rlimit lowered = saved;
  lowered.rlim_cur = std::min<rlim_t>(saved.rlim_cur, before + 256);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &lowered), 0);
  const size_t allowed = lowered.rlim_cur / 4;  // default_open_file_capacity()
  const fs::path root = fresh_folder("limit");
  const int files = static_cast<int>(allowed) * 3;
  for (int i = 0; i < files; ++i) write_file(root / std::to_string(i), content_of(i % 50));
  {
    FileStore store(root.string());
    for (int pass = 0; pass < 2; ++pass) {
      for (int i = 0; i < files; ++i) {
        ASSERT_EQ(read_text(store, std::to_string(i)), content_of(i % 50)) << i;
      }
    }
    EXPECT_LE(store.kept_open_files(), allowed);
    EXPECT_GT(store.kept_open_files(), 0u);
    EXPECT_LE(open_descriptors(), before + allowed);
  }
  EXPECT_EQ(open_descriptors(), before);  // the store closed what it kept
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &saved), 0);
  fs::remove_all(root);
}

TEST(FileStoreOpenFiles, ChuteOpenFilesBoundsWhatAStoreKeeps) {
  const fs::path root = fresh_folder("env");
  for (int i = 0; i < 4; ++i) write_file(root / std::to_string(i), content_of(i));
  ::setenv("CHUTE_OPEN_FILES", "0", 1);
  {
    FileStore store(root.string());  // nothing kept: every read opens its file
    for (int pass = 0; pass < 2; ++pass) {
      for (int i = 0; i < 4; ++i) EXPECT_EQ(read_text(store, std::to_string(i)), content_of(i));
    }
    EXPECT_EQ(store.kept_open_files(), 0u);
  }
  ::setenv("CHUTE_OPEN_FILES", "2", 1);
  {
    FileStore store(root.string());
    for (int i = 0; i < 4; ++i) EXPECT_EQ(read_text(store, std::to_string(i)), content_of(i));
    EXPECT_EQ(store.kept_open_files(), 2u);
  }
  ::setenv("CHUTE_OPEN_FILES", "many", 1);
  try {
    FileStore store(root.string());
    FAIL() << "a bad CHUTE_OPEN_FILES was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("CHUTE_OPEN_FILES='many'"), std::string::npos);
  }
  ::unsetenv("CHUTE_OPEN_FILES");
  fs::remove_all(root);
}

}  // namespace
}  // namespace chute
