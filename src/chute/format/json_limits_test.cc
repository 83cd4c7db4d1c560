// Hostile JSON at every place chute parses documents: nesting and size limits give a clear
// kInvalidMetadata naming the document, never a stack overflow.
#include "chute/util/json_limits.h"

#include <gtest/gtest.h>

#include <string>

#include "chute/format/zarr.h"
#include "chute/store/memory_store.h"
#include "chute/util/error.h"

namespace chute {
namespace {

std::string nested(size_t depth, char open = '[', char close = ']') {
  return std::string(depth, open) + std::string(depth, close);
}

void expect_too_deep(const std::function<void()>& call, const std::string& document) {
  try {
    call();
    FAIL() << "expected an error for " << document;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidMetadata) << e.what();
    const std::string message = e.what();
    EXPECT_NE(message.find("nested deeper than 256 levels"), std::string::npos) << message;
    EXPECT_NE(message.find(document), std::string::npos) << message;
  }
}

TEST(JsonLimits, CountsBracketsOutsideStringsOnly) {
  EXPECT_NO_THROW(check_json_limits(nested(256), "doc"));
  EXPECT_THROW(check_json_limits(nested(257), "doc"), Error);
  EXPECT_THROW(check_json_limits("{\"a\":" + nested(300, '{', '}') + "}", "doc"), Error);
  // Brackets inside strings, escaped quotes included, are text.
  const std::string in_string =
      "[\"" + std::string(1000, '[') + "\\\"" + std::string(10, '{') + "\"]";
  EXPECT_NO_THROW(check_json_limits(in_string, "doc"));
  EXPECT_THROW(check_json_limits("abc", "doc", 256, 2), Error);
}

TEST(JsonLimits, DeepZarrayAndZattrsAreInvalidMetadata) {
  const std::string deep = "{\"x\":" + nested(100000) + "}";
  expect_too_deep([&] { parse_zarr_v2_array(deep, "", "a"); }, "array 'a': .zarray");
  expect_too_deep(
      [&] {
        parse_zarr_v2_array(
            R"({"zarr_format":2,"shape":[2],"chunks":[2],"dtype":"<f4","compressor":null,)"
            R"("fill_value":0,"filters":null,"order":"C"})",
            deep, "a");
      },
      ".zattrs");
  expect_too_deep([&] { parse_zarr_v3_array(deep, "a"); }, "array 'a': zarr.json");
}

TEST(JsonLimits, DeepDocumentsInStoresAreInvalidMetadata) {
  const std::string deep = "{\"attributes\":" + nested(100000, '{', '}') + "}";
  {
    auto store = std::make_shared<MemoryStore>();
    store->set("a/.zarray", deep);
    expect_too_deep([&] { open_zarr_array(store, "a", "a"); }, ".zarray");
  }
  {
    auto store = std::make_shared<MemoryStore>();
    store->set("zarr.json", deep);
    expect_too_deep([&] { open_zarr_group(store, "", "g"); }, "zarr.json");
  }
  {
    auto store = std::make_shared<MemoryStore>();
    store->set(".zgroup", std::string_view(R"({"zarr_format": 2})"));
    store->set(".zmetadata", deep);
    expect_too_deep([&] { open_zarr_group(store, "", "g"); }, ".zmetadata");
  }
  {
    auto store = std::make_shared<MemoryStore>();
    store->set(".zgroup", std::string_view(R"({"zarr_format": 2})"));
    store->set(".zattrs", deep);
    expect_too_deep([&] { open_zarr_group(store, "", "g"); }, ".zattrs");
  }
}

}  // namespace
}  // namespace chute
