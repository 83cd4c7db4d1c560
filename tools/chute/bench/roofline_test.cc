// The roofline's chunk selection and its combined limit: boxes map to the stored objects
// holding them, boxes outside the array are refused, and every probe measures something.

#include "chute/bench/roofline.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "chute/array/array_test_support.h"
#include "chute/store/file_store.h"
#include "chute/store/latency_store.h"
#include "chute/store/memory_store.h"
#include "chute/util/error.h"

namespace chute::bench {
namespace {

using namespace chute::testing;

std::vector<ChunkRef> chunks_in_box(const Array& array, const Coords& start, const Coords& shape) {
  return chunks_in_boxes(array, std::vector<Coords>{start}, std::vector<Coords>{shape});
}

TEST(Roofline, ChunksInBoxesAreTheDistinctStoredObjects) {
  auto store = std::make_shared<MemoryStore>();
  auto m = make_metadata<float>({10, 12}, {4, 5});
  write_chunks<float>(*store, "", m);
  Array array(store, "", m, "t2m");
  const auto keys_of = [](const std::vector<ChunkRef>& refs) {
    std::vector<std::string> keys;
    for (const ChunkRef& ref : refs) keys.push_back(ref.key);
    return keys;
  };
  // Rows 3-4, cols 4-5: four chunks.
  EXPECT_EQ(keys_of(chunks_in_box(array, Coords{3, 4}, Coords{2, 2})),
            (std::vector<std::string>{"c/0/0", "c/0/1", "c/1/0", "c/1/1"}));
  EXPECT_TRUE(chunks_in_box(array, Coords{10, 0}, Coords{0, 12}).empty());
  // A second box sharing chunk c/1/1 adds only its new one, in order of first appearance.
  EXPECT_EQ(keys_of(chunks_in_boxes(array, std::vector<Coords>{{3, 4}, {5, 9}},
                                    std::vector<Coords>{{2, 2}, {1, 2}})),
            (std::vector<std::string>{"c/0/0", "c/0/1", "c/1/0", "c/1/1", "c/1/2"}));
  for (auto [start, shape] : {std::pair<Coords, Coords>{{-1, 0}, {2, 2}}, {{9, 0}, {2, 2}}}) {
    try {
      chunks_in_box(array, start, shape);
      ADD_FAILURE() << "expected kOutOfRange";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kOutOfRange) << e.what();
      EXPECT_NE(std::string(e.what()).find("t2m"), std::string::npos) << e.what();
    }
  }
  try {
    chunks_in_boxes(array, std::vector<Coords>{{0, 0}}, std::vector<Coords>{});
    ADD_FAILURE() << "expected kInvalidArgument";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
  }
}

TEST(Roofline, MeasuresEveryStepOnPresentChunks) {
  auto store = std::make_shared<MemoryStore>();
  auto m = make_metadata<float>({64, 64}, {16, 64});
  write_chunks<float>(*store, "", m);
  Array array(store, "", m, "a");
  RooflineOptions options;
  options.threads = 2;
  options.usable_cores = 2;
  options.repeats = 1;
  const auto refs = chunks_in_box(array, Coords{0, 0}, Coords{64, 64});
  const RooflineResult r = measure_roofline(refs, options);
  EXPECT_EQ(r.chunks, 4u);
  EXPECT_EQ(r.decoded_bytes, 64 * 64 * 4);
  EXPECT_GT(r.read_gbps, 0);
  EXPECT_GT(r.decode_single_gbps, 0);
  EXPECT_GT(r.place_gbps, 0);
  // Reads from memory are copies on the decode threads' cores: the three times add up.
  EXPECT_FALSE(r.read_overlaps);
  EXPECT_DOUBLE_EQ(r.combined_gbps, combined_limit({r.read_gbps, r.decode_gbps, r.place_gbps}));
  EXPECT_LT(r.combined_gbps, r.decode_limit_gbps);
  EXPECT_GT(r.loop_decode_gbps, 0);
  EXPECT_GT(r.loop_gbps, 0);

  // Sweeps pass the decode rate they know: the decode probe and the loops are skipped.
  options.known_decode_single_gbps = r.decode_single_gbps;
  const RooflineResult again = measure_roofline(refs, options);
  EXPECT_DOUBLE_EQ(again.decode_single_gbps, r.decode_single_gbps);
  EXPECT_EQ(again.loop_gbps, 0);
  EXPECT_EQ(again.loop_decode_gbps, 0);
}

TEST(Roofline, ReadPassKeepsTheLoadersReadsInFlight) {
  auto memory = std::make_shared<MemoryStore>();
  auto m = make_metadata<float>({16, 64}, {1, 64});
  write_chunks<float>(*memory, "", m);
  // Blocking reads of a LatencyStore sleep 2 ms each and are counted while they run.
  auto slow = std::make_shared<LatencyStore>(memory, std::chrono::milliseconds(2), 24);
  Array array(slow, "", m, "a");
  const auto refs = chunks_in_box(array, Coords{0, 0}, Coords{16, 64});
  // As ReadPlan resolves io_concurrency: the option, else the store's preference; a window of
  // 1 is each decode thread reading its own chunks.
  EXPECT_EQ(reads_in_flight(refs, 2, 0), 24);
  EXPECT_EQ(reads_in_flight(refs, 2, 8), 8);
  EXPECT_EQ(reads_in_flight(refs, 3, 1), 3);
  Array in_memory(memory, "", m, "b");
  EXPECT_EQ(reads_in_flight(chunks_in_box(in_memory, Coords{0, 0}, Coords{16, 64}), 2, 0), 2);

  RooflineOptions options;
  options.threads = 1;
  options.usable_cores = 1;
  options.repeats = 1;
  options.known_decode_single_gbps = 1;  // only the read pass and placement run
  for (int in_flight : {0, 8}) {
    slow->reset_counts();
    options.reads_in_flight = in_flight;
    const RooflineResult r = measure_roofline(refs, options);
    EXPECT_EQ(r.reads_in_flight, in_flight == 0 ? 1 : in_flight);
    EXPECT_EQ(to_json(r)["reads_in_flight"], r.reads_in_flight);
    EXPECT_GT(r.read_gbps, 0);
    if (in_flight == 0) {
      EXPECT_EQ(slow->max_in_flight(), 1);  // one thread: one pread at a time
    } else {
      EXPECT_LE(slow->max_in_flight(), 8);
      EXPECT_GE(slow->max_in_flight(), 2);  // 16 reads of 2 ms on 8 readers overlap
    }
  }
}

TEST(Roofline, LoaderLimitAddsTheTimesOrTakesTheSlowerSide) {
  // Reads on the workers' cores: 1/(1/2 + 1/4 + 1/4) = 1.
  EXPECT_DOUBLE_EQ(loader_limit(2, {4, 4}, false), 1.0);
  // Reads in flight beside the workers: min(read, 1/(1/4 + 1/4)).
  EXPECT_DOUBLE_EQ(loader_limit(2, {4, 4}, true), 2.0);
  EXPECT_DOUBLE_EQ(loader_limit(1, {4, 4}, true), 1.0);
  EXPECT_DOUBLE_EQ(loader_limit(8, {4, 4}, true), 2.0);
  EXPECT_DOUBLE_EQ(loader_limit(3, {6}, false), 2.0);
  EXPECT_DOUBLE_EQ(loader_limit(2, {4, 4}, false), combined_limit({2, 4, 4}));
  // A step that measured nothing: no limit.
  for (bool overlap : {false, true}) {
    EXPECT_EQ(loader_limit(0, {4, 4}, overlap), 0.0);
    EXPECT_EQ(loader_limit(2, {4, 0}, overlap), 0.0);
  }
}

TEST(Roofline, ColdStorageReadsOverlapDecodingInTheLimit) {
  namespace fs = std::filesystem;
  const fs::path root =
      fs::temp_directory_path() / ("chute_roofline_cold_" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root);
  {
    // The chunks written in memory, then copied to files under `root`.
    auto memory = std::make_shared<MemoryStore>();
    auto m = make_metadata<float>({64, 64}, {16, 64});
    write_chunks<float>(*memory, "", m);
    Array in_memory(memory, "", m, "a");
    for (const ChunkRef& ref : chunks_in_box(in_memory, {0, 0}, {64, 64})) {
      ByteBuffer bytes;
      ASSERT_TRUE(memory->read(ref.key, bytes));
      const fs::path file = root / ref.key;
      fs::create_directories(file.parent_path());
      std::ofstream(file, std::ios::binary)
          .write(reinterpret_cast<const char*>(bytes.data()),
                 static_cast<std::streamsize>(bytes.size()));
    }
    auto store = std::make_shared<FileStore>(root.string());
    Array array(store, "", m, "a");
    RooflineOptions options;
    options.threads = 2;
    options.usable_cores = 2;
    options.repeats = 1;
    options.cold = true;
    const RooflineResult r = measure_roofline(chunks_in_box(array, {0, 0}, {64, 64}), options);
    ASSERT_TRUE(r.read_source.starts_with("storage")) << r.read_source;
    // Storage works while the workers decode and place: the slower side bounds the loader.
    EXPECT_TRUE(r.read_overlaps);
    EXPECT_DOUBLE_EQ(r.combined_gbps,
                     std::min(r.read_gbps, combined_limit({r.decode_gbps, r.place_gbps})));
    EXPECT_DOUBLE_EQ(r.decode_limit_gbps, std::min(r.read_gbps, r.decode_gbps));
    EXPECT_EQ(to_json(r)["read_overlaps"], true);
  }
  fs::remove_all(root);
}

}  // namespace
}  // namespace chute::bench
