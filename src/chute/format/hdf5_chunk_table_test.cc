// The HDF5 chunk table and the checks chute makes before libhdf5 sees a dataset: a sparse table
// (memory follows the chunks stored, not the grid), duplicate chunks and grids that cannot be
// indexed refused by name, and layout messages that would make libhdf5 divide by zero refused
// by chute's own parser. Files are written byte by byte here; the h5py-written cases are in
// python/tests/test_audit_hdf5.py.

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "chute/codec/codec_chain.h"
#include "chute/format/hdf5_btree.h"
#include "chute/format/hdf5_chunked_source.h"
#include "chute/format/test_util.h"

namespace chute {
namespace {

namespace fs = std::filesystem;
using testing::expect_error;

class Hdf5ChunkTable : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = fs::temp_directory_path() /
            ("chute_hdf5_table_" + std::to_string(getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".h5");
  }
  void TearDown() override { fs::remove(path_); }

  std::shared_ptr<const SingleFileStore> write(const std::vector<uint8_t>& bytes) {
    std::ofstream out(path_, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
    out.close();
    return std::make_shared<const SingleFileStore>(path_.string());
  }

  static CodecChainPtr chain(const std::vector<int64_t>& chunk) {
    return CodecChain::create(std::vector<CodecSpec>{{"bytes", {{"endian", "little"}}}},
                              DataType{DTypeKind::kInt, 4}, chunk);
  }

  fs::path path_;
};

void put(std::vector<uint8_t>& out, uint64_t value, size_t n) {
  for (size_t i = 0; i < n; ++i) out.push_back(static_cast<uint8_t>(value >> (8 * i)));
}

/// A version 1 object header at byte 0 holding a dataspace message of `rank` and then a
/// layout message with body `layout` (both padded to 8 bytes).
std::vector<uint8_t> header_with(int rank, const std::vector<uint8_t>& layout) {
  std::vector<uint8_t> space = {1, static_cast<uint8_t>(rank), 0, 0, 0, 0, 0, 0};
  for (int d = 0; d < rank; ++d) put(space, 10, 8);
  auto padded = [](std::vector<uint8_t> v) {
    while (v.size() % 8) v.push_back(0);
    return v;
  };
  const std::vector<uint8_t> a = padded(space), b = padded(layout);
  std::vector<uint8_t> out;
  put(out, 1, 1);  // version
  put(out, 0, 1);
  put(out, 2, 2);  // messages
  put(out, 1, 4);  // reference count
  put(out, 16 + a.size() + b.size(), 4);
  put(out, 0, 4);
  for (auto [type, body] : {std::pair{1, &a}, std::pair{8, &b}}) {
    put(out, static_cast<uint64_t>(type), 2);
    put(out, body->size(), 2);
    put(out, 0, 4);
    out.insert(out.end(), body->begin(), body->end());
  }
  out.resize(out.size() + 256, 0);  // room for the reader's first read
  return out;
}

/// A version 3 chunked layout body: dimensionality, B-tree address (undefined), extents.
std::vector<uint8_t> layout_v3(int dims, const std::vector<uint32_t>& extents, int version = 3) {
  std::vector<uint8_t> body = {static_cast<uint8_t>(version), 2, static_cast<uint8_t>(dims)};
  put(body, ~uint64_t{0}, 8);
  for (uint32_t e : extents) put(body, e, 4);
  return body;
}

TEST_F(Hdf5ChunkTable, AWellFormedLayoutPasses) {
  auto file = write(header_with(2, layout_v3(3, {2, 5, 4})));
  hdf5::check_layout_message(*file, 0, {8, 8}, "HDF5 file 'f.h5', dataset 'x'");
  std::vector<Hdf5ChunkEntry> entries(3);
  EXPECT_TRUE(hdf5::read_btree_chunk_index(*file, 0, {8, 8}, {3, 2}, {2, 5}, entries, "x"));
  EXPECT_TRUE(entries.empty());  // nothing written
}

TEST_F(Hdf5ChunkTable, LayoutsLibhdf5WouldDivideByAreRefusedFirst) {
  const std::string where = "HDF5 file 'f.h5', dataset 'x'";
  struct Case {
    std::vector<uint8_t> layout;
    const char* says;
  };
  const std::vector<Case> cases = {
      // One short of rank + 1: Debian's libhdf5 1.10 dies of SIGFPE in H5Dopen on this one.
      {layout_v3(2, {2, 5}), "chunks of 1 dimensions for a dataspace of rank 2"},
      {layout_v3(0, {}), "dimensionality 0"},
      {layout_v3(1, {4}), "dimensionality 1"},
      {layout_v3(40, std::vector<uint32_t>(40, 1)), "dimensionality 40"},
      {layout_v3(3, {2, 0, 4}), "chunk extent 1 is 0"},
      {layout_v3(3, {2, 5, 4}, 0), "version 0"},
      {layout_v3(4, {2, 5, 1, 4}), "chunks of 3 dimensions for a dataspace of rank 2"},
  };
  for (const Case& c : cases) {
    auto file = write(header_with(2, c.layout));
    expect_error(
        [&] {
          hdf5::check_layout_message(*file, 0, {8, 8}, where);
        },
        ErrorCode::kCorruptData, {"f.h5", "dataset 'x'", "layout", c.says});
  }
}

TEST_F(Hdf5ChunkTable, NewerLayoutVersionsAreLeftToLibhdf5) {
  // HDF5 1.14 writes version 5; Debian's 1.10 refuses it with an error, not a crash.
  auto file = write(header_with(2, layout_v3(3, {2, 5, 4}, 5)));
  hdf5::check_layout_message(*file, 0, {8, 8}, "x");
}

TEST_F(Hdf5ChunkTable, OnlyStoredChunksAreHeldAndFoundByPosition) {
  auto file = write(std::vector<uint8_t>(4096, 0));
  // A grid of 2^40 x 2^20 chunks (2^60: a dense table would need 2^65 bytes) with two stored.
  const std::vector<int64_t> grid = {int64_t{1} << 40, int64_t{1} << 20}, chunk = {1, 1};
  Hdf5ChunkedSource source(file, chunk, grid, {chain(chunk)},
                           {{.chunk = (int64_t{1} << 20) * 7 + 3, .offset = 100, .nbytes = 4},
                            {.chunk = 5, .offset = 200, .nbytes = 4}},
                           "HDF5 file 'f.h5', dataset 'x'");
  EXPECT_EQ(source.stored_chunks(), 2u);
  const int64_t a[] = {7, 3}, b[] = {0, 5}, missing[] = {7, 4};
  EXPECT_EQ(source.stored_nbytes(a), 4u);
  EXPECT_EQ(source.stored_nbytes(b), 4u);
  EXPECT_EQ(source.stored_nbytes(missing), std::nullopt);
  ReadScratch scratch;
  EXPECT_EQ(source.locate(a, scratch, nullptr).offset, 100u);
  EXPECT_FALSE(source.locate(missing, scratch, nullptr).found);
}

TEST_F(Hdf5ChunkTable, DuplicateChunksAreCorruptDataNamingTheChunk) {
  auto file = write(std::vector<uint8_t>(4096, 0));
  const std::vector<int64_t> grid = {3, 4}, chunk = {2, 5};
  expect_error(
      [&] {
        Hdf5ChunkedSource(file, chunk, grid, {chain(chunk)},
                          {{.chunk = 6, .offset = 100, .nbytes = 40},
                           {.chunk = 1, .offset = 300, .nbytes = 40},
                           {.chunk = 6, .offset = 200, .nbytes = 40}},
                          "HDF5 file 'f.h5', dataset 'x'");
      },
      ErrorCode::kCorruptData, {"f.h5", "dataset 'x'", "chunk [1, 2] twice"});
}

TEST_F(Hdf5ChunkTable, AGridOf2To64ChunksIsInvalidMetadata) {
  auto file = write(std::vector<uint8_t>(64, 0));
  const std::vector<int64_t> grid = {int64_t{1} << 32, int64_t{1} << 32}, chunk = {1, 1};
  expect_error(
      [&] {
        Hdf5ChunkedSource(file, chunk, grid, {chain(chunk)}, {}, "HDF5 file 'f.h5', dataset 'x'");
      },
      ErrorCode::kInvalidMetadata, {"f.h5", "dataset 'x'", "cannot be indexed"});
}

TEST_F(Hdf5ChunkTable, ChunksOutsideTheGridOrFileAreRefused) {
  auto file = write(std::vector<uint8_t>(256, 0));
  const std::vector<int64_t> grid = {3, 4}, chunk = {2, 5};
  expect_error(
      [&] {
        Hdf5ChunkedSource(file, chunk, grid, {chain(chunk)},
                          {{.chunk = 12, .offset = 0, .nbytes = 40}}, "dataset 'x'");
      },
      ErrorCode::kCorruptData, {"dataset 'x'", "outside the grid"});
  expect_error(
      [&] {
        Hdf5ChunkedSource(file, chunk, grid, {chain(chunk)},
                          {{.chunk = 11, .offset = 250, .nbytes = 40}}, "dataset 'x'");
      },
      ErrorCode::kCorruptData, {"dataset 'x'", "chunk [2, 3]", "truncated"});
}

}  // namespace
}  // namespace chute
