// LoaderOptions checked field by field by validate() and the Loader constructor: one row per
// field and bad value, each error naming the field and value; then what depends on the dataset.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "chute/pipeline/loader.h"
#include "chute/util/error.h"
#include "chute/util/error_test_util.h"
#include "chute/util/thread_pool.h"

namespace chute {
namespace {

// A dataset of `n` one-byte samples that never reads anything.
class CountingDataset final : public Dataset {
 public:
  explicit CountingDataset(int64_t n)
      : n_(n), outputs_{{"x", DataType{DTypeKind::kUInt, 1}, {1}}} {}
  int64_t num_samples() const override { return n_; }
  const std::vector<OutputSpec>& outputs() const override { return outputs_; }
  void plan(int64_t, int64_t, const BatchMemory&, ReadPlan&) const override {}
  std::string describe() const override { return "counting"; }

 private:
  int64_t n_;
  std::vector<OutputSpec> outputs_;
};

struct Row {
  std::string what;  // the message must hold this
  std::function<void(LoaderOptions&)> mutate;
};

std::vector<Row> bad_rows() {
  const std::string over = std::to_string(max_reader_threads() + 1);
  return {
      {"batch_size = 0 is outside [1, ", [](LoaderOptions& o) { o.batch_size = 0; }},
      {"batch_size = -4", [](LoaderOptions& o) { o.batch_size = -4; }},
      {"world_size = 0", [](LoaderOptions& o) { o.world_size = 0; }},
      {"rank = -1 is outside [0, ", [](LoaderOptions& o) { o.rank = -1; }},
      {"rank = 2 is outside [0, 1] (world_size = 2)",
       [](LoaderOptions& o) {
         o.world_size = 2;
         o.rank = 2;
       }},
      {"prefetch = 0 is outside [1, 4096]", [](LoaderOptions& o) { o.prefetch = 0; }},
      {"prefetch = 5000", [](LoaderOptions& o) { o.prefetch = 5000; }},
      {"prefetch = 18446744073709551615",  // -1 through a size_t
       [](LoaderOptions& o) { o.prefetch = static_cast<size_t>(-1); }},
      {"io_concurrency = 65537 is outside [1, 65536]",
       [](LoaderOptions& o) { o.io_concurrency = 65537; }},
      {"threads = " + over, [](LoaderOptions& o) { o.threads = max_reader_threads() + 1; }},
      {"threads = 18446744073709551615",
       [](LoaderOptions& o) { o.threads = static_cast<size_t>(-1); }},
      {"timeout = -1", [](LoaderOptions& o) { o.timeout_s = -1; }},
      {"timeout = nan",
       [](LoaderOptions& o) { o.timeout_s = std::numeric_limits<double>::quiet_NaN(); }},
      {"timeout = inf",
       [](LoaderOptions& o) { o.timeout_s = std::numeric_limits<double>::infinity(); }},
      {"shuffle_block = -1", [](LoaderOptions& o) { o.shuffle_block = -1; }},
      {"shuffle_window = 0", [](LoaderOptions& o) { o.shuffle_window = 0; }},
  };
}

using chute::testing::message_of;

TEST(LoaderOptionsAudit, DefaultsAndEdgesAreValid) {
  LoaderOptions o;
  EXPECT_NO_THROW(validate(o));
  o.prefetch = 4096;
  o.io_concurrency = 65536;
  o.threads = max_reader_threads();
  o.timeout_s = 1e9;
  o.world_size = 3;
  o.rank = 2;
  EXPECT_NO_THROW(validate(o));
}

TEST(LoaderOptionsAudit, EveryBadFieldIsNamedWithItsValue) {
  auto dataset = std::make_shared<CountingDataset>(64);
  for (const Row& row : bad_rows()) {
    SCOPED_TRACE(row.what);
    LoaderOptions o;
    o.batch_size = 4;
    row.mutate(o);
    const std::string message = message_of([&] { validate(o); });
    EXPECT_NE(message.find(row.what), std::string::npos) << message;
    EXPECT_EQ(message_of([&] { Loader(dataset, o); }), message);
  }
}

TEST(LoaderOptionsAudit, AShuffleLargerThanMemoryIsRefusedUpFront) {
  // 2^60 samples: the permutation alone would be 8 EiB, a bad_alloc at the first batch before.
  auto huge = std::make_shared<CountingDataset>(int64_t{1} << 60);
  LoaderOptions o;
  o.batch_size = 4;
  const std::string message = message_of([&] { Loader(huge, o); });
  EXPECT_NE(message.find("shuffle = true over the dataset's 1152921504606846976 samples"),
            std::string::npos)
      << message;
  o.shuffle = false;  // in order: no permutation, so the same dataset is fine
  Loader loader(huge, o);
  loader.begin_epoch();
  auto batch = loader.next();
  ASSERT_TRUE(batch.has_value());
  EXPECT_EQ(batch->indices.front(), 0);
}

}  // namespace
}  // namespace chute
