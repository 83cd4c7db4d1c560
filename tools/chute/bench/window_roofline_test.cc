// The windows' roofline place step: it runs the dataset's own placement (CF decode, normalise,
// cast, interleave) on one batch, and the roofline counts it in its limit with the plain copy
// reported beside it. Structure only: no rate is compared with a threshold.

#include "chute/bench/window_roofline.h"

#include <gtest/gtest.h>

#include "chute/bench/report.h"
#include "chute/bench/roofline.h"
#include "chute/pipeline/batch_assembler.h"
#include "chute/pipeline/loader_test_support.h"
#include "chute/util/error.h"

namespace chute::bench {
namespace {

using namespace chute::loader_testing;

std::shared_ptr<WindowDataset> roofline_windows(bool channels_last, DataType dtype) {
  WindowOptions o;
  o.variables = {"z", "t2m"};
  o.input_offsets = {-1, 0};
  o.target_offsets = {1};
  o.mean_suffix = "_mean";
  o.std_suffix = "_std";
  o.channels_last = channels_last;
  o.output_dtype = dtype;
  return std::make_shared<WindowDataset>(small_weather::make_group(), o);
}

TEST(WindowRoofline, PlaceStepIsTheWindowPlacementOfABatch) {
  const std::vector<int64_t> batch = {3, 0, 2};
  for (bool channels_last : {true, false}) {
    for (DataType dtype : {kFloat32, DataType{DTypeKind::kBFloat, 2}}) {
      // float32 channels-first windows are read straight into the output: no placement step.
      if (!channels_last && dtype == kFloat32) continue;
      SCOPED_TRACE(::testing::Message()
                   << "channels_last " << channels_last << " dtype " << dtype.size);
      auto dataset = roofline_windows(channels_last, dtype);
      ASSERT_TRUE(dataset->staged());
      // What the loader places for the batch's first window.
      BatchAssembler assembler(dataset, 1, 1);
      std::vector<std::byte> assembled(assembler.layout().total_bytes);
      assembler.assemble(std::span<const int64_t>(batch).first(1), assembled.data());
      std::vector<std::byte> expected;  // its outputs, one after another (no layout padding)
      int64_t batch_output_bytes = 0;
      for (size_t k = 0; k < dataset->outputs().size(); ++k) {
        const int64_t n = dataset->outputs()[k].sample_nbytes();
        const std::byte* slot = assembled.data() + assembler.layout().offsets[k];
        expected.insert(expected.end(), slot, slot + n);
        batch_output_bytes += 3 * n;
      }

      for (size_t threads : {size_t{1}, size_t{2}}) {
        ThreadPool pool(threads);
        const WindowPlacement placed = measure_window_placement(*dataset, batch, pool, 2);
        EXPECT_EQ(placed.samples, 3);
        // Every window of the batch went through place_sample: a batch's output bytes.
        EXPECT_EQ(placed.output_bytes, batch_output_bytes);
        EXPECT_EQ(placed.decoded_bytes, 3 * dataset->decoded_bytes_per_sample());
        EXPECT_GT(placed.seconds, 0);
        EXPECT_DOUBLE_EQ(placed.gbps, placed.decoded_bytes / placed.seconds / 1e9);
        // The placement ran on the window's decoded planes: the loader's bytes exactly.
        EXPECT_EQ(placed.first_slot, expected);
      }
    }
  }
}

TEST(WindowRoofline, RooflineCountsThePlacementAndReportsTheCopy) {
  auto dataset = roofline_windows(true, DataType{DTypeKind::kBFloat, 2});
  const std::vector<int64_t> batch = {1, 4};
  ReadPlan plan;
  BatchMemory memory;
  memory.batch_size = 2;
  std::vector<std::vector<std::byte>> buffers;
  for (const auto* specs : {&dataset->outputs(), &dataset->staging()}) {
    for (const OutputSpec& spec : *specs) {
      buffers.emplace_back(static_cast<size_t>(spec.sample_nbytes() * 2));
      (specs == &dataset->outputs() ? memory.outputs : memory.staging)
          .push_back(buffers.back().data());
    }
  }
  for (size_t slot = 0; slot < batch.size(); ++slot) {
    dataset->plan(batch[slot], static_cast<int64_t>(slot), memory, plan);
  }
  const std::vector<ChunkRef> chunks = unique_chunks(plan.tasks());
  ASSERT_FALSE(chunks.empty());

  RooflineOptions options;
  options.threads = 2;
  options.usable_cores = 2;
  options.repeats = 1;
  int64_t placed_bytes = 0;
  size_t pool_size = 0;
  options.place_step = "window placement";
  options.place = [&](ThreadPool& pool, int repeats) {
    pool_size = pool.size();
    const WindowPlacement p = measure_window_placement(*dataset, batch, pool, repeats);
    placed_bytes = p.output_bytes;
    return p.gbps;
  };
  const RooflineResult r = measure_roofline(chunks, options);
  EXPECT_EQ(pool_size, 2u);  // the roofline's workers
  int64_t batch_output_bytes = 0;
  for (const OutputSpec& spec : dataset->outputs()) batch_output_bytes += 2 * spec.sample_nbytes();
  EXPECT_EQ(placed_bytes, batch_output_bytes);
  EXPECT_GT(r.place_gbps, 0);
  EXPECT_GT(r.place_copy_gbps, 0);
  EXPECT_EQ(r.place_step, "window placement");
  EXPECT_DOUBLE_EQ(r.combined_gbps, combined_limit({r.read_gbps, r.decode_gbps, r.place_gbps}));
  const nlohmann::json j = to_json(r);
  EXPECT_EQ(j["place_step"], "window placement");
  EXPECT_DOUBLE_EQ(j["place_copy_gbps"].get<double>(), r.place_copy_gbps);
  EXPECT_DOUBLE_EQ(j["place_gbps"].get<double>(), r.place_gbps);

  // Without a placement the place step is the copy, and both figures are the same one.
  RooflineOptions copy_only;
  copy_only.threads = 2;
  const RooflineResult copy = measure_roofline(chunks, copy_only);
  EXPECT_EQ(copy.place_step, "copy");
  EXPECT_DOUBLE_EQ(copy.place_gbps, copy.place_copy_gbps);
}

TEST(WindowRoofline, RefusesWindowsWithoutAPlacementStep) {
  WindowOptions o;
  o.variables = {"z", "t2m"};
  o.channels_last = false;  // float32 channels-first: read straight into the output
  auto direct = std::make_shared<WindowDataset>(small_weather::make_group(), o);
  ASSERT_FALSE(direct->staged());
  ThreadPool pool(1);
  const std::vector<int64_t> batch = {0};
  try {
    measure_window_placement(*direct, batch, pool, 1);
    ADD_FAILURE() << "expected kInvalidArgument";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
  }
  auto staged = roofline_windows(false, DataType{DTypeKind::kBFloat, 2});
  EXPECT_THROW(measure_window_placement(*staged, std::vector<int64_t>{}, pool, 1), Error);
}

}  // namespace
}  // namespace chute::bench
