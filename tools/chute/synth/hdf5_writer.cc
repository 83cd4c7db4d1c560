#include "chute/synth/hdf5_writer.h"

#include <algorithm>
#include <atomic>

#include "chute/codec/codec_chain.h"
#include "chute/synth/hdf5_file_writer.h"
#include "chute/util/element_count.h"
#include "chute/util/error.h"

namespace chute::synth {
namespace {

std::vector<Hdf5Filter> filters_of(const std::string& codec, int64_t chunk_bytes) {
  if (codec == "none") return {};
  if (codec == "blosc-lz4" || codec == "blosc-zstd") {
    const unsigned compressor = codec == "blosc-lz4" ? 1 : 5;
    const unsigned level = codec == "blosc-lz4" ? 5 : 3;
    // hdf5-blosc's parameters: filter revision, blosc version, type size, chunk bytes, then
    // level, shuffle, compressor.
    return {
        {kHdf5Blosc, "blosc", {2, 2, 4, static_cast<unsigned>(chunk_bytes), level, 1, compressor}}};
  }
  if (codec == "zstd") return {{kHdf5Zstd, "zstd", {3}}};
  // Shuffle's parameter is the element size, as libhdf5 stores it.
  if (codec == "gzip") return {{kHdf5Shuffle, "", {4}}, {kHdf5Deflate, "", {5}}};
  fail(ErrorCode::kInvalidArgument,
       "unknown codec '{}' for HDF5: expected none, blosc-lz4, blosc-zstd, zstd or gzip", codec);
}

/// Fills each contiguous dataset (at its byte offset) in slabs of whole trailing planes.
void fill_contiguous(Hdf5FileWriter& file, const std::vector<Hdf5DatasetJob>& jobs,
                     ThreadPool& pool, ProgressTracker* progress) {
  struct Slab {
    size_t job;
    int64_t first, rows;
  };
  std::vector<Slab> slabs;
  std::vector<int64_t> planes;
  for (size_t j = 0; j < jobs.size(); ++j) {
    const auto& shape = jobs[j].field->spec().shape;
    const int64_t plane = shape.size() > 1 ? element_count(std::span(shape).subspan(1)) : 1;
    planes.push_back(plane);
    const int64_t rows = std::max<int64_t>(1, (int64_t{4} << 20) / (plane * 4));
    // Split the leading axis; a short one (channels) still gives one slab per row.
    for (int64_t first = 0; first < shape[0]; first += rows) {
      slabs.push_back({j, first, std::min(rows, shape[0] - first)});
    }
  }
  std::vector<std::vector<float>> buffers(pool.size());
  pool.parallel_for(slabs.size(), [&](size_t s, size_t worker) {
    const Slab& slab = slabs[s];
    const auto& shape = jobs[slab.job].field->spec().shape;
    std::vector<int64_t> start(shape.size(), 0), box(shape.begin(), shape.end());
    start[0] = slab.first;
    box[0] = slab.rows;
    auto& buffer = buffers[worker];
    buffer.resize(static_cast<size_t>(slab.rows * planes[slab.job]));
    jobs[slab.job].field->fill(start, box, buffer);
    file.write_contiguous(slab.job, static_cast<uint64_t>(slab.first * planes[slab.job] * 4),
                          std::as_bytes(std::span(buffer)));
    if (progress) progress->add(static_cast<int64_t>(buffer.size()) * 4);
  });
}

}  // namespace

GenerateResult write_hdf5(const std::string& path, const std::vector<Hdf5DatasetJob>& jobs,
                          int64_t chunk, const std::string& codec, ThreadPool& pool,
                          ProgressTracker* progress) {
  GenerateResult result;
  const DataType f32{DTypeKind::kFloat, 4};
  std::vector<Hdf5DatasetLayout> layouts;
  std::vector<CodecChainPtr> chains;
  for (const Hdf5DatasetJob& job : jobs) {
    Hdf5DatasetLayout layout{job.name, job.field->spec().shape, {}, {}};
    if (chunk > 0) {
      const auto& shape = layout.shape;
      layout.chunk_shape.assign(shape.size(), 1);
      for (size_t d = 1; d < shape.size(); ++d) layout.chunk_shape[d] = std::min(chunk, shape[d]);
      layout.filters = filters_of(codec, element_count(layout.chunk_shape) * 4);
      chains.push_back(
          CodecChain::create(hdf5_codec_specs(layout.filters, f32, Endian::kLittle, 0, path), f32,
                             layout.chunk_shape));
    }
    result.logical_bytes += element_count(layout.shape) * 4;
    layouts.push_back(std::move(layout));
  }
  Hdf5FileWriter file(path, layouts);
  if (chunk <= 0) {
    fill_contiguous(file, jobs, pool, progress);
    file.finish();
    result.stored_bytes = result.logical_bytes;
    result.chunks = static_cast<int64_t>(jobs.size());
    return result;
  }

  // Chunked: generate, encode and append on the pool; chunk k is k-th in row-major grid order.
  struct Chunk {
    size_t job;
    uint64_t linear;
    std::vector<int64_t> start;
  };
  std::vector<Chunk> work;
  for (size_t j = 0; j < jobs.size(); ++j) {
    const auto& shape = layouts[j].shape;
    const auto& chunk_shape = layouts[j].chunk_shape;
    std::vector<int64_t> coords(shape.size(), 0);
    for (uint64_t linear = 0;; ++linear) {
      std::vector<int64_t> start(shape.size());
      for (size_t d = 0; d < shape.size(); ++d) start[d] = coords[d] * chunk_shape[d];
      work.push_back({j, linear, std::move(start)});
      size_t d = shape.size();
      while (d-- > 0) {
        if ((coords[d] + 1) * chunk_shape[d] < shape[d]) {
          ++coords[d];
          break;
        }
        coords[d] = 0;
      }
      if (d == static_cast<size_t>(-1)) break;
    }
  }
  std::vector<std::vector<float>> values(pool.size());
  std::vector<ByteBuffer> encoded(pool.size());
  std::vector<CodecScratch> scratch(pool.size());
  std::atomic<int64_t> stored{0};
  pool.parallel_for(work.size(), [&](size_t i, size_t worker) {
    const Chunk& c = work[i];
    const auto& chunk_shape = layouts[c.job].chunk_shape;
    values[worker].resize(static_cast<size_t>(element_count(chunk_shape)));
    jobs[c.job].field->fill(c.start, chunk_shape, values[worker]);
    chains[c.job]->encode(std::as_bytes(std::span(values[worker])), encoded[worker],
                          scratch[worker]);
    file.append_chunk(c.job, c.linear, encoded[worker].span());
    stored += static_cast<int64_t>(encoded[worker].size());
    if (progress) progress->add(static_cast<int64_t>(values[worker].size()) * 4);
  });
  file.finish();
  result.stored_bytes = stored;
  result.chunks = static_cast<int64_t>(work.size());
  return result;
}

}  // namespace chute::synth
