// CacheOptions checked by validate(), the CachingStore constructor, with_cache() and
// set_default_cache_options(): each error names the field and its value.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "chute/store/caching_store.h"
#include "chute/store/memory_store.h"
#include "chute/util/error.h"
#include "chute/util/error_test_util.h"

namespace chute {
namespace {

using chute::testing::message_of;

TEST(CacheOptionsAudit, EveryBadFieldIsNamedWithItsValue) {
  struct Row {
    std::string what;
    CacheOptions options;
  };
  const Row rows[] = {
      {"cache_size = 0", CacheOptions{"/tmp/chute-cache-audit", 0}},
      {"cache_size = 0", CacheOptions{"", 0}},  // even with no folder: nothing is ignored
      {"cache = '/tmp/a\\0...' holds a NUL byte", CacheOptions{std::string("/tmp/a\0b", 8)}},
  };
  auto memory = std::make_shared<MemoryStore>();
  const CacheOptions before = default_cache_options();
  for (const Row& row : rows) {
    SCOPED_TRACE(row.what);
    const std::string message = message_of([&] { validate(row.options); });
    EXPECT_NE(message.find(row.what), std::string::npos) << message;
    EXPECT_EQ(message_of([&] { with_cache(memory, row.options); }), message);
    EXPECT_EQ(message_of([&] { set_default_cache_options(row.options); }), message);
    if (row.options.enabled()) {
      EXPECT_EQ(message_of([&] { CachingStore(memory, row.options); }), message);
    }
  }
  // A refused default leaves the previous one in place.
  EXPECT_EQ(default_cache_options().dir, before.dir);
  EXPECT_EQ(default_cache_options().max_bytes, before.max_bytes);
  EXPECT_NE(message_of([&] { CachingStore(memory, CacheOptions{}); }).find("dir is empty"),
            std::string::npos);
}

TEST(CacheOptionsAudit, DefaultsAndEdgesAreValid) {
  EXPECT_NO_THROW(validate(CacheOptions{}));
  EXPECT_NO_THROW(validate(CacheOptions{"/tmp/x", 1}));
  EXPECT_NO_THROW(validate(CacheOptions{"/tmp/x", UINT64_MAX, true}));
}

}  // namespace
}  // namespace chute
