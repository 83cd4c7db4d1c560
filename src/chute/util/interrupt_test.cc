// The interruption check: the flag a C++ program sets, the hook the Python bindings install, and
// the polls of long loops (a reference set's generators, member files opened on threads).

#include "chute/util/interrupt.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "chute/dataset/many_files.h"
#include "chute/store/reference_store.h"
#include "chute/util/error.h"

namespace chute {
namespace {

std::atomic<int> g_hook_calls{0};
std::atomic<int> g_hook_fires_at{0};  // the hook says "interrupted" from this call on (0: never)

bool counting_hook() {
  const int call = ++g_hook_calls;
  return g_hook_fires_at != 0 && call >= g_hook_fires_at;
}

class Interrupts : public ::testing::Test {
 protected:
  void SetUp() override {
    clear_interrupt();
    g_hook_calls = 0;
    g_hook_fires_at = 0;
  }
  void TearDown() override {
    set_interrupt_hook(nullptr);
    clear_interrupt();
  }
};

TEST_F(Interrupts, FlagSetByRequestThrowsUntilCleared) {
  EXPECT_FALSE(interrupt_pending());
  EXPECT_NO_THROW(check_interrupt());
  request_interrupt();
  EXPECT_TRUE(interrupt_pending());
  EXPECT_THROW(check_interrupt(), Interrupted);
  EXPECT_THROW(check_interrupt(), Interrupted);
  clear_interrupt();
  EXPECT_NO_THROW(check_interrupt());
}

TEST_F(Interrupts, HookIsAskedAndSetsTheFlagForOtherThreads) {
  set_interrupt_hook(&counting_hook);
  EXPECT_FALSE(interrupt_pending());
  EXPECT_EQ(g_hook_calls, 1);
  g_hook_fires_at = 2;
  EXPECT_THROW(check_interrupt(), Interrupted);
  // Pending now without asking the hook again, on any thread.
  bool seen_elsewhere = false;
  std::thread([&] { seen_elsewhere = interrupt_pending(); }).join();
  EXPECT_TRUE(seen_elsewhere);
  EXPECT_EQ(g_hook_calls, 2);
  set_interrupt_hook(nullptr);
  clear_interrupt();
  EXPECT_FALSE(interrupt_pending());
}

TEST_F(Interrupts, PollChecksEveryNthCall) {
  set_interrupt_hook(&counting_hook);
  InterruptPoll poll(1024);
  for (int i = 0; i < 1023; ++i) poll();
  EXPECT_EQ(g_hook_calls, 0);
  poll();
  EXPECT_EQ(g_hook_calls, 1);
  g_hook_fires_at = 2;
  for (int i = 0; i < 1023; ++i) poll();
  EXPECT_THROW(poll(), Interrupted);
}

TEST_F(Interrupts, ReferenceGeneratorExpansionStops) {
  // 2^32 generated references over two small dimensions: never finished without the poll.
  const std::string refs =
      R"({"version": 1, "refs": {".zgroup": "{\"zarr_format\": 2}"}, "gen": [{"key": )"
      R"("a/{{i}}.{{j}}", "url": "f{{i}}.bin", "dimensions": {"i": {"stop": 65536}, )"
      R"("j": {"stop": 65536}}}]})";
  g_hook_fires_at = 50;
  set_interrupt_hook(&counting_hook);
  EXPECT_THROW(parse_json_references(refs, "refs.json"), Interrupted);
  EXPECT_EQ(g_hook_calls, 50);  // stopped at the first poll after the hook fired
}

TEST_F(Interrupts, LargeReferenceDocumentParseStops) {
  // Over 16 MiB of references: parsed with a poll every 1024 JSON events, about 2,500 polls,
  // while listing them afterwards polls about 450 times; the hook fires only on its 1000th call.
  std::string refs = R"({"version": 1, "refs": {".zgroup": "{\"zarr_format\": 2}")";
  for (int i = 0; refs.size() < (size_t{17} << 20); ++i) {
    refs += ", \"x/" + std::to_string(i) + R"(.0": ["data.bin", 0, 4096])";
  }
  refs += "}}";
  g_hook_fires_at = 1000;
  set_interrupt_hook(&counting_hook);
  EXPECT_THROW(parse_json_references(refs, "refs.json"), Interrupted);
  EXPECT_EQ(g_hook_calls, 1000);
}

TEST_F(Interrupts, ManyFilesOpenStopsBeforeOpeningMembers) {
  std::vector<std::string> paths;
  for (int i = 0; i < 64; ++i) paths.push_back("/nonexistent/chute_interrupt_" + std::to_string(i));
  request_interrupt();
  EXPECT_THROW(open_groups(paths), Interrupted);
  clear_interrupt();
  EXPECT_THROW(open_groups(paths), Error);  // the members' own errors once nothing is pending
}

}  // namespace
}  // namespace chute
