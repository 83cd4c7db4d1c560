// The node-local cache: hits and misses, the size limit, damaged entries, several writers.
#include "chute/store/caching_store.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "chute/store/counting_store.h"
#include "chute/store/memory_store.h"
#include "chute/util/error.h"

namespace chute {
namespace {

namespace fs = std::filesystem;

std::string text_of(std::span<const std::byte> bytes) {
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

std::string value_for(int i, size_t length = 1000) {
  std::string value(length, '\0');
  for (size_t j = 0; j < length; ++j) value[j] = static_cast<char>('a' + (i * 7 + j) % 26);
  return value;
}

class CachingStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    static int counter = 0;
    dir_ = fs::temp_directory_path() /
           ("chute_cache_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(dir_);
    memory_ = std::make_shared<MemoryStore>();
    for (int i = 0; i < 40; ++i) memory_->set("c/" + std::to_string(i), value_for(i));
    counting_ = std::make_shared<CountingStore>(memory_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::shared_ptr<CachingStore> cache(uint64_t max_bytes = uint64_t{1} << 30) {
    return std::make_shared<CachingStore>(counting_, CacheOptions{dir_.string(), max_bytes});
  }
  uint64_t inner_reads() const { return counting_->reads() + counting_->range_reads(); }
  size_t files_named(std::string_view prefix) const {
    size_t n = 0;
    for (const auto& item : fs::directory_iterator(dir_)) {
      n += item.path().filename().string().starts_with(prefix);
    }
    return n;
  }

  fs::path dir_;
  std::shared_ptr<MemoryStore> memory_;
  std::shared_ptr<CountingStore> counting_;
};

TEST_F(CachingStoreTest, SecondReadIsServedFromTheFolder) {
  auto store = cache();
  ByteBuffer out;
  ASSERT_TRUE(store->read("c/1", out));
  EXPECT_EQ(text_of(out.span()), value_for(1));
  ASSERT_TRUE(store->read("c/1", out));
  EXPECT_EQ(text_of(out.span()), value_for(1));
  EXPECT_EQ(inner_reads(), 1u);
  // A new instance on the same folder (another process, the next epoch) hits too.
  auto again = cache();
  ASSERT_TRUE(again->read("c/1", out));
  EXPECT_EQ(text_of(out.span()), value_for(1));
  EXPECT_EQ(inner_reads(), 1u);
  EXPECT_EQ(store->stats().hits, 1u);
  EXPECT_EQ(store->stats().misses, 1u);
  EXPECT_EQ(again->stats().bytes_from_cache, 1000u);
  EXPECT_EQ(store->size("c/1"), 1000u);
  EXPECT_FALSE(store->read("missing", out));
}

TEST_F(CachingStoreTest, RangesOfSmallValuesFetchTheWholeValue) {
  auto store = cache();
  std::string part(10, '\0');
  auto span = std::as_writable_bytes(std::span(part.data(), part.size()));
  ASSERT_TRUE(store->read_range("c/2", 5, span));
  EXPECT_EQ(part, value_for(2).substr(5, 10));
  EXPECT_EQ(counting_->reads(), 1u);                 // the whole value, once
  ASSERT_TRUE(store->read_range("c/2", 600, span));  // another range of it: a hit
  EXPECT_EQ(part, value_for(2).substr(600, 10));
  ByteBuffer a, b;
  std::vector<ReadRequest> requests = {{"c/3", ByteRange::at(990, 10), {}, &a},
                                       {"c/3", ByteRange::at(0, 4), {}, &b}};
  auto outcomes = store->read_all(requests);
  ASSERT_EQ(outcomes[0].status, ReadStatus::kOk);
  ASSERT_EQ(outcomes[1].status, ReadStatus::kOk);
  EXPECT_EQ(text_of(a.span()), value_for(3).substr(990, 10));
  EXPECT_EQ(text_of(b.span()), value_for(3).substr(0, 4));
  counting_->reset();
  ASSERT_TRUE(store->read_range("c/3", 500, span));
  EXPECT_EQ(inner_reads(), 0u);
  EXPECT_EQ(counting_->range_reads(), 0u);
}

TEST_F(CachingStoreTest, RangesOfLargeValuesAreCachedByKeyOffsetAndLength) {
  // Values above 16 MiB (shards) are cached by range, not fetched whole.
  const size_t large = (size_t{16} << 20) + 1000;
  for (int i : {2, 3}) memory_->set("c/" + std::to_string(i), value_for(i, large));
  auto store = cache();
  std::string part(10, '\0');
  auto span = std::as_writable_bytes(std::span(part.data(), part.size()));
  ASSERT_TRUE(store->read_range("c/2", 5, span));
  EXPECT_EQ(part, value_for(2, 100).substr(5, 10));
  ASSERT_TRUE(store->read_range("c/2", 5, span));
  EXPECT_EQ(counting_->range_reads(), 1u);
  EXPECT_EQ(counting_->reads(), 0u);
  // Another range of the same key is another entry.
  ASSERT_TRUE(store->read_range("c/2", 6, span));
  EXPECT_EQ(part, value_for(2, 100).substr(6, 10));
  EXPECT_EQ(counting_->range_reads(), 2u);
  // A range of a value cached whole is cut from it.
  ByteBuffer whole;
  ASSERT_TRUE(store->read("c/3", whole));
  ASSERT_TRUE(store->read_range("c/3", 100, span));
  EXPECT_EQ(part, value_for(3, 200).substr(100, 10));
  EXPECT_EQ(counting_->range_reads(), 2u);
}

TEST_F(CachingStoreTest, SubmitServesHitsAndForwardsMisses) {
  auto store = cache();
  ByteBuffer warm;
  ASSERT_TRUE(store->read("c/4", warm));
  ByteBuffer a, b, c;
  std::string into(8, '\0');
  std::vector<ReadRequest> requests = {
      {"c/4", ByteRange::whole(), {}, &a},
      {"c/5", ByteRange::last(20), {}, &b},
      {"nope", ByteRange::whole(), {}, &c},
      {"c/6", ByteRange::at(3, 8), std::as_writable_bytes(std::span(into.data(), 8)), nullptr}};
  for (int pass = 0; pass < 2; ++pass) {
    auto outcomes = store->read_all(requests);
    ASSERT_EQ(outcomes[0].status, ReadStatus::kOk);
    EXPECT_EQ(text_of(a.span()), value_for(4));
    ASSERT_EQ(outcomes[1].status, ReadStatus::kOk);
    EXPECT_EQ(text_of(b.span()), value_for(5).substr(980));
    EXPECT_EQ(outcomes[2].status, ReadStatus::kMissing);
    ASSERT_EQ(outcomes[3].status, ReadStatus::kOk);
    EXPECT_EQ(into, value_for(6).substr(3, 8));
  }
  // Pass 1 fetched c/5 (a suffix: size + range), the missing key and c/6; pass 2 only the
  // missing key again (absence is not cached).
  EXPECT_EQ(store->stats().hits, 1u + 3u);
  EXPECT_EQ(store->stats().misses, 1u + 3u + 1u);
}

TEST_F(CachingStoreTest, SubmittedMissesReachTheInnerStoreAsOneBatch) {
  // Hits are looked up on the I/O threads; the batch's misses are forwarded together, so the
  // inner store (HttpStore coalescing ranges) still sees one batch.
  auto store = cache();
  ByteBuffer warm;
  for (int i = 0; i < 20; i += 2) ASSERT_TRUE(store->read("c/" + std::to_string(i), warm));
  counting_->reset();
  std::vector<ByteBuffer> buffers(20);
  std::vector<ReadRequest> requests;
  for (int i = 0; i < 20; ++i) {
    requests.push_back({"c/" + std::to_string(i), ByteRange::whole(), {}, &buffers[i]});
  }
  const auto outcomes = store->read_all(requests);
  for (int i = 0; i < 20; ++i) {
    ASSERT_EQ(outcomes[i].status, ReadStatus::kOk) << i;
    EXPECT_EQ(text_of(buffers[i].span()), value_for(i)) << i;
  }
  EXPECT_EQ(counting_->submits(), 1u);
  EXPECT_EQ(counting_->largest_batch(), 10u);
  EXPECT_EQ(counting_->reads(), 10u);
  EXPECT_EQ(store->stats().hits, 10u);
  EXPECT_EQ(store->stats().misses, 20u);  // 10 warming reads, 10 in the batch
}

TEST_F(CachingStoreTest, SizeLimitEvictsLeastRecentlyUsed) {
  // Each entry is 1000 bytes plus a header of about 50: the limit holds about 10 of them.
  const uint64_t limit = 10'500;
  auto store = cache(limit);
  ByteBuffer out;
  for (int i = 0; i < 30; ++i) {
    ASSERT_TRUE(store->read("c/" + std::to_string(i), out));
    EXPECT_LE(store->folder_bytes(), limit);
  }
  EXPECT_GT(store->stats().evicted, 0u);
  counting_->reset();
  ASSERT_TRUE(store->read("c/29", out));  // the newest entry survived
  EXPECT_EQ(inner_reads(), 0u);
  ASSERT_TRUE(store->read("c/0", out));  // the oldest was evicted
  EXPECT_EQ(inner_reads(), 1u);
  EXPECT_EQ(text_of(out.span()), value_for(0));
}

TEST_F(CachingStoreTest, DamagedEntriesAreDiscardedAndRefetched) {
  auto store = cache();
  ByteBuffer out;
  ASSERT_TRUE(store->read("c/7", out));
  const std::string path = store->entry_path("c/7", ByteRange::whole());
  auto refetched = [&] {
    counting_->reset();
    ByteBuffer again;
    EXPECT_TRUE(store->read("c/7", again));
    EXPECT_EQ(text_of(again.span()), value_for(7));
    return inner_reads() == 1;
  };
  {  // one payload byte flipped
    std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(-3, std::ios::end);
    file.put('#');
  }
  EXPECT_TRUE(refetched());
  fs::resize_file(path, fs::file_size(path) - 1);  // truncated
  EXPECT_TRUE(refetched());
  fs::resize_file(path, 10);  // shorter than a header
  EXPECT_TRUE(refetched());
  {  // a header whose payload length disagrees with the file's size
    std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(16);
    const uint64_t bogus = 1001;
    file.write(reinterpret_cast<const char*>(&bogus), sizeof bogus);
  }
  EXPECT_TRUE(refetched());
  // A symlink or a FIFO at the entry's name is never followed or opened for reading.
  fs::remove(path);
  fs::create_symlink(store->entry_path("c/8", ByteRange::whole()), path);
  ASSERT_TRUE(store->read("c/8", out));
  EXPECT_TRUE(refetched());
  fs::remove(path);
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  EXPECT_TRUE(refetched());
  EXPECT_GE(store->stats().discarded, 5u);
  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(path)));
  EXPECT_FALSE(refetched());  // and it is a good entry again
}

TEST_F(CachingStoreTest, HitsReadThroughEntryFilesKeptOpen) {
  auto store = cache();
  ByteBuffer out;
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(store->read("c/" + std::to_string(i), out));  // misses
  EXPECT_EQ(store->entry_files_opened(), 0u);  // written entries are not opened
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 10; ++i) {
      ASSERT_TRUE(store->read("c/" + std::to_string(i), out));
      EXPECT_EQ(text_of(out.span()), value_for(i));
    }
  }
  EXPECT_EQ(store->stats().hits, 30u);
  EXPECT_EQ(store->entry_files_opened(), 10u);  // once each: later hits reuse the descriptor
  EXPECT_EQ(inner_reads(), 10u);
}

TEST_F(CachingStoreTest, AnEntryReplacedByAnotherProcessIsReadFromItsNewFile) {
  auto store = cache();
  ByteBuffer out;
  ASSERT_TRUE(store->read("c/3", out));
  ASSERT_TRUE(store->read("c/3", out));  // a hit: its descriptor is kept
  const std::string path = store->entry_path("c/3", ByteRange::whole());
  // Another rank writes an entry for the same identity with other bytes (the object changed)
  // and renames it into place: a valid entry on a new inode.
  const fs::path other_dir = dir_.string() + "_other";
  fs::remove_all(other_dir);
  auto other_memory = std::make_shared<MemoryStore>();
  other_memory->set("c/3", value_for(99));
  auto other = std::make_shared<CachingStore>(std::make_shared<CountingStore>(other_memory),
                                              CacheOptions{other_dir.string(), uint64_t{1} << 30});
  ASSERT_TRUE(other->read("c/3", out));
  fs::rename(other->entry_path("c/3", ByteRange::whole()), path);
  ASSERT_TRUE(store->read("c/3", out));
  EXPECT_EQ(text_of(out.span()), value_for(99));  // the file at the path, not the kept inode
  EXPECT_EQ(store->entry_files_opened(), 2u);
  // Removed by another rank's eviction: a miss, fetched again from the inner store.
  fs::remove(path);
  counting_->reset();
  ASSERT_TRUE(store->read("c/3", out));
  EXPECT_EQ(text_of(out.span()), value_for(3));
  EXPECT_EQ(inner_reads(), 1u);
  fs::remove_all(other_dir);
}

// Descriptors this process holds on files removed from `dir` (their space is not freed).
size_t deleted_files_held(const fs::path& dir) {
  size_t n = 0;
  for (const auto& item : fs::directory_iterator("/proc/self/fd")) {
    std::error_code error;
    const std::string target = fs::read_symlink(item.path(), error).string();
    n += !error && target.starts_with(dir.string()) && target.ends_with(" (deleted)");
  }
  return n;
}

TEST_F(CachingStoreTest, EvictedEntriesAreNotHeldOpen) {
  auto store = cache(12'000);  // room for about ten entries of 1000 bytes
  ByteBuffer out;
  for (int i = 0; i < 40; ++i) {
    const std::string key = "c/" + std::to_string(i);
    ASSERT_TRUE(store->read(key, out));
    ASSERT_TRUE(store->read(key, out));  // a hit keeps the entry's descriptor
  }
  EXPECT_GT(store->stats().evicted, 20u);
  EXPECT_EQ(deleted_files_held(dir_), 0u);
}

TEST_F(CachingStoreTest, ConcurrentWritersShareTheFolder) {
  // Threads with their own CachingStore on one folder stand for the ranks of a node.
  constexpr int kThreads = 8;
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto store = cache();
      ByteBuffer out;
      std::string part(16, '\0');
      for (int round = 0; round < 3; ++round) {
        for (int k = 0; k < 40; ++k) {
          const int i = (k * 13 + t * 5) % 40;
          if (!store->read("c/" + std::to_string(i), out) || text_of(out.span()) != value_for(i)) {
            ++wrong;
          }
          auto span = std::as_writable_bytes(std::span(part.data(), part.size()));
          if (!store->read_range("c/" + std::to_string(i), 7, span) ||
              part != value_for(i).substr(7, 16)) {
            ++wrong;
          }
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(files_named(".tmp-"), 0u);
  // Every entry left in the folder is whole: a fresh cache serves all of them.
  counting_->reset();
  auto check = cache();
  ByteBuffer out;
  for (int i = 0; i < 40; ++i) ASSERT_TRUE(check->read("c/" + std::to_string(i), out));
  EXPECT_EQ(inner_reads(), 0u);
  EXPECT_EQ(check->stats().discarded, 0u);
}

TEST_F(CachingStoreTest, TempFilesOfKilledWritersAreRemovedOnOpen) {
  auto store = cache();
  ByteBuffer out;
  ASSERT_TRUE(store->read("c/9", out));
  // A writer killed mid-entry leaves its temp file: a pid that cannot exist (above pid_max),
  // and one of this live process that must be left alone.
  const fs::path dead = dir_ / ".tmp-99999999-0-00000000000000aa";
  const fs::path live = dir_ / (".tmp-" + std::to_string(::getpid()) + "-77-00000000000000bb");
  std::ofstream(dead) << "half an entry";
  std::ofstream(live) << "being written";
  auto reopened = cache();
  EXPECT_FALSE(fs::exists(dead));
  EXPECT_TRUE(fs::exists(live));
  counting_->reset();
  ASSERT_TRUE(reopened->read("c/9", out));
  EXPECT_EQ(inner_reads(), 0u);
  EXPECT_EQ(text_of(out.span()), value_for(9));
}

TEST_F(CachingStoreTest, EntriesOfDifferentStoresDoNotMix) {
  auto other = std::make_shared<MemoryStore>();
  other->set("c/1", "another store's value");
  auto first = cache();
  // Same folder, same key, another inner store (describe() differs only through a wrapper).
  struct Renamed final : Store {
    StorePtr inner;
    explicit Renamed(StorePtr s) : inner(std::move(s)) {}
    std::optional<uint64_t> size(std::string_view k) const override { return inner->size(k); }
    bool read(std::string_view k, ByteBuffer& o) const override { return inner->read(k, o); }
    bool read_range(std::string_view k, uint64_t off, std::span<std::byte> o) const override {
      return inner->read_range(k, off, o);
    }
    std::vector<std::string> list(std::string_view p) const override { return inner->list(p); }
    std::string describe() const override { return "other"; }
  };
  auto second =
      std::make_shared<CachingStore>(std::make_shared<Renamed>(other), CacheOptions{dir_.string()});
  ByteBuffer a, b;
  ASSERT_TRUE(first->read("c/1", a));
  ASSERT_TRUE(second->read("c/1", b));
  EXPECT_EQ(text_of(a.span()), value_for(1));
  EXPECT_EQ(text_of(b.span()), "another store's value");
}

TEST_F(CachingStoreTest, MetadataIsAlwaysReadFromTheInnerStore) {
  memory_->set("a/zarr.json", "{}");
  memory_->set("b/.zarray", "{}");
  auto store = cache();
  ByteBuffer out;
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(store->read("a/zarr.json", out));
    ASSERT_TRUE(store->read("b/.zarray", out));
  }
  EXPECT_EQ(inner_reads(), 4u);
  EXPECT_EQ(store->stats().misses + store->stats().hits, 0u);
  EXPECT_EQ(files_named(""), 0u);
}

TEST(CachingStoreOptions, BadFolderIsAClearError) {
  auto memory = std::make_shared<MemoryStore>();
  EXPECT_THROW(CachingStore(memory, CacheOptions{"/proc/self/nope/cache"}), Error);
  EXPECT_THROW(CachingStore(memory, CacheOptions{"/tmp", 0}), Error);
  EXPECT_EQ(with_cache(memory, CacheOptions{}), memory);
}

}  // namespace
}  // namespace chute
