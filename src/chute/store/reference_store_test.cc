// Reference stores: JSON versions 0 and 1 (templates, generated keys), inline and referenced
// values, batches forwarded to the target files, and the errors for bad targets.

#include "chute/store/reference_store.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <vector>

#include "chute/array/array.h"
#include "chute/format/open.h"
#include "chute/format/zarr.h"
#include "chute/util/error.h"

namespace chute {
namespace {

namespace fs = std::filesystem;

class References : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("chute_refs_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    std::ofstream out(dir_ / "data.bin", std::ios::binary);
    for (int i = 0; i < 4000; ++i) out.put(static_cast<char>(i % 251));
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
    return (dir_ / name).string();
  }
  static std::string text(const ByteBuffer& b) {
    return {reinterpret_cast<const char*>(b.data()), b.size()};
  }

  fs::path dir_;
};

TEST_F(References, VersionZeroInlineAndRanges) {
  const std::string refs = write("refs.json", R"({
    ".zgroup": "{\"zarr_format\": 2}",
    "a/b64": "base64:aGVsbG8=",
    "a/range": ["data.bin", 100, 10],
    "a/whole": ["file://)" + (dir_ / "data.bin").string() +
                                                  R"("]
  })");
  StorePtr store = open_reference_store(refs);
  ByteBuffer out;
  ASSERT_TRUE(store->read("a/b64", out));
  EXPECT_EQ(text(out), "hello");
  ASSERT_TRUE(store->read(".zgroup", out));
  EXPECT_EQ(text(out), R"({"zarr_format": 2})");
  ASSERT_TRUE(store->read("a/range", out));
  ASSERT_EQ(out.size(), 10u);
  EXPECT_EQ(out.data()[0], std::byte{100});
  EXPECT_EQ(store->size("a/whole"), 4000u);
  std::vector<std::byte> part(3);
  ASSERT_TRUE(store->read_range("a/range", 7, part));
  EXPECT_EQ(part[0], std::byte{107});
  EXPECT_FALSE(store->read("a/missing", out));
  EXPECT_EQ(store->list(""), (std::vector<std::string>{".zgroup", "a"}));
  EXPECT_EQ(store->list("a"), (std::vector<std::string>{"b64", "range", "whole"}));
}

TEST_F(References, VersionOneTemplatesAndGenerators) {
  const std::string refs = write("refs.json", R"({
    "version": 1,
    "templates": {"u": "data", "ext": ".bin"},
    "gen": [{"key": "g/{{i}}.{{j}}", "url": "{{u}}{{ext}}",
             "offset": "{{(i * 2 + j) * 100 + 5}}", "length": "{{j + 1}}",
             "dimensions": {"i": {"stop": 3}, "j": [0, 1]}}],
    "refs": {".zgroup": "{\"zarr_format\":2}", "x": ["{{u}}.bin", 1, 2]}
  })");
  StorePtr store = open_reference_store(refs);
  ByteBuffer out;
  ASSERT_TRUE(store->read("g/2.1", out));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out.data()[0], std::byte{(505 % 251)});
  ASSERT_TRUE(store->read("x", out));
  EXPECT_EQ(out.data()[0], std::byte{1});
  EXPECT_EQ(store->list("g").size(), 6u);
}

TEST_F(References, BatchesForwardRangesAndNameBadTargets) {
  const std::string refs = write("refs.json", R"({
    ".zgroup": "{\"zarr_format\":2}",
    "ok": ["data.bin", 10, 20],
    "gone": ["nothere.bin", 0, 8],
    "short": ["data.bin", 3990, 100],
    "inline": "abc"
  })");
  StorePtr store = open_reference_store(refs);
  ByteBuffer a, b, c, d, e;
  std::vector<ReadRequest> requests = {{"ok", ByteRange::at(5, 4), {}, &a},
                                       {"gone", ByteRange::whole(), {}, &b},
                                       {"short", ByteRange::whole(), {}, &c},
                                       {"inline", ByteRange::last(2), {}, &d},
                                       {"absent", ByteRange::whole(), {}, &e}};
  const auto outcomes = store->read_all(requests);
  ASSERT_EQ(outcomes[0].status, ReadStatus::kOk);
  EXPECT_EQ(a.data()[0], std::byte{15});
  ASSERT_EQ(outcomes[1].status, ReadStatus::kFailed);
  try {
    std::rethrow_exception(outcomes[1].error);
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kNotFound);
    EXPECT_NE(std::string(error.what()).find("'gone'"), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("nothere.bin"), std::string::npos) << error.what();
  }
  ASSERT_EQ(outcomes[2].status, ReadStatus::kFailed);
  try {
    std::rethrow_exception(outcomes[2].error);
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kCorruptData);
    EXPECT_NE(std::string(error.what()).find("'short'"), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("data.bin"), std::string::npos) << error.what();
  }
  ASSERT_EQ(outcomes[3].status, ReadStatus::kOk);
  EXPECT_EQ(text(d), "bc");
  EXPECT_EQ(outcomes[4].status, ReadStatus::kMissing);
}

TEST_F(References, ZarrArrayThroughReferencesReadsTheTargetBytes) {
  // A (2, 4) uint8 array in chunks of (1, 4): chunk 0.0 at byte 40 of data.bin, chunk 1.0
  // missing (fill value 7).
  const std::string refs = write("refs.json", R"({
    ".zgroup": "{\"zarr_format\":2}",
    "x/.zarray": "{\"shape\":[2,4],\"chunks\":[1,4],\"dtype\":\"|u1\",\"fill_value\":7,\"order\":\"C\",\"filters\":null,\"compressor\":null,\"zarr_format\":2}",
    "x/0.0": ["data.bin", 40, 4]
  })");
  ArrayPtr array = open_array(refs + "/x");
  std::vector<uint8_t> values(8);
  array->read(std::vector<int64_t>{0, 0},
              StridedView::contiguous(reinterpret_cast<std::byte*>(values.data()), {2, 4}, 1));
  EXPECT_EQ(values, (std::vector<uint8_t>{40, 41, 42, 43, 7, 7, 7, 7}));
  Group group = open_group(refs);
  EXPECT_EQ(group.arrays.count("x"), 1u);
}

TEST_F(References, FilesThatAreNotReferenceSetsSaySo) {
  const std::string notrefs = write("other.json", R"({"hello": 1})");
  try {
    open_group(notrefs);
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kInvalidMetadata);
    EXPECT_NE(std::string(error.what()).find("not a Zarr reference set"), std::string::npos)
        << error.what();
  }
  const std::string v2 = write("v2.json", R"({"version": 2, "refs": {}})");
  EXPECT_THROW(open_group(v2), Error);
  const std::string bad = write("bad.json", R"({".zgroup": "{}", "k": ["a.bin", "x", 1]})");
  try {
    open_group(bad);
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("key 'k'"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace chute
