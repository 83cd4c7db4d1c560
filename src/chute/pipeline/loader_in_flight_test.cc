// The Loader's reads in flight (io_concurrency): batches are the same whatever the depth, a
// slow store gets many reads outstanding with a deep window and one per thread without, the
// option is validated and reported.

#include <gtest/gtest.h>

#include <chrono>

#include "chute/dataset/packed_dataset.h"
#include "chute/pipeline/loader.h"
#include "chute/pipeline/loader_test_support.h"
#include "chute/store/latency_store.h"
#include "chute/util/error.h"

namespace chute {
namespace {

using namespace chute::loader_testing;

/// The W1 fixture's arrays read through a store that answers each read after `delay`.
struct SlowPacked {
  PackedFixture fixture{24};
  std::shared_ptr<LatencyStore> slow;
  DatasetPtr dataset;
  explicit SlowPacked(std::chrono::milliseconds delay)
      : slow(std::make_shared<LatencyStore>(fixture.store, delay)) {
    auto reopen = [&](const ArrayPtr& a) {
      return std::make_shared<Array>(slow, a->name(), a->metadata(), a->name());
    };
    dataset = std::make_shared<PackedDataset>(std::vector<std::pair<std::string, ArrayPtr>>{
        {"inputs", reopen(fixture.inputs)}, {"targets", reopen(fixture.targets)}});
  }
};

LoaderOptions in_flight_options(size_t io_concurrency) {
  LoaderOptions o;
  o.batch_size = 4;
  o.threads = 2;
  o.prefetch = 2;
  o.seed = 7;
  o.io_concurrency = io_concurrency;
  return o;
}

std::vector<std::vector<std::byte>> epoch_bytes(Loader& loader) {
  std::vector<std::vector<std::byte>> out;
  for (const Batch& batch : loader) {
    for (const BatchArray& a : batch.arrays) out.emplace_back(a.data, a.data + a.nbytes());
  }
  return out;
}

TEST(LoaderInFlight, DeepWindowKeepsManyReadsOutstanding) {
  // 5 ms per read: 16 in flight against one per reader thread (2) with io_concurrency=1.
  SlowPacked slow(std::chrono::milliseconds(5));
  std::vector<std::vector<std::byte>> reference;
  int64_t max_in_flight[2] = {0, 0};
  const size_t depths[2] = {1, 16};
  for (int k = 0; k < 2; ++k) {
    slow.slow->reset_counts();
    Loader loader(slow.dataset, in_flight_options(depths[k]));
    std::vector<std::vector<std::byte>> bytes = epoch_bytes(loader);
    if (k == 0) {
      reference = bytes;
    } else {
      EXPECT_EQ(bytes, reference);  // the depth never changes what a batch holds
    }
    max_in_flight[k] = slow.slow->max_in_flight();
    const LoaderStats stats = loader.stats();
    EXPECT_EQ(stats.io_concurrency, static_cast<int64_t>(depths[k]));
    EXPECT_EQ(stats.prefetch, 2);
  }
  EXPECT_LE(max_in_flight[0], 2);  // one per thread
  // The window bounds the submitted reads; each sample's last input chunk, of which it needs
  // only a part, is read by a decoding thread (2) beside them.
  EXPECT_LE(max_in_flight[1], 16 + 2);
  // A batch of 4 samples submits 4 × 3 chunk reads before the first returns (and the next
  // batch's read-ahead fills the window).
  EXPECT_GE(max_in_flight[1], 8) << "io_concurrency=1 reached " << max_in_flight[0];
}

TEST(LoaderInFlight, DefaultIsTheStorePreference) {
  SlowPacked slow(std::chrono::milliseconds(0));
  Loader loader(slow.dataset, in_flight_options(0));
  for (const Batch& batch : loader) (void)batch;
  EXPECT_EQ(loader.stats().io_concurrency, slow.slow->preferred_concurrency());
}

TEST(LoaderInFlight, OptionIsValidated) {
  SlowPacked slow(std::chrono::milliseconds(0));
  LoaderOptions o = in_flight_options(65537);
  try {
    Loader loader(slow.dataset, o);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    const std::string message = e.what();
    EXPECT_NE(message.find("io_concurrency"), std::string::npos) << message;
    EXPECT_NE(message.find("65536"), std::string::npos) << message;
    EXPECT_NE(message.find("65537"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace chute
