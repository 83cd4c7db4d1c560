#include "chute/bench/anemoi_workload.h"

#include <gtest/gtest.h>

#include "chute/bench/bench_dataset.h"
#include "chute/util/error.h"

namespace chute::bench {
namespace {

TEST(BenchAnemoi, IsoDatesAsNumPyWritesThem) {
  EXPECT_EQ(parse_iso_seconds("1970-01-01", "d"), 0);
  EXPECT_EQ(parse_iso_seconds("2016-01-01T00:00:00", "d"), 1451606400);
  EXPECT_EQ(parse_iso_seconds("2020-02-29T06:00:00", "d"), 1582956000);
  EXPECT_EQ(parse_iso_seconds("2020-02-29 06:30", "d"), 1582957800);
  EXPECT_EQ(parse_iso_seconds("1969-12-31T18:00:00", "d"), -21600);
  for (const char* bad : {"", "2020", "2020-13-01", "2020-02-31", "2020-01-01X06:00:00",
                          "2020-01-01T", "yesterday"}) {
    try {
      parse_iso_seconds(bad, "missing_dates");
      ADD_FAILURE() << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << bad;
      EXPECT_NE(std::string(e.what()).find("missing_dates"), std::string::npos) << e.what();
    }
  }
}

TEST(BenchAnemoi, StepsWithUnits) {
  EXPECT_EQ(parse_step_seconds("6h", "f"), 6 * 3600);
  EXPECT_EQ(parse_step_seconds("30min", "f"), 1800);
  EXPECT_EQ(parse_step_seconds("1d", "f"), 86400);
  EXPECT_EQ(parse_step_seconds("90s", "f"), 90);
  EXPECT_EQ(parse_step_seconds("600", "f"), 600);
  for (const char* bad : {"", "h", "0h", "-6h", "6 hours", "6w"}) {
    EXPECT_THROW(parse_step_seconds(bad, "--file-step"), Error) << bad;
  }
}

TEST(BenchAnemoi, OptionsOutOfRangeNameTheFlags) {
  AnemoiFlags flags;
  flags.multistep_input = 0;
  try {
    open_anemoi_bench("/nonexistent/anemoi.zarr", flags, {}, "float32", false);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("--multistep-input"), std::string::npos) << e.what();
  }
  flags = {};
  flags.normalise = "min-max";
  EXPECT_THROW(open_anemoi_bench("/nonexistent/anemoi.zarr", flags, {}, "float32", false), Error);
}

}  // namespace
}  // namespace chute::bench
