// One conformance suite that every store passes, plus store-specific cases.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <thread>

#include "chute/store/counting_store.h"
#include "chute/store/file_store.h"
#include "chute/store/io_executor.h"
#include "chute/store/latency_store.h"
#include "chute/store/memory_store.h"
#include "chute/store/single_file_store.h"
#include "chute/util/error.h"

namespace chute {
namespace {

namespace fs = std::filesystem;

std::string as_string(const ByteBuffer& buffer) {
  return std::string(reinterpret_cast<const char*>(buffer.data()), buffer.size());
}

// Builds a store holding {"a": "hello world", "dir/b": "xyz", "dir/sub/c": ""}.
using StoreFactory = std::function<StorePtr()>;

StorePtr make_memory_store() {
  auto store = std::make_shared<MemoryStore>();
  store->set("a", "hello world");
  store->set("dir/b", "xyz");
  store->set("dir/sub/c", "");
  return store;
}

StorePtr make_file_store() {
  static int counter = 0;
  fs::path root = fs::temp_directory_path() / ("chute_store_test_" + std::to_string(::getpid()) +
                                               "_" + std::to_string(counter++));
  fs::create_directories(root / "dir" / "sub");
  std::ofstream(root / "a") << "hello world";
  std::ofstream(root / "dir" / "b") << "xyz";
  std::ofstream(root / "dir" / "sub" / "c");
  return std::make_shared<FileStore>(root.string());
}

StorePtr make_counting_store() { return std::make_shared<CountingStore>(make_memory_store()); }

// Files read through the I/O executor, counted on the way.
StorePtr make_counting_file_store() { return std::make_shared<CountingStore>(make_file_store()); }

StorePtr make_latency_store() {
  return std::make_shared<LatencyStore>(make_file_store(), std::chrono::milliseconds(1));
}

class StoreConformance : public ::testing::TestWithParam<StoreFactory> {};

TEST_P(StoreConformance, ReadsWholeValues) {
  StorePtr store = GetParam()();
  ByteBuffer buffer;
  ASSERT_TRUE(store->read("a", buffer));
  EXPECT_EQ(as_string(buffer), "hello world");
  ASSERT_TRUE(store->read("dir/b", buffer));
  EXPECT_EQ(as_string(buffer), "xyz");
  ASSERT_TRUE(store->read("dir/sub/c", buffer));
  EXPECT_EQ(buffer.size(), 0u);
}

TEST_P(StoreConformance, MissingKeyIsNotAnError) {
  StorePtr store = GetParam()();
  ByteBuffer buffer;
  EXPECT_FALSE(store->read("nope", buffer));
  EXPECT_FALSE(store->read("dir/nope/deeper", buffer));
  EXPECT_FALSE(store->size("nope").has_value());
  std::byte out[2];
  EXPECT_FALSE(store->read_range("nope", 0, out));
}

TEST_P(StoreConformance, SizeOfValues) {
  StorePtr store = GetParam()();
  EXPECT_EQ(store->size("a"), 11u);
  EXPECT_EQ(store->size("dir/sub/c"), 0u);
}

TEST_P(StoreConformance, ReadsByteRanges) {
  StorePtr store = GetParam()();
  std::byte out[5];
  ASSERT_TRUE(store->read_range("a", 6, out));
  EXPECT_EQ(std::memcmp(out, "world", 5), 0);
  ASSERT_TRUE(store->read_range("a", 0, std::span<std::byte>(out, 0)));
}

TEST_P(StoreConformance, RangePastTheEndIsCorruptData) {
  StorePtr store = GetParam()();
  std::byte out[8];
  try {
    store->read_range("a", 6, out);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kCorruptData);
    EXPECT_NE(std::string(e.what()).find("expected 8 bytes at offset 6"), std::string::npos)
        << e.what();
  }
}

TEST_P(StoreConformance, ListsDirectChildren) {
  StorePtr store = GetParam()();
  EXPECT_EQ(store->list(""), (std::vector<std::string>{"a", "dir"}));
  EXPECT_EQ(store->list("dir"), (std::vector<std::string>{"b", "sub"}));
  EXPECT_TRUE(store->list("nope").empty());
}

TEST_P(StoreConformance, BatchedRequestsServeEveryKindOfRange) {
  StorePtr store = GetParam()();
  ByteBuffer whole, suffix, longer_suffix, tail, missing;
  std::byte exact[5];
  std::vector<ReadRequest> requests = {
      {"a", ByteRange::whole(), {}, &whole},
      {"a", ByteRange::at(6, 5), exact, nullptr},
      {"a", ByteRange::last(3), {}, &suffix},
      {"dir/b", ByteRange::last(10), {}, &longer_suffix},
      {"a", ByteRange{2, std::nullopt, false}, {}, &tail},
      {"nope", ByteRange::whole(), {}, &missing},
  };
  std::vector<ReadOutcome> outcomes = store->read_all(requests);
  ASSERT_EQ(outcomes.size(), requests.size());
  for (size_t i = 0; i + 1 < outcomes.size(); ++i) {
    ASSERT_TRUE(check_outcome(outcomes[i])) << "request " << i;
  }
  EXPECT_EQ(as_string(whole), "hello world");
  EXPECT_EQ(std::memcmp(exact, "world", 5), 0);
  EXPECT_EQ(as_string(suffix), "rld");
  EXPECT_EQ(as_string(longer_suffix), "xyz");
  EXPECT_EQ(as_string(tail), "llo world");
  EXPECT_EQ(outcomes[4].nbytes, 9u);
  EXPECT_EQ(outcomes.back().status, ReadStatus::kMissing);
  EXPECT_FALSE(check_outcome(outcomes.back()));
}

TEST_P(StoreConformance, BatchedRangePastTheEndFailsWithoutThrowing) {
  StorePtr store = GetParam()();
  std::byte out[8];
  std::vector<ReadRequest> requests = {{"a", ByteRange::at(6, 8), out, nullptr}};
  std::vector<ReadOutcome> outcomes = store->read_all(requests);
  ASSERT_EQ(outcomes[0].status, ReadStatus::kFailed);
  try {
    check_outcome(outcomes[0]);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kCorruptData);
    EXPECT_FALSE(is_transient(e.code()));
  }
}

INSTANTIATE_TEST_SUITE_P(AllStores, StoreConformance,
                         ::testing::Values(make_memory_store, make_file_store, make_counting_store,
                                           make_counting_file_store, make_latency_store));

std::string temp_path(const std::string& name) {
  return (fs::temp_directory_path() / (name + "_" + std::to_string(::getpid()))).string();
}

TEST(StoreSubmit, FileStoreKeepsABatchInFlightOnItsExecutor) {
  // 64 reads on an executor of 4 threads: every read comes back exact, at most 4 threads
  // were started, and the callbacks ran on them (not all on the caller's thread).
  auto executor = std::make_shared<IoExecutor>(4);
  const fs::path root = temp_path("chute_submit");
  fs::create_directories(root);
  for (int i = 0; i < 64; ++i) std::ofstream(root / std::to_string(i)) << "value " << i;
  FileStore store(root.string(), FileStoreOptions{}, executor);
  std::vector<ByteBuffer> buffers(64);
  std::vector<ReadRequest> requests;
  for (int i = 0; i < 64; ++i) {
    requests.push_back({std::to_string(i), ByteRange::whole(), {}, &buffers[i]});
  }
  std::vector<ReadOutcome> outcomes = store.read_all(requests);
  for (int i = 0; i < 64; ++i) {
    ASSERT_TRUE(check_outcome(outcomes[i]));
    EXPECT_EQ(as_string(buffers[i]), "value " + std::to_string(i));
  }
  EXPECT_GE(executor->threads(), 1u);
  EXPECT_LE(executor->threads(), 4u);
  EXPECT_EQ(store.preferred_concurrency(), FileStore::kPreferredConcurrency);
  fs::remove_all(root);
}

TEST(StoreSubmit, FileStoreReadsRangesOfOneFileTogether) {
  // Ranges of one file into caller buffers (a chunk's touched rows) are served as one group;
  // each still has its own outcome: exact bytes, a short read, a missing file.
  const fs::path root = temp_path("chute_ranges");
  fs::create_directories(root);
  std::string text;
  for (int i = 0; i < 100; ++i) text += static_cast<char>('a' + i % 26);
  std::ofstream(root / "a") << text;
  FileStore store(root.string());
  std::vector<std::array<std::byte, 10>> into(6);
  std::vector<ReadRequest> requests;
  for (uint64_t offset : {0, 30, 95, 50}) {
    requests.push_back({"a", ByteRange::at(offset, 10), into[requests.size()], nullptr});
  }
  requests.push_back({"gone", ByteRange::at(0, 10), into[4], nullptr});
  requests.push_back({"gone", ByteRange::at(10, 10), into[5], nullptr});
  const std::vector<ReadOutcome> outcomes = store.read_all(requests);
  for (size_t k : {0, 1, 3}) {
    ASSERT_TRUE(check_outcome(outcomes[k])) << k;
    const uint64_t offset = requests[k].range.offset;
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(into[k].data()), 10),
              text.substr(offset, 10));
  }
  EXPECT_EQ(outcomes[2].status, ReadStatus::kFailed);  // the file ends 5 bytes into it
  EXPECT_THROW(check_outcome(outcomes[2]), Error);
  EXPECT_EQ(outcomes[4].status, ReadStatus::kMissing);
  EXPECT_EQ(outcomes[5].status, ReadStatus::kMissing);
  fs::remove_all(root);
}

TEST(StoreSubmit, ExecutorRunsAtMostItsBoundAtOnce) {
  IoExecutor executor(3);
  std::mutex mutex;
  std::condition_variable all_done;
  int running = 0, most = 0, done = 0;
  for (int i = 0; i < 30; ++i) {
    executor.run([&] {
      {
        std::lock_guard lock(mutex);
        most = std::max(most, ++running);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      std::lock_guard lock(mutex);
      --running;
      if (++done == 30) all_done.notify_all();
    });
  }
  std::unique_lock lock(mutex);
  all_done.wait(lock, [&] { return done == 30; });
  EXPECT_LE(most, 3);
  EXPECT_LE(executor.threads(), 3u);
}

TEST(StoreSubmit, SingleFileStoreServesRangesOfItsFile) {
  const std::string path = temp_path("chute_single_submit");
  std::ofstream(path) << "0123456789abcdef";
  SingleFileStore store(path);
  ByteBuffer suffix;
  std::byte middle[4];
  std::byte past[4];
  std::vector<ReadRequest> requests = {{"", ByteRange::at(4, 4), middle, nullptr},
                                       {"", ByteRange::last(3), {}, &suffix},
                                       {"", ByteRange::at(14, 4), past, nullptr}};
  std::vector<ReadOutcome> outcomes = store.read_all(requests);
  ASSERT_TRUE(check_outcome(outcomes[0]));
  EXPECT_EQ(std::memcmp(middle, "4567", 4), 0);
  ASSERT_TRUE(check_outcome(outcomes[1]));
  EXPECT_EQ(as_string(suffix), "def");
  EXPECT_EQ(outcomes[2].status, ReadStatus::kFailed);
  fs::remove(path);
}

TEST(StoreLatency, SubmittedReadsOverlapBlockingReadsDoNot) {
  LatencyStore store(make_memory_store(), std::chrono::milliseconds(5));
  std::vector<ByteBuffer> buffers(16);
  std::vector<ReadRequest> requests;
  for (auto& buffer : buffers) requests.push_back({"a", ByteRange::whole(), {}, &buffer});
  std::vector<ReadOutcome> outcomes = store.read_all(requests);
  for (size_t i = 0; i < buffers.size(); ++i) {
    ASSERT_TRUE(check_outcome(outcomes[i]));
    EXPECT_EQ(as_string(buffers[i]), "hello world");
  }
  EXPECT_EQ(store.reads(), 16);
  EXPECT_EQ(store.max_in_flight(), 16);  // all submitted before the first could complete
  EXPECT_EQ(store.in_flight(), 0);
  store.reset_counts();
  ByteBuffer buffer;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(store.read("a", buffer));
  EXPECT_EQ(store.reads(), 3);
  EXPECT_EQ(store.max_in_flight(), 1);
}

TEST(StoreCounting, CountsRequestsBytesAndKeys) {
  auto counting = std::make_shared<CountingStore>(make_memory_store(), /*log_keys=*/true);
  ByteBuffer buffer;
  counting->read("a", buffer);
  counting->read("nope", buffer);
  std::byte out[3];
  counting->read_range("dir/b", 0, out);
  EXPECT_EQ(counting->reads(), 2u);
  EXPECT_EQ(counting->range_reads(), 1u);
  EXPECT_EQ(counting->bytes_read(), 14u);
  EXPECT_EQ(counting->logged_keys(), (std::vector<std::string>{"a", "nope", "dir/b"}));
  counting->reset();
  EXPECT_EQ(counting->reads(), 0u);
  EXPECT_TRUE(counting->logged_keys().empty());
}

TEST(StoreFile, UnreadableFileIsPermissionDenied) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads files whatever their mode";
  auto store = std::dynamic_pointer_cast<const FileStore>(make_file_store());
  std::string path = store->root() + "/a";
  ::chmod(path.c_str(), 0);
  ByteBuffer buffer;
  try {
    store->read("a", buffer);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kPermissionDenied);
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos);
  }
}

// What the store finds at a key that is not a regular file: an error naming the path and what
// is there, at once (a FIFO opened for reading without O_NONBLOCK waits for a writer forever).
void expect_not_regular(const std::function<void()>& call, const std::string& path,
                        const std::string& kind) {
  try {
    call();
    FAIL() << "expected an error for " << path;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIoError);
    EXPECT_NE(std::string(e.what()).find("'" + path + "' is " + kind), std::string::npos)
        << e.what();
  }
}

TEST(StoreFile, DirectoryAtAKeyIsAnError) {
  auto store = std::dynamic_pointer_cast<const FileStore>(make_file_store());
  ByteBuffer buffer;
  std::byte out[1];
  const std::string path = store->root() + "/dir";
  expect_not_regular([&] { store->read("dir", buffer); }, path, "a directory");
  expect_not_regular([&] { store->size("dir"); }, path, "a directory");
  expect_not_regular([&] { store->read_range("dir", 0, out); }, path, "a directory");
}

TEST(StoreFile, FifoAtAKeyIsAnErrorNotAHang) {
  auto store = std::dynamic_pointer_cast<const FileStore>(make_file_store());
  const std::string path = store->root() + "/fifo";
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0) << std::strerror(errno);
  ByteBuffer buffer;
  std::byte out[1];
  expect_not_regular([&] { store->read("fifo", buffer); }, path, "a FIFO");
  expect_not_regular([&] { store->size("fifo"); }, path, "a FIFO");
  expect_not_regular([&] { store->read_range("fifo", 0, out); }, path, "a FIFO");
  // Listing names it without opening it; a key below it is simply missing.
  EXPECT_EQ(store->list(""), (std::vector<std::string>{"a", "dir", "fifo"}));
  EXPECT_TRUE(store->list("fifo").empty());
  EXPECT_FALSE(store->read("fifo/zarr.json", buffer));
}

TEST(StoreFile, DeviceAtAKeyIsAnError) {
  FileStore store("/dev");
  ByteBuffer buffer;
  expect_not_regular([&] { store.read("zero", buffer); }, "/dev/zero", "a character device");
}

TEST(StoreFile, NulInAKeyIsAnError) {
  StorePtr store = make_file_store();
  ByteBuffer buffer;
  try {
    store->read(std::string_view("a\0b", 3), buffer);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("NUL"), std::string::npos) << e.what();
  }
}

TEST(StoreFile, SymlinksFollowedByDefaultRefusedWhenConfined) {
  auto store = std::dynamic_pointer_cast<const FileStore>(make_file_store());
  const fs::path root = store->root();
  const fs::path outside = root.string() + "_outside";
  fs::create_directories(outside);
  std::ofstream(outside / "secret") << "outside";
  fs::create_symlink(outside / "secret", root / "link");
  fs::create_directory_symlink(outside, root / "linkdir");

  ByteBuffer buffer;
  ASSERT_TRUE(store->read("link", buffer));
  EXPECT_EQ(as_string(buffer), "outside");
  ASSERT_TRUE(store->read("linkdir/secret", buffer));

  FileStore confined(root.string(), FileStoreOptions{.follow_symlinks = false});
  for (std::string key : {"link", "linkdir/secret"}) {
    try {
      confined.read(key, buffer);
      FAIL() << "expected an error for " << key;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kPermissionDenied);
      EXPECT_NE(std::string(e.what()).find("follow_symlinks is off"), std::string::npos)
          << e.what();
    }
  }
  EXPECT_THROW(confined.size("link"), Error);
  // Plain files still read, and a missing key is still missing.
  ASSERT_TRUE(confined.read("dir/b", buffer));
  EXPECT_EQ(as_string(buffer), "xyz");
  EXPECT_FALSE(confined.read("nope", buffer));
  fs::remove_all(outside);
}

TEST(StoreKeys, JoinKey) {
  EXPECT_EQ(join_key("", "a"), "a");
  EXPECT_EQ(join_key("g", ""), "g");
  EXPECT_EQ(join_key("g/", "a"), "g/a");
  EXPECT_EQ(join_key("g", "c/0/1"), "g/c/0/1");
}

}  // namespace
}  // namespace chute
