// HttpOptions checked field by field by validate() and set_options(): one row per field and bad
// value, each error naming the option as Python spells it and the value; a refused set_options()
// changes nothing.
#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "chute/store/http/http_client.h"
#include "chute/util/error.h"

namespace chute::http {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

struct Row {
  std::string what;
  std::function<void(HttpOptions&)> mutate;
};

std::vector<Row> bad_rows() {
  return {
      {"connect_timeout = 0 is outside", [](HttpOptions& o) { o.connect_timeout_s = 0; }},
      {"connect_timeout = nan", [](HttpOptions& o) { o.connect_timeout_s = kNaN; }},
      {"connect_timeout = 0.0001", [](HttpOptions& o) { o.connect_timeout_s = 1e-4; }},
      {"timeout = -1", [](HttpOptions& o) { o.request_timeout_s = -1; }},
      {"timeout = inf", [](HttpOptions& o) { o.request_timeout_s = kInf; }},
      {"timeout = 1e+300", [](HttpOptions& o) { o.request_timeout_s = 1e300; }},
      {"stall_timeout = 0.5", [](HttpOptions& o) { o.stall_timeout_s = 0.5; }},
      {"stall_timeout = 2000000 is outside [1, 1000000]",
       [](HttpOptions& o) { o.stall_timeout_s = 2e6; }},
      {"stall_min_bytes_per_s = 0", [](HttpOptions& o) { o.stall_min_bytes_per_s = 0; }},
      {"max_retries = -1", [](HttpOptions& o) { o.max_retries = -1; }},
      {"max_retries = 101", [](HttpOptions& o) { o.max_retries = 101; }},
      {"backoff = -0.5", [](HttpOptions& o) { o.backoff_base_s = -0.5; }},
      {"backoff = nan", [](HttpOptions& o) { o.backoff_base_s = kNaN; }},
      {"backoff_max = 0.01 is outside [0.05, ", [](HttpOptions& o) { o.backoff_max_s = 0.01; }},
      {"backoff_max = inf", [](HttpOptions& o) { o.backoff_max_s = kInf; }},
      {"max_in_flight = 0", [](HttpOptions& o) { o.max_in_flight = 0; }},
      {"max_in_flight = 5000", [](HttpOptions& o) { o.max_in_flight = 5000; }},
      {"coalesce_max = 0", [](HttpOptions& o) { o.coalesce_max = 0; }},
      {"split_size = 4095", [](HttpOptions& o) { o.split_size = 4095; }},
  };
}

TEST(HttpOptionsAudit, EveryBadFieldIsNamedWithItsValue) {
  const HttpOptions saved = options();
  for (const Row& row : bad_rows()) {
    SCOPED_TRACE(row.what);
    HttpOptions o;
    row.mutate(o);
    for (const auto& run : {std::function<void()>([&] { validate(o); }),
                            std::function<void()>([&] { set_options(o); })}) {
      try {
        run();
        ADD_FAILURE() << "no error";
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
        EXPECT_NE(std::string(e.what()).find(row.what), std::string::npos) << e.what();
      }
    }
    EXPECT_EQ(options().max_retries, saved.max_retries);  // nothing was applied
    EXPECT_EQ(options().max_in_flight, saved.max_in_flight);
  }
}

TEST(HttpOptionsAudit, DefaultsAndEdgesAreValid) {
  HttpOptions o;
  EXPECT_NO_THROW(validate(o));
  o.connect_timeout_s = 1e-3;
  o.request_timeout_s = kMaxHttpSeconds;
  o.stall_timeout_s = 1;
  o.max_retries = 0;
  o.backoff_base_s = 0;
  o.backoff_max_s = 0;
  o.max_in_flight = 4096;
  o.coalesce_gap = 0;
  o.coalesce_max = 1;
  o.split_size = 4096;
  EXPECT_NO_THROW(validate(o));
}

}  // namespace
}  // namespace chute::http
