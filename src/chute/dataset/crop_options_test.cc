// CropOptions checked field by field by validate(), the CropDataset constructor and
// open_crop_dataset(): one row per field and bad value, each error naming the field and value.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "chute/dataset/crop_dataset.h"
#include "chute/util/error.h"
#include "chute/util/error_test_util.h"

namespace chute {
namespace {

struct Row {
  std::string what;  // the message must hold this (field = value)
  std::function<void(CropOptions&)> mutate;
};

std::vector<Row> bad_rows() {
  return {
      {"size (number of values) = 0", [](CropOptions& o) { o.size.clear(); }},
      {"size (number of values) = 33", [](CropOptions& o) { o.size.assign(33, 4); }},
      {"size[0] = 0", [](CropOptions& o) { o.size = {0}; }},
      {"size[1] = -3",
       [](CropOptions& o) {
         o.size = {8, -3, 8};
       }},
      {"size[0] = 2147483649", [](CropOptions& o) { o.size = {(int64_t{1} << 31) + 1}; }},
      {"size[2] = -9223372036854775808",
       [](CropOptions& o) {
         o.size = {4, 4, INT64_MIN};
       }},
      {"channel_axis = 32", [](CropOptions& o) { o.channel_axis = 32; }},
      {"channel_axis = -33", [](CropOptions& o) { o.channel_axis = -33; }},
      {"crops_per_epoch = 0", [](CropOptions& o) { o.crops_per_epoch = 0; }},
      {"crops_per_epoch = -5", [](CropOptions& o) { o.crops_per_epoch = -5; }},
      {"transforms = 'flips'", [](CropOptions& o) { o.transforms = "flips"; }},
      {"transforms = 'Rotations'", [](CropOptions& o) { o.transforms = "Rotations"; }},
  };
}

using chute::testing::message_of;

TEST(CropOptionsAudit, DefaultsAndEdgesAreValid) {
  CropOptions o;
  EXPECT_NO_THROW(validate(o));
  o.size = {1, int64_t{1} << 31, 7};
  o.channel_axis = -32;
  o.transforms = "symmetries";
  EXPECT_NO_THROW(validate(o));
  o.channel_axis = std::nullopt;
  o.transforms = "";
  EXPECT_NO_THROW(validate(o));
}

TEST(CropOptionsAudit, EveryBadFieldIsNamedWithItsValue) {
  for (const Row& row : bad_rows()) {
    SCOPED_TRACE(row.what);
    CropOptions o;
    row.mutate(o);
    const std::string message = message_of([&] { validate(o); }, ErrorCode::kInvalidArgument);
    EXPECT_NE(message.find(row.what), std::string::npos) << message;
    // The opener checks before it opens anything: a missing path is not what it reports.
    const std::string opened = message_of(
        [&] {
          open_crop_dataset({{"x", "/nonexistent/chute/crops.zarr"}}, o);
        },
        ErrorCode::kInvalidArgument);
    EXPECT_EQ(opened, message);
  }
}

TEST(CropOptionsAudit, TheConstructorChecksBeforeLookingAtTheArrays) {
  CropOptions o;
  o.size = {0};
  // No arrays at all would be its own error; the options come first.
  const std::string message = message_of([&] { CropDataset({}, o); }, ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find("size[0] = 0"), std::string::npos) << message;
}

TEST(CropOptionsAudit, TheCacheOfTheOpenerIsCheckedToo) {
  CacheOptions cache;
  cache.dir = std::string("/tmp/cache\0evil", 15);
  const std::string message = message_of(
      [&] {
        open_crop_dataset({{"x", "/nonexistent/chute/crops.zarr"}}, CropOptions{}, cache);
      },
      ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find("cache = '/tmp/cache"), std::string::npos) << message;
  EXPECT_NE(message.find("NUL"), std::string::npos) << message;
}

}  // namespace
}  // namespace chute
