#include "chute/synth/hdf5_file_writer.h"

#include <gtest/gtest.h>

#include <numeric>

#include "chute/codec/codec_chain.h"
#include "chute/format/hdf5_native/file.h"
#include "chute/format/open.h"
#include "chute/synth/testing.h"
#include "chute/util/element_count.h"
#include "chute/util/error.h"

namespace chute::synth {
namespace {
using testing::TempDir;

std::vector<float> iota(size_t n, float first) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), first);
  return v;
}

std::vector<float> read_all(const std::string& path) {
  ArrayPtr array = open_array(path);
  const auto& shape = array->metadata().shape;
  std::vector<float> out(static_cast<size_t>(element_count(shape)));
  std::vector<int64_t> start(shape.size(), 0);
  array->read(start, StridedView::contiguous(reinterpret_cast<std::byte*>(out.data()), shape, 4));
  return out;
}

/// Writes `values` (C order, of `layout.shape`) as dataset d of `file`, chunk by chunk through
/// the layout's filters.
void write_dataset(Hdf5FileWriter& file, size_t d, const Hdf5DatasetLayout& layout,
                   const std::vector<float>& values) {
  if (layout.chunk_shape.empty()) {
    file.write_contiguous(d, 0, std::as_bytes(std::span(values)));
    return;
  }
  const DataType f32{DTypeKind::kFloat, 4};
  auto chain =
      CodecChain::create(hdf5_codec_specs(layout.filters, f32, Endian::kLittle, 0, layout.name),
                         f32, layout.chunk_shape);
  const size_t rank = layout.shape.size();
  std::vector<int64_t> grid(rank);
  for (size_t i = 0; i < rank; ++i) {
    grid[i] = (layout.shape[i] + layout.chunk_shape[i] - 1) / layout.chunk_shape[i];
  }
  const int64_t chunks = element_count(grid);
  // Backwards, so that the file order of the chunks is not their index order.
  for (int64_t linear = chunks - 1; linear >= 0; --linear) {
    std::vector<int64_t> coords(rank);
    for (int64_t i = static_cast<int64_t>(rank) - 1, rest = linear; i >= 0; --i) {
      coords[i] = rest % grid[i];
      rest /= grid[i];
    }
    // An edge chunk is stored whole; past the dataset's end it holds zeros.
    std::vector<float> chunk(static_cast<size_t>(element_count(layout.chunk_shape)), 0.0f);
    for (int64_t k = 0; k < static_cast<int64_t>(chunk.size()); ++k) {
      int64_t at = 0;
      bool inside = true;
      for (int64_t i = static_cast<int64_t>(rank) - 1, rest = k, stride = 1; i >= 0; --i) {
        const int64_t x = coords[i] * layout.chunk_shape[i] + rest % layout.chunk_shape[i];
        rest /= layout.chunk_shape[i];
        inside = inside && x < layout.shape[i];
        at += x * stride;
        stride *= layout.shape[i];
      }
      if (inside) chunk[static_cast<size_t>(k)] = values[static_cast<size_t>(at)];
    }
    ByteBuffer encoded;
    CodecScratch scratch;
    chain->encode(std::as_bytes(std::span(chunk)), encoded, scratch);
    file.append_chunk(d, static_cast<uint64_t>(linear), encoded.span());
  }
}

TEST(Hdf5FileWriter, ContiguousChunkedAndFilteredDatasetsReadBackExactly) {
  TempDir dir;
  const std::string path = dir / "f.h5";
  std::vector<Hdf5DatasetLayout> layouts = {
      {"contiguous", {3, 5, 7}, {}, {}},
      {"chunked", {3, 5, 7}, {1, 2, 4}, {}},
      {"gzip", {2, 9, 6}, {1, 4, 4}, {{kHdf5Shuffle, "", {4}}, {kHdf5Deflate, "", {5}}}},
      {"zstd", {4, 4}, {4, 4}, {{kHdf5Zstd, "zstd", {3}}}},
  };
  std::vector<std::vector<float>> values;
  {
    Hdf5FileWriter file(path, layouts);
    for (size_t d = 0; d < layouts.size(); ++d) {
      values.push_back(iota(static_cast<size_t>(element_count(layouts[d].shape)), 1000.0f * d));
      write_dataset(file, d, layouts[d], values[d]);
    }
    file.finish();
  }
  for (size_t d = 0; d < layouts.size(); ++d) {
    EXPECT_EQ(read_all(path + "/" + layouts[d].name), values[d]) << layouts[d].name;
  }

  auto file = h5native::File::open_path(path);
  EXPECT_EQ(file->superblock().version, 3);
  const auto root = file->root();
  std::vector<std::string> names;
  for (const auto& link : file->links(root)) names.push_back(link.name);
  EXPECT_EQ(names, (std::vector<std::string>{"chunked", "contiguous", "gzip", "zstd"}));
  auto object = file->resolve("gzip").object;
  auto dataset = file->dataset(object);
  EXPECT_EQ(dataset.layout.cls, h5native::Layout::Class::kChunked);
  EXPECT_EQ(dataset.layout.index, h5native::Layout::Index::kFixedArray);
  EXPECT_EQ(dataset.layout.chunk, (std::vector<uint64_t>{1, 4, 4}));
  ASSERT_EQ(dataset.filters.size(), 2u);
  EXPECT_EQ(dataset.filters[0].id, kHdf5Shuffle);
  EXPECT_EQ(dataset.filters[0].client_data, (std::vector<uint32_t>{4}));
  EXPECT_EQ(dataset.filters[1].id, kHdf5Deflate);
  EXPECT_EQ(file->chunk_index(object, dataset).count(), 2u * 3 * 2);
  auto contiguous = file->dataset(file->resolve("contiguous").object);
  EXPECT_EQ(contiguous.layout.cls, h5native::Layout::Class::kContiguous);
  EXPECT_EQ(contiguous.layout.size, 3u * 5 * 7 * 4);
}

TEST(Hdf5FileWriter, PagesTheFixedArrayPastOneThousandTwentyFourChunks) {
  // 3 × 20 × 21 = 1,260 chunks: two pages, the second of 236 entries; filtered and not.
  TempDir dir;
  const std::string path = dir / "paged.h5";
  std::vector<Hdf5DatasetLayout> layouts = {
      {"plain", {3, 40, 41}, {1, 2, 2}, {}},
      {"gzip", {3, 40, 41}, {1, 2, 2}, {{kHdf5Deflate, "", {1}}}},
  };
  const auto values = iota(3 * 40 * 41, -7.0f);
  {
    Hdf5FileWriter file(path, layouts);
    write_dataset(file, 0, layouts[0], values);
    write_dataset(file, 1, layouts[1], values);
    file.finish();
  }
  auto file = h5native::File::open_path(path);
  for (const auto& layout : layouts) {
    auto object = file->resolve(layout.name).object;
    auto dataset = file->dataset(object);
    EXPECT_EQ(dataset.layout.page_bits, 10);
    EXPECT_EQ(file->chunk_index(object, dataset).count(), 1260u);
    EXPECT_EQ(read_all(path + "/" + layout.name), values) << layout.name;
  }
}

TEST(Hdf5FileWriter, RefusesBadNamesAndAFileWithAChunkMissing) {
  TempDir dir;
  const std::string path = dir / "bad.h5";
  EXPECT_THROW(Hdf5FileWriter(path, {{"a/b", {2}, {}, {}}}), Error);
  EXPECT_THROW(Hdf5FileWriter(path, {{"a", {2}, {}, {{kHdf5Deflate, "", {1}}}}}), Error);
  Hdf5FileWriter file(path, {{"a", {4}, {2}, {}}});
  const std::vector<float> two = {1, 2};
  file.append_chunk(0, 1, std::as_bytes(std::span(two)));
  EXPECT_THROW(file.append_chunk(0, 2, std::as_bytes(std::span(two))), Error);
  try {
    file.finish();
    FAIL() << "finished without chunk 0";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("chunk 0 was never written"), std::string::npos);
  }
}

}  // namespace
}  // namespace chute::synth
