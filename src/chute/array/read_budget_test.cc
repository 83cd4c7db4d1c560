// The window-priority rule of plans sharing one ReadPlan::Budget, on its own (no loader): a
// plan submits whole work items while they fit in the window, an item larger than the window
// goes alone, and a plan started later takes no place while an earlier one has reads left to
// submit. A store that holds every read until the test releases it makes each step countable;
// nothing is timed.

#include <gtest/gtest.h>

#include <deque>
#include <functional>
#include <mutex>

#include "chute/array/array.h"
#include "chute/array/array_test_support.h"
#include "chute/array/read_plan.h"
#include "chute/store/memory_store.h"

namespace chute {
namespace {

using namespace chute::testing;

/// Holds every submitted read until release(n) completes the n held longest (in the order they
/// were submitted, on the releasing thread).
class HeldReadsStore final : public Store {
 public:
  explicit HeldReadsStore(StorePtr inner) : inner_(std::move(inner)) {}
  std::optional<uint64_t> size(std::string_view key) const override { return inner_->size(key); }
  bool read(std::string_view key, ByteBuffer& out) const override { return inner_->read(key, out); }
  bool read_range(std::string_view key, uint64_t offset, std::span<std::byte> out) const override {
    return inner_->read_range(key, offset, out);
  }
  void submit(std::span<const ReadRequest> requests, const ReadCallback& done) const override {
    std::lock_guard lock(mutex_);
    for (size_t i = 0; i < requests.size(); ++i) {
      const ReadRequest request = requests[i];
      held_.push_back([this, request, done, i] { done(i, read_blocking(*inner_, request)); });
    }
  }
  int preferred_concurrency() const override { return 64; }
  std::vector<std::string> list(std::string_view prefix) const override {
    return inner_->list(prefix);
  }
  std::string describe() const override { return "held"; }

  size_t held() const {
    std::lock_guard lock(mutex_);
    return held_.size();
  }
  /// Completes the `n` reads held longest; completing one may submit more (held in turn).
  void release(size_t n) {
    for (size_t k = 0; k < n; ++k) {
      std::function<void()> read;
      {
        std::lock_guard lock(mutex_);
        if (held_.empty()) return;
        read = std::move(held_.front());
        held_.pop_front();
      }
      read();
    }
  }
  void release_all() {
    while (held() != 0) release(held());
  }

 private:
  StorePtr inner_;
  mutable std::mutex mutex_;
  mutable std::deque<std::function<void()>> held_;
};

StridedView budget_test_view(std::vector<float>& buffer, Coords shape) {
  return StridedView::contiguous(reinterpret_cast<std::byte*>(buffer.data()), std::move(shape),
                                 sizeof(float));
}

/// W1's shape of work: per sample, one gather group of 8 channel chunks (inputs) and one of 4
/// (targets), as a batch plan of `samples` samples from `first` on.
struct BudgetTestBatch {
  std::vector<std::vector<float>> inputs, targets;
  ReadPlan plan;
  std::vector<ReadScratch> scratch;

  BudgetTestBatch(const Array& in, const Array& out, int64_t first, int64_t samples) {
    for (int64_t s = first; s < first + samples; ++s) {
      inputs.emplace_back(4 * 8);
      targets.emplace_back(4 * 4);
      plan.add(in, Coords{s, 0, 0}, budget_test_view(inputs.back(), {1, 4, 8}));
      plan.add(out, Coords{s, 0, 0}, budget_test_view(targets.back(), {1, 4, 4}));
    }
  }
};

class ReadBudget : public ::testing::Test {
 protected:
  void SetUp() override {
    auto memory = std::make_shared<MemoryStore>();
    in_meta_ = make_metadata<float>({8, 4, 8}, {1, 4, 1});
    out_meta_ = make_metadata<float>({8, 4, 4}, {1, 4, 1});
    write_chunks<float>(*memory, "in", in_meta_);
    write_chunks<float>(*memory, "out", out_meta_);
    store_ = std::make_shared<HeldReadsStore>(memory);
    in_ = std::make_unique<Array>(store_, "in", in_meta_, "in");
    out_ = std::make_unique<Array>(store_, "out", out_meta_, "out");
  }
  void expect_exact(const BudgetTestBatch& batch, int64_t first) {
    for (size_t k = 0; k < batch.inputs.size(); ++k) {
      const int64_t s = first + static_cast<int64_t>(k);
      EXPECT_TRUE(
          same_elements(expected_box<float>(Coords{s, 0, 0}, Coords{1, 4, 8}, Coords{1, 4, 1}, 0.f),
                        batch.inputs[k]));
      EXPECT_TRUE(
          same_elements(expected_box<float>(Coords{s, 0, 0}, Coords{1, 4, 4}, Coords{1, 4, 1}, 0.f),
                        batch.targets[k]));
    }
  }

  ArrayMetadata in_meta_, out_meta_;
  std::shared_ptr<HeldReadsStore> store_;
  std::unique_ptr<Array> in_, out_;
};

TEST_F(ReadBudget, WholeItemsTheEarlierPlanFirst) {
  BudgetTestBatch k(*in_, *out_, 0, 4), next(*in_, *out_, 4, 4);
  ASSERT_EQ(k.plan.work_item_count(), 8u);  // 8, 4, 8, 4, ... reads
  ASSERT_EQ(k.plan.gathered_task_count(), 48u);
  auto budget = std::make_shared<ReadPlan::Budget>();
  k.plan.start(nullptr, k.scratch, nullptr, 16, budget);
  next.plan.start(nullptr, next.scratch, nullptr, 16, budget);
  // 8 + 4 fit in 16, the next 8 does not; the later plan takes none of the 4 left.
  EXPECT_EQ(k.plan.reads_submitted(), 12u);
  EXPECT_EQ(next.plan.reads_submitted(), 0u);
  EXPECT_EQ(store_->held(), 12u);
  // 3 places free: still no room for a group of 8, and none go to the later plan.
  store_->release(3);
  EXPECT_EQ(k.plan.reads_submitted(), 12u);
  EXPECT_EQ(next.plan.reads_submitted(), 0u);
  // 8 free: the group goes out whole.
  store_->release(1);
  EXPECT_EQ(k.plan.reads_submitted(), 20u);
  EXPECT_EQ(store_->held(), 16u);
  // The earlier plan's reads go out in groups as places free, never beyond the window.
  size_t released = 4;
  while (k.plan.reads_submitted() < 48u) {
    EXPECT_EQ(next.plan.reads_submitted(), 0u) << released << " released";
    store_->release(1);
    ++released;
    EXPECT_LE(store_->held(), 16u);
  }
  // Its last group submitted, the later plan takes places as they free, within the window.
  EXPECT_LE(store_->held(), 16u);
  while (next.plan.reads_submitted() == 0u) store_->release(1);
  EXPECT_LE(store_->held(), 16u);
  // The earlier plan's 48 chunks are read, not decoded: the later plan holds at most the 16
  // more that 4 windows allow (kReadsHeldPerWindow) in whole items (8 + 4) ...
  store_->release_all();
  EXPECT_EQ(k.plan.reads_submitted(), 48u);
  EXPECT_EQ(next.plan.reads_submitted(), 12u);
  // ... and reads the rest as the earlier plan's chunks are decoded.
  k.plan.finish(nullptr, k.scratch, nullptr);
  store_->release_all();
  EXPECT_EQ(next.plan.reads_submitted(), 48u);
  next.plan.finish(nullptr, next.scratch, nullptr);
  expect_exact(k, 0);
  expect_exact(next, 4);
}

TEST_F(ReadBudget, TheLaterPlanFillsThePlacesTheEarlierOneLeftOver) {
  // A window of 64 holds all 48 reads of the first batch: the second one takes whole items in
  // the 16 places left (8 + 4), then one item per 8 or 4 places that free up.
  BudgetTestBatch k(*in_, *out_, 0, 4), next(*in_, *out_, 4, 4);
  auto budget = std::make_shared<ReadPlan::Budget>();
  k.plan.start(nullptr, k.scratch, nullptr, 64, budget);
  next.plan.start(nullptr, next.scratch, nullptr, 64, budget);
  EXPECT_EQ(k.plan.reads_submitted(), 48u);
  EXPECT_EQ(next.plan.reads_submitted(), 12u);
  EXPECT_EQ(store_->held(), 60u);
  store_->release(4);  // 8 free: the next group of 8
  EXPECT_EQ(next.plan.reads_submitted(), 20u);
  EXPECT_EQ(store_->held(), 64u);
  store_->release_all();
  k.plan.finish(nullptr, k.scratch, nullptr);
  next.plan.finish(nullptr, next.scratch, nullptr);
  expect_exact(k, 0);
  expect_exact(next, 4);
}

TEST_F(ReadBudget, AnItemLargerThanTheWindowGoesAlone) {
  BudgetTestBatch k(*in_, *out_, 0, 2);
  auto budget = std::make_shared<ReadPlan::Budget>();
  k.plan.start(nullptr, k.scratch, nullptr, 6, budget);
  EXPECT_EQ(k.plan.reads_submitted(), 8u);  // a group of 8 in a window of 6: alone
  EXPECT_EQ(store_->held(), 8u);
  store_->release(5);
  EXPECT_EQ(k.plan.reads_submitted(), 8u);  // 3 in flight: no room for 4 in 6
  store_->release(1);
  EXPECT_EQ(k.plan.reads_submitted(), 12u);  // 2 + 4
  store_->release(5);
  EXPECT_EQ(k.plan.reads_submitted(), 12u);  // the next 8 waits until nothing is in flight
  store_->release(1);
  EXPECT_EQ(k.plan.reads_submitted(), 20u);
  EXPECT_EQ(store_->held(), 8u);
  store_->release_all();
  EXPECT_EQ(k.plan.reads_submitted(), 24u);
  k.plan.finish(nullptr, k.scratch, nullptr);
  expect_exact(k, 0);
}

TEST_F(ReadBudget, PlansSharingABudgetUseTheWindowOfTheFirst) {
  BudgetTestBatch k(*in_, *out_, 0, 2), next(*in_, *out_, 2, 2);
  auto budget = std::make_shared<ReadPlan::Budget>();
  k.plan.start(nullptr, k.scratch, nullptr, 12, budget);
  next.plan.start(nullptr, next.scratch, nullptr, 64, budget);  // 12 all the same
  EXPECT_EQ(k.plan.reads_submitted(), 12u);
  store_->release(4);
  EXPECT_EQ(k.plan.reads_submitted(), 12u);  // 8 + 4 in flight, 4 free: no room for 8
  store_->release(4);
  EXPECT_EQ(k.plan.reads_submitted(), 20u);  // 4 + 8 = 12
  EXPECT_EQ(next.plan.reads_submitted(), 0u);
  EXPECT_EQ(store_->held(), 12u);
  store_->release_all();
  k.plan.finish(nullptr, k.scratch, nullptr);
  next.plan.finish(nullptr, next.scratch, nullptr);
  expect_exact(k, 0);
  expect_exact(next, 2);
}

}  // namespace
}  // namespace chute
