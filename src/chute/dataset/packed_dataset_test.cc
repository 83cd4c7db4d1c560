// W1 packed samples: validation of the arrays, and assembled batches equal to direct reads of
// each index (and to the generating formula), including duplicate samples in one batch.

#include "chute/dataset/packed_dataset.h"

#include <gtest/gtest.h>

#include "chute/pipeline/batch_assembler.h"
#include "chute/pipeline/loader_test_support.h"
#include "chute/util/error.h"

namespace chute {
namespace {

using namespace chute::loader_testing;

TEST(PackedDataset, DescribesOutputs) {
  PackedFixture f(9);
  PackedDataset dataset({{"inputs", f.inputs}, {"targets", f.targets}});
  EXPECT_EQ(dataset.num_samples(), 9);
  ASSERT_EQ(dataset.outputs().size(), 2u);
  EXPECT_EQ(dataset.outputs()[0].name, "inputs");
  EXPECT_EQ(dataset.outputs()[0].sample_shape, (std::vector<int64_t>{3, 4, 5}));
  EXPECT_EQ(dataset.outputs()[1].sample_nbytes(), 3 * 4 * 2 * 4);
  EXPECT_NE(dataset.describe().find("targets"), std::string::npos);
}

TEST(PackedDataset, RejectsArraysOfDifferentLengths) {
  auto store = std::make_shared<MemoryStore>();
  auto a = make_float_array(store, "a", {5, 2}, {1, 2}, 1);
  auto b = make_float_array(store, "b", {6, 2}, {1, 2}, 2);
  try {
    PackedDataset dataset({{"x", a}, {"y", b}});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    const std::string message = e.what();
    EXPECT_NE(message.find("'x'"), std::string::npos) << message;
    EXPECT_NE(message.find("'y'"), std::string::npos) << message;
    EXPECT_NE(message.find("6"), std::string::npos) << message;
  }
  EXPECT_THROW(PackedDataset({}), Error);
  EXPECT_THROW(PackedDataset({{"x", a}, {"x", a}}), Error);
}

TEST(PackedDataset, BatchEqualsDirectReads) {
  PackedFixture f(12);
  auto dataset = std::make_shared<PackedDataset>(
      std::vector<std::pair<std::string, ArrayPtr>>{{"inputs", f.inputs}, {"targets", f.targets}});
  const std::vector<int64_t> samples = {7, 0, 11, 7, 3};
  for (size_t threads : {1, 3}) {
    BatchAssembler assembler(dataset, 5, threads);
    std::vector<std::byte> buffer(assembler.layout().total_bytes);
    ReadStats stats;
    assembler.assemble(samples, buffer.data(), &stats);
    EXPECT_EQ(stats.chunks.load(), 4 * 3 + 4);  // sample 7 is read once; inputs has 3 chunks
    for (size_t k = 0; k < 2; ++k) {
      const Array& array = k == 0 ? *f.inputs : *f.targets;
      const int64_t c = k == 0 ? 5 : 2;
      const auto* values =
          reinterpret_cast<const float*>(buffer.data() + assembler.layout().offsets[k]);
      for (size_t slot = 0; slot < samples.size(); ++slot) {
        auto expected = read_floats(array, {samples[slot], 0, 0, 0}, {1, 3, 4, c});
        ASSERT_EQ(
            0, std::memcmp(expected.data(), values + slot * expected.size(), expected.size() * 4))
            << "output " << k << " slot " << slot;
        const int64_t index[4] = {samples[slot], 2, 3, c - 1};
        EXPECT_EQ(values[slot * expected.size() + expected.size() - 1],
                  value_at(k == 0 ? 1 : 2, index));
      }
    }
  }
}

}  // namespace
}  // namespace chute
