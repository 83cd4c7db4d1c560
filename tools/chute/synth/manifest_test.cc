#include "chute/synth/manifest.h"

#include <gtest/gtest.h>

#include "chute/synth/testing.h"
#include "chute/synth/zarr_writer.h"
#include "chute/util/error.h"

namespace chute::synth {
namespace {

TEST(SynthManifest, RoundTrips) {
  testing::TempDir dir;
  Manifest m;
  m.workload = "packed";
  m.zarr_format = 3;
  m.arrays = {{"inputs", "inputs"}, {"targets", "targets"}};
  m.options = {{"samples", 4}};
  m.logical_bytes = 100;
  m.stored_bytes = 60;
  EXPECT_FALSE(has_manifest(dir.path()));
  write_manifest(dir.path(), m);
  EXPECT_TRUE(has_manifest(dir.path()));
  Manifest back = read_manifest(dir.path());
  EXPECT_EQ(back.workload, "packed");
  EXPECT_EQ(back.zarr_format, 3);
  EXPECT_EQ(back.arrays, m.arrays);
  EXPECT_EQ(back.options, m.options);
  EXPECT_EQ(back.created_by, "chute make-dataset");
  EXPECT_EQ(back.logical_bytes, 100);
  EXPECT_EQ(back.stored_bytes, 60);
  auto doc = testing::read_json(dir / "chute.json");
  for (const char* key : {"workload", "arrays", "options", "zarr_format", "created_by"}) {
    EXPECT_TRUE(doc.contains(key)) << key;
  }
}

TEST(SynthManifest, MissingOrBadFieldsAreErrors) {
  auto code_of = [](const nlohmann::json& doc) {
    try {
      Manifest::from_json(doc);
    } catch (const Error& e) {
      return e.code();
    }
    return ErrorCode::kInternal;
  };
  EXPECT_EQ(code_of({{"zarr_format", 2}, {"arrays", nlohmann::json::object()}}),
            ErrorCode::kInvalidMetadata);
  EXPECT_EQ(code_of({{"workload", 1}, {"zarr_format", 2}, {"arrays", nlohmann::json::object()}}),
            ErrorCode::kInvalidMetadata);
  EXPECT_EQ(code_of({{"workload", "packed"}, {"zarr_format", 2}, {"arrays", {{"a", 3}}}}),
            ErrorCode::kInvalidMetadata);
  EXPECT_EQ(code_of(nlohmann::json::array()), ErrorCode::kInvalidMetadata);
}

TEST(SynthManifest, MissingFileIsNotFound) {
  testing::TempDir dir;
  try {
    read_manifest(dir.path());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
  }
  write_text_file(dir / "chute.json", "{not json");
  EXPECT_THROW(read_manifest(dir.path()), Error);
}

}  // namespace
}  // namespace chute::synth
