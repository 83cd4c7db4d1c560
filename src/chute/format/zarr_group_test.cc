// Opening Zarr arrays and groups from stores: consolidated metadata, listing, nested groups,
// local paths and the errors for missing or mistaken nodes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "chute/format/open.h"
#include "chute/format/test_util.h"
#include "chute/format/zarr.h"
#include "chute/store/counting_store.h"
#include "chute/store/memory_store.h"

namespace chute {
namespace {

namespace fs = std::filesystem;
using chute::testing::expect_error;
using nlohmann::json;
using ::testing::ElementsAre;

// Root zarr.json written by zarr-python 3.1 after zarr.consolidate_metadata (members inline).
constexpr std::string_view kV3Consolidated =
    R"({"attributes":{},"zarr_format":3,"consolidated_metadata":{"kind":"inline","must_understand":false,"metadata":{)"
    R"("h":{"shape":[3],"data_type":"float16","chunk_grid":{"name":"regular","configuration":{"chunk_shape":[3]}},"chunk_key_encoding":{"name":"default","configuration":{"separator":"/"}},"fill_value":1.5,"codecs":[{"name":"bytes","configuration":{"endian":"little"}},{"name":"zstd","configuration":{"level":0,"checksum":false}}],"attributes":{},"zarr_format":3,"node_type":"array","storage_transformers":[]},)"
    R"("sub":{"attributes":{},"zarr_format":3,"consolidated_metadata":{"kind":"inline","must_understand":false,"metadata":{}},"node_type":"group"},)"
    R"("t2m":{"shape":[4,6],"data_type":"float32","chunk_grid":{"name":"regular","configuration":{"chunk_shape":[2,3]}},"chunk_key_encoding":{"name":"default","configuration":{"separator":"/"}},"fill_value":"NaN","codecs":[{"name":"bytes","configuration":{"endian":"little"}},{"name":"zstd","configuration":{"level":0,"checksum":false}}],"attributes":{"units":"K"},"dimension_names":["lat","lon"],"zarr_format":3,"node_type":"array","storage_transformers":[]},)"
    R"("z":{"shape":[3],"data_type":"complex64","chunk_grid":{"name":"regular","configuration":{"chunk_shape":[3]}},"chunk_key_encoding":{"name":"default","configuration":{"separator":"/"}},"fill_value":[1.0,2.0],"codecs":[{"name":"bytes","configuration":{"endian":"little"}},{"name":"zstd","configuration":{"level":0,"checksum":false}}],"attributes":{},"zarr_format":3,"node_type":"array","storage_transformers":[]},)"
    R"("sub/u":{"shape":[5],"data_type":"int16","chunk_grid":{"name":"regular","configuration":{"chunk_shape":[4]}},"chunk_key_encoding":{"name":"default","configuration":{"separator":"/"}},"fill_value":3,"codecs":[{"name":"sharding_indexed","configuration":{"chunk_shape":[2],"codecs":[{"name":"bytes","configuration":{"endian":"little"}},{"name":"zstd","configuration":{"level":0,"checksum":false}}],"index_codecs":[{"name":"bytes","configuration":{"endian":"little"}},{"name":"crc32c"}],"index_location":"end"}}],"attributes":{},"zarr_format":3,"node_type":"array","storage_transformers":[]}}},"node_type":"group"})";

// .zmetadata written by zarr-python 2.18 (consolidate_metadata) for a nested group.
constexpr std::string_view kV2Consolidated =
    R"({"metadata":{".zgroup":{"zarr_format":2},)"
    R"("inf/.zarray":{"chunks":[3],"compressor":{"blocksize":0,"clevel":5,"cname":"lz4","id":"blosc","shuffle":1},"dtype":"<f8","fill_value":"-Infinity","filters":null,"order":"C","shape":[3],"zarr_format":2},)"
    R"("n/.zarray":{"chunks":[3],"compressor":{"blocksize":0,"clevel":5,"cname":"lz4","id":"blosc","shuffle":1},"dtype":"<f8","fill_value":null,"filters":null,"order":"C","shape":[3],"zarr_format":2},)"
    R"("sub/.zgroup":{"zarr_format":2},)"
    R"("sub/b/.zarray":{"chunks":[],"compressor":null,"dtype":"|b1","fill_value":true,"filters":null,"order":"C","shape":[],"zarr_format":2},)"
    R"("sub/u/.zarray":{"chunks":[2],"compressor":null,"dimension_separator":"/","dtype":"<i2","fill_value":3,"filters":null,"order":"C","shape":[5],"zarr_format":2},)"
    R"("t2m/.zarray":{"chunks":[2,3],"compressor":{"blocksize":0,"clevel":5,"cname":"lz4","id":"blosc","shuffle":1},"dtype":">f4","fill_value":"NaN","filters":null,"order":"F","shape":[4,6],"zarr_format":2},)"
    R"("t2m/.zattrs":{"_ARRAY_DIMENSIONS":["lat","lon"]},)"
    R"("z/.zarray":{"chunks":[3],"compressor":{"blocksize":0,"clevel":5,"cname":"lz4","id":"blosc","shuffle":1},"dtype":"<c16","fill_value":[1.0,2.0],"filters":null,"order":"C","shape":[3],"zarr_format":2}},"zarr_consolidated_format":1})";

constexpr std::string_view kV3Array =
    R"({"shape":[4],"data_type":"uint8","chunk_grid":{"name":"regular","configuration":{"chunk_shape":[2]}},)"
    R"("chunk_key_encoding":{"name":"default"},"fill_value":7,"codecs":[{"name":"bytes"}],)"
    R"("zarr_format":3,"node_type":"array"})";
constexpr std::string_view kV3Group =
    R"({"zarr_format":3,"node_type":"group","attributes":{"title":"t"}})";
constexpr std::string_view kV2Array =
    R"({"zarr_format":2,"shape":[4],"chunks":[2],"dtype":"<i4","fill_value":0,"order":"C",)"
    R"("compressor":{"id":"zstd","level":1},"filters":null})";
constexpr std::string_view kV2Group = R"({"zarr_format":2})";

std::vector<std::string> keys(const Group& group) {
  std::vector<std::string> out;
  for (const auto& [path, array] : group.arrays) out.push_back(path);
  return out;
}

TEST(ZarrGroup, V3ConsolidatedReadsOnlyTheRootDocument) {
  auto memory = std::make_shared<MemoryStore>();
  memory->set("root.zarr/zarr.json", kV3Consolidated);
  auto counting = std::make_shared<CountingStore>(memory, /*log_keys=*/true);
  Group group = open_zarr_group(counting, "root.zarr", "root.zarr");
  EXPECT_EQ(group.zarr_format, 3);
  EXPECT_THAT(keys(group), ElementsAre("h", "sub/u", "t2m", "z"));
  EXPECT_THAT(group.groups, ElementsAre("sub"));
  EXPECT_THAT(counting->logged_keys(), ElementsAre("root.zarr/zarr.json"));
  const Array& t2m = *group.arrays.at("t2m");
  EXPECT_EQ(t2m.name(), "root.zarr/t2m");
  EXPECT_THAT(t2m.metadata().dimension_names, ElementsAre("lat", "lon"));
  EXPECT_EQ(t2m.metadata().attributes["units"], "K");
  EXPECT_EQ(group.arrays.at("sub/u")->name(), "root.zarr/sub/u");
  EXPECT_EQ(group.arrays.at("sub/u")->storage_key(std::vector<int64_t>{2}),
            "root.zarr/sub/u/c/1");  // inner chunk 2 lives in shard 1
}

TEST(ZarrGroup, V3NestedConsolidatedGroupsRecurse) {
  json inner = json::parse(kV3Array);
  json doc = json::parse(kV3Group);
  doc["consolidated_metadata"] = {
      {"kind", "inline"},
      {"metadata",
       {{"a", inner},
        {"sub",
         {{"zarr_format", 3},
          {"node_type", "group"},
          {"consolidated_metadata", {{"metadata", {{"b", inner}}}}}}}}}};
  auto memory = std::make_shared<MemoryStore>();
  memory->set("zarr.json", doc.dump());
  Group group = open_zarr_group(memory, "", "");
  EXPECT_THAT(keys(group), ElementsAre("a", "sub/b"));
  EXPECT_EQ(group.arrays.at("sub/b")->name(), "sub/b");
  EXPECT_EQ(group.attributes["title"], "t");
}

TEST(ZarrGroup, V2ConsolidatedFromZarr2) {
  auto memory = std::make_shared<MemoryStore>();
  memory->set("g/.zgroup", kV2Group);
  memory->set("g/.zattrs", R"({"history": "made"})");
  memory->set("g/.zmetadata", kV2Consolidated);
  auto counting = std::make_shared<CountingStore>(memory, true);
  Group group = open_zarr_group(counting, "g", "data/g");
  EXPECT_EQ(group.zarr_format, 2);
  EXPECT_EQ(group.attributes["history"], "made");
  EXPECT_THAT(keys(group), ElementsAre("inf", "n", "sub/b", "sub/u", "t2m", "z"));
  EXPECT_THAT(group.groups, ElementsAre("sub"));
  EXPECT_THAT(counting->logged_keys(),
              ElementsAre("g/zarr.json", "g/.zgroup", "g/.zattrs", "g/.zmetadata"));
  const ArrayMetadata& t2m = group.arrays.at("t2m")->metadata();
  EXPECT_THAT(t2m.dimension_names, ElementsAre("lat", "lon"));
  EXPECT_EQ(t2m.codecs.front().name, "transpose");
  EXPECT_EQ(group.arrays.at("sub/u")->name(), "data/g/sub/u");
  EXPECT_EQ(group.arrays.at("sub/u")->metadata().chunk_key_encoding.separator, '/');
  EXPECT_EQ(group.arrays.at("sub/b")->metadata().rank(), 0u);
}

TEST(ZarrGroup, V2ListedNestedGroups) {
  auto memory = std::make_shared<MemoryStore>();
  memory->set(".zgroup", kV2Group);
  memory->set("a/.zarray", kV2Array);
  memory->set("a/0", "chunk bytes");
  memory->set("sub/.zgroup", kV2Group);
  memory->set("sub/u/.zarray", kV2Array);
  memory->set("sub/u/.zattrs", R"({"_ARRAY_DIMENSIONS": ["x"]})");
  memory->set("sub/deeper/.zgroup", kV2Group);
  memory->set("sub/deeper/w/.zarray", kV2Array);
  memory->set("sub/not_a_node/file", "x");
  memory->set("sub/v3/zarr.json", kV3Array);  // other format: not a member of a v2 group
  Group group = open_zarr_group(memory, "", "root");
  EXPECT_THAT(keys(group), ElementsAre("a", "sub/deeper/w", "sub/u"));
  EXPECT_THAT(group.groups, ElementsAre("sub", "sub/deeper"));
  EXPECT_THAT(group.arrays.at("sub/u")->metadata().dimension_names, ElementsAre("x"));
  EXPECT_EQ(group.arrays.at("sub/deeper/w")->name(), "root/sub/deeper/w");
}

TEST(ZarrGroup, V3ListedNestedGroups) {
  auto memory = std::make_shared<MemoryStore>();
  memory->set("r/zarr.json", kV3Group);
  memory->set("r/x/zarr.json", kV3Array);
  memory->set("r/x/c/0", "chunk");
  memory->set("r/g/zarr.json", kV3Group);
  memory->set("r/g/y/zarr.json", kV3Array);
  memory->set("r/g/h/zarr.json", kV3Group);
  Group group = open_zarr_group(memory, "r", "r");
  EXPECT_THAT(keys(group), ElementsAre("g/y", "x"));
  EXPECT_THAT(group.groups, ElementsAre("g", "g/h"));
  EXPECT_EQ(group.attributes["title"], "t");
}

TEST(ZarrGroup, ErrorsNameTheNode) {
  auto memory = std::make_shared<MemoryStore>();
  memory->set("arr/zarr.json", kV3Array);
  memory->set("badjson/zarr.json", "{");
  memory->set("badmember/zarr.json", kV3Group);
  memory->set("badmember/m/zarr.json", R"({"zarr_format":3,"node_type":"array","shape":[-1]})");
  memory->set("escape/.zgroup", kV2Group);
  memory->set("escape/.zmetadata", R"({"metadata": {"../x/.zarray": {}}})");
  memory->set("v2bad/.zgroup", R"({"zarr_format": 3})");
  memory->set("v2meta/.zgroup", kV2Group);
  memory->set("v2meta/.zmetadata", R"({"metadata": {"x/.zarray": {"zarr_format": 2}}})");
  expect_error([&] { open_zarr_group(memory, "missing", "missing"); }, ErrorCode::kNotFound,
               {"no Zarr group at 'memory/missing' (no zarr.json or .zgroup)"});
  expect_error([&] { open_zarr_group(memory, "arr", "arr"); }, ErrorCode::kInvalidArgument,
               {"'memory/arr' is a Zarr array, not a group"});
  expect_error([&] { open_zarr_group(memory, "badjson", "badjson"); }, ErrorCode::kInvalidMetadata,
               {"group 'badjson': zarr.json is not valid JSON"});
  expect_error([&] { open_zarr_group(memory, "badmember", "bm"); }, ErrorCode::kInvalidMetadata,
               {"array 'bm/m': zarr.json field 'shape'"});
  expect_error([&] { open_zarr_group(memory, "escape", "escape"); }, ErrorCode::kInvalidMetadata,
               {"group 'escape': .zmetadata", "invalid member path '../x'"});
  expect_error([&] { open_zarr_group(memory, "v2bad", "v2bad"); }, ErrorCode::kInvalidMetadata,
               {"group 'v2bad': .zgroup field 'zarr_format' must be 2"});
  expect_error([&] { open_zarr_group(memory, "v2meta", "v2meta"); }, ErrorCode::kInvalidMetadata,
               {"array 'v2meta/x': .zarray field 'shape' is missing"});
}

TEST(ZarrOpen, ArraysFromAStore) {
  auto memory = std::make_shared<MemoryStore>();
  memory->set("v3/zarr.json", kV3Array);
  memory->set("v2/.zarray", kV2Array);
  memory->set("v2/.zattrs", R"({"long_name": "x"})");
  memory->set("grp/zarr.json", kV3Group);
  memory->set("broken/.zarray", R"({"zarr_format": 2, "shape": [1]})");
  ArrayPtr v3 = open_zarr_array(memory, "v3", "v3");
  EXPECT_EQ(v3->metadata().zarr_format, 3);
  EXPECT_EQ(v3->metadata().fill_value, std::vector<std::byte>{std::byte{7}});
  ArrayPtr v2 = open_zarr_array(memory, "v2", "v2");
  EXPECT_EQ(v2->metadata().attributes["long_name"], "x");
  EXPECT_EQ(v2->storage_key(std::vector<int64_t>{1}), "v2/1");
  expect_error([&] { open_zarr_array(memory, "nothing", "nothing"); }, ErrorCode::kNotFound,
               {"no Zarr array at 'memory/nothing' (no zarr.json or .zarray)"});
  expect_error([&] { open_zarr_array(memory, "grp", "grp"); }, ErrorCode::kInvalidArgument,
               {"'memory/grp' is a Zarr group, not an array"});
  expect_error([&] { open_zarr_array(memory, "broken", "my/broken"); }, ErrorCode::kInvalidMetadata,
               {"array 'my/broken': .zarray field 'chunks' is missing"});
}

// A temporary folder removed at the end of the test.
class ZarrOpenPath : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("chute_zarr_open_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  void write(const std::string& key, std::string_view text) {
    fs::path path = root_ / key;
    fs::create_directories(path.parent_path());
    std::ofstream(path) << text;
  }
  std::string path(const std::string& key = "") const { return (root_ / key).string(); }

  fs::path root_;
};

TEST_F(ZarrOpenPath, ArrayFolderAndGroupMember) {
  write("g.zarr/.zgroup", kV2Group);
  write("g.zarr/a/.zarray", kV2Array);
  write("g.zarr/s/.zgroup", kV2Group);
  write("g.zarr/s/b/.zarray", kV2Array);
  ArrayPtr direct = open_array(path("g.zarr/a/"));
  EXPECT_EQ(direct->name(), path("g.zarr/a"));
  EXPECT_EQ(open_array(path("g.zarr/s/b"))->metadata().shape, std::vector<int64_t>{4});
  EXPECT_TRUE(is_group(path("g.zarr")));
  EXPECT_TRUE(is_group(path("g.zarr/s")));
  EXPECT_FALSE(is_group(path("g.zarr/a")));
  EXPECT_FALSE(is_group(path("nowhere")));
  Group group = open_group(path("g.zarr"));
  EXPECT_THAT(keys(group), ElementsAre("a", "s/b"));
  expect_error([&] { open_array(path("g.zarr")); }, ErrorCode::kInvalidArgument,
               {"is a Zarr group, not an array"});
  expect_error([&] { open_array(path("g.zarr/nope")); }, ErrorCode::kNotFound,
               {"no Zarr array at '" + path("g.zarr/nope") + "'", "has no array member 'nope'"});
  expect_error([&] { open_array(path("nowhere/x")); }, ErrorCode::kNotFound,
               {"no Zarr array at '" + path("nowhere/x") + "' (no zarr.json or .zarray)"});
  expect_error([&] { open_group(path("g.zarr/a")); }, ErrorCode::kInvalidArgument,
               {"is a Zarr array, not a group"});
}

TEST_F(ZarrOpenPath, MemberKnownOnlyFromConsolidatedMetadata) {
  json doc = json::parse(kV3Group);
  doc["consolidated_metadata"] = {{"kind", "inline"},
                                  {"metadata", {{"inner/x", json::parse(kV3Array)}}}};
  write("c.zarr/zarr.json", doc.dump());
  ArrayPtr array = open_array(path("c.zarr/inner/x"));
  EXPECT_EQ(array->name(), path("c.zarr/inner/x"));
  EXPECT_EQ(array->storage_key(std::vector<int64_t>{0}), "inner/x/c/0");
  write("v2.zarr/.zgroup", kV2Group);
  write("v2.zarr/.zmetadata", kV2Consolidated);
  EXPECT_EQ(open_array(path("v2.zarr/sub/u"))->metadata().data_type,
            (DataType{DTypeKind::kInt, 2}));
}

}  // namespace
}  // namespace chute
