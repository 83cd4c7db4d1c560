#include <gtest/gtest.h>

#include <set>
#include <string>

#include "chute/bench/bench_session.h"
#include "chute/bench/option_flag.h"
#include "chute/util/error.h"

namespace chute::bench {
namespace {

template <typename S>
void collect(std::set<std::string>& names) {
  for (const auto& field : S::fields()) {
    EXPECT_TRUE(names.insert(std::string(field.name)).second) << field.name << " twice";
    EXPECT_FALSE(field.help.empty()) << field.name;
  }
}

std::string error_of(const BenchOptions& o) {
  try {
    check_bench_options(o);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    return e.what();
  }
  return "";
}

TEST(BenchOptionsTable, OneFlagPerNameAndTheDefaultsPass) {
  std::set<std::string> names;
  collect<BenchOptions>(names);
  collect<VolumeSettings>(names);
  collect<WindowsFlags>(names);
  EXPECT_TRUE(names.count("batch_size") && names.count("volume_form") && names.count("dtype"));
  EXPECT_EQ(option_flag("crops_per_epoch"), "--crops-per-epoch");
  EXPECT_EQ(error_of(BenchOptions{}), "");
}

TEST(BenchOptionsTable, ErrorsNameTheFlagTheValueAndTheRange) {
  BenchOptions o;
  o.batches = 0;
  EXPECT_EQ(error_of(o), "bench --batches: batches = 0 is outside [1, 2147483647]");
  o = {};
  o.volume.crop_size = 0;
  EXPECT_NE(error_of(o).find("--crop-size"), std::string::npos);
  o = {};
  o.page_cache = "tepid";
  EXPECT_NE(error_of(o).find("'tepid' is not one of 'warm', 'cold'"), std::string::npos);
  o = {};
  o.windows.dtype = "float64";
  EXPECT_NE(error_of(o).find("bench --dtype"), std::string::npos);
  o = {};
  o.threads = 0;  // the default: one per usable core
  o.io_concurrency = 0;
  o.step_ms = 0;
  EXPECT_EQ(error_of(o), "");
  o.threads = -1;
  EXPECT_NE(error_of(o).find("bench --threads: threads = -1"), std::string::npos);
  o = {};
  o.world_size = 2;
  o.rank = 2;
  EXPECT_EQ(error_of(o), "bench --rank: rank = 2 is outside [0, 1] (--world-size 2)");
}

TEST(BenchOptionsTable, ModeIsReadAndWrittenAsText) {
  const auto& fields = BenchOptions::fields();
  const auto* mode = find_field<BenchOptions>("mode");
  ASSERT_NE(mode, nullptr);
  ASSERT_FALSE(fields.empty());
  const auto& text = std::get<OptionText<BenchOptions>>(mode->member);
  BenchOptions o;
  text.set(o, "full,io");
  EXPECT_EQ(text.get(o), "full,io");
  EXPECT_THROW(text.set(o, "fast"), Error);
}

}  // namespace
}  // namespace chute::bench
