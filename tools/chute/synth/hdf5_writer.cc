#include "chute/synth/hdf5_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "chute/codec/codec_chain.h"
#include "chute/format/hdf5_filters.h"
#include "chute/format/hdf5_library.h"
#include "chute/util/element_count.h"
#include "chute/util/error.h"

namespace chute::synth {
namespace {

using hdf5::check;
using hdf5::check_status;
using hdf5::Handle;

constexpr int kIo = static_cast<int>(ErrorCode::kIoError);

std::vector<Hdf5Filter> filters_of(const std::string& codec, int64_t chunk_bytes) {
  if (codec == "none") return {};
  if (codec == "blosc-lz4" || codec == "blosc-zstd") {
    const unsigned compressor = codec == "blosc-lz4" ? 1 : 5;
    const unsigned level = codec == "blosc-lz4" ? 5 : 3;
    return {
        {kHdf5Blosc, "blosc", {2, 2, 4, static_cast<unsigned>(chunk_bytes), level, 1, compressor}}};
  }
  if (codec == "zstd") return {{kHdf5Zstd, "zstd", {3}}};
  if (codec == "gzip") return {{kHdf5Shuffle, "", {}}, {kHdf5Deflate, "", {5}}};
  fail(ErrorCode::kInvalidArgument,
       "unknown codec '{}' for HDF5: expected none, blosc-lz4, blosc-zstd, zstd or gzip", codec);
}

void pwrite_all(int fd, const void* data, size_t size, uint64_t offset, const std::string& path) {
  const auto* bytes = static_cast<const std::byte*>(data);
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::pwrite(fd, bytes + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      fail_errno(errno, "write", path);
    }
    done += static_cast<size_t>(n);
  }
}

/// Fills each contiguous dataset (at its byte offset) in slabs of whole trailing planes.
void fill_contiguous(const std::string& path, const std::vector<Hdf5DatasetJob>& jobs,
                     const std::vector<uint64_t>& offsets, ThreadPool& pool,
                     ProgressTracker* progress) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) fail_errno(errno, "open", path);
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
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
    pwrite_all(fd, buffer.data(), buffer.size() * 4,
               offsets[slab.job] + static_cast<uint64_t>(slab.first * planes[slab.job] * 4), path);
    if (progress) progress->add(static_cast<int64_t>(buffer.size()) * 4);
  });
}

}  // namespace

GenerateResult write_hdf5(const std::string& path, const std::vector<Hdf5DatasetJob>& jobs,
                          int64_t chunk, const std::string& codec, ThreadPool& pool,
                          ProgressTracker* progress) {
  GenerateResult result;
  const DataType f32{DTypeKind::kFloat, 4};
  std::vector<uint64_t> offsets;
  std::vector<Handle> datasets;
  std::vector<std::vector<int64_t>> chunk_shapes;
  std::vector<CodecChainPtr> chains;
  Handle file;
  {
    auto lock = hdf5::lock_library();
    hdf5::silence_errors();
    file = check(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), kIo,
                 "cannot create HDF5 file '" + path + "'");
    for (const Hdf5DatasetJob& job : jobs) {
      const auto& shape = job.field->spec().shape;
      std::vector<hsize_t> dims(shape.begin(), shape.end());
      Handle space =
          check(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), kIo, path);
      Handle dcpl = check(H5Pcreate(H5P_DATASET_CREATE), kIo, path);
      std::vector<int64_t> chunk_shape;
      std::vector<Hdf5Filter> filters;
      if (chunk > 0) {
        chunk_shape.assign(shape.size(), 1);
        for (size_t d = 1; d < shape.size(); ++d) chunk_shape[d] = std::min(chunk, shape[d]);
        std::vector<hsize_t> cdims(chunk_shape.begin(), chunk_shape.end());
        check_status(H5Pset_chunk(dcpl.get(), static_cast<int>(cdims.size()), cdims.data()), kIo,
                     path);
        filters = filters_of(codec, element_count(chunk_shape) * 4);
        for (const Hdf5Filter& f : filters) {
          // Registered or not (blosc, zstd are plugins): chunks are written already filtered.
          check_status(H5Pset_filter(dcpl.get(), static_cast<H5Z_filter_t>(f.id), H5Z_FLAG_OPTIONAL,
                                     f.client_data.size(), f.client_data.data()),
                       kIo, path + ": setting filter " + std::to_string(f.id));
        }
      } else {
        check_status(H5Pset_alloc_time(dcpl.get(), H5D_ALLOC_TIME_EARLY), kIo, path);
      }
      check_status(H5Pset_fill_time(dcpl.get(), H5D_FILL_TIME_NEVER), kIo, path);
      Handle dset = check(H5Dcreate2(file.get(), job.name.c_str(), H5T_IEEE_F32LE, space.get(),
                                     H5P_DEFAULT, dcpl.get(), H5P_DEFAULT),
                          kIo, path + ": creating dataset " + job.name);
      offsets.push_back(chunk > 0 ? 0 : H5Dget_offset(dset.get()));
      chains.push_back(
          chunk > 0 ? CodecChain::create(hdf5_codec_specs(filters, f32, Endian::kLittle, 0, path),
                                         f32, chunk_shape)
                    : nullptr);
      chunk_shapes.push_back(chunk_shape);
      datasets.push_back(std::move(dset));
      result.logical_bytes += element_count(shape) * 4;
    }
    if (chunk <= 0) {
      datasets.clear();
      file = Handle();  // closes the file: the data goes in with plain pwrite
    }
  }
  if (chunk <= 0) {
    fill_contiguous(path, jobs, offsets, pool, progress);
    result.stored_bytes = result.logical_bytes;
    result.chunks = static_cast<int64_t>(jobs.size());
    return result;
  }

  // Chunked: generate and encode on the pool, write each chunk under the library's lock.
  struct Chunk {
    size_t job;
    std::vector<int64_t> start;
  };
  std::vector<Chunk> work;
  for (size_t j = 0; j < jobs.size(); ++j) {
    const auto& shape = jobs[j].field->spec().shape;
    std::vector<int64_t> coords(shape.size(), 0);
    for (;;) {
      std::vector<int64_t> start(shape.size());
      for (size_t d = 0; d < shape.size(); ++d) start[d] = coords[d] * chunk_shapes[j][d];
      work.push_back({j, std::move(start)});
      size_t d = shape.size();
      while (d-- > 0) {
        if ((coords[d] + 1) * chunk_shapes[j][d] < shape[d]) {
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
    const auto& chunk_shape = chunk_shapes[c.job];
    values[worker].resize(static_cast<size_t>(element_count(chunk_shape)));
    jobs[c.job].field->fill(c.start, chunk_shape, values[worker]);
    chains[c.job]->encode(std::as_bytes(std::span(values[worker])), encoded[worker],
                          scratch[worker]);
    std::vector<hsize_t> offset(c.start.begin(), c.start.end());
    {
      auto lock = hdf5::lock_library();
      check_status(H5Dwrite_chunk(datasets[c.job].get(), H5P_DEFAULT, 0, offset.data(),
                                  encoded[worker].size(), encoded[worker].data()),
                   kIo, path + ": writing a chunk of " + jobs[c.job].name);
    }
    stored += static_cast<int64_t>(encoded[worker].size());
    if (progress) progress->add(static_cast<int64_t>(values[worker].size()) * 4);
  });
  {
    auto lock = hdf5::lock_library();
    datasets.clear();
    file = Handle();
  }
  result.stored_bytes = stored;
  result.chunks = static_cast<int64_t>(work.size());
  return result;
}

}  // namespace chute::synth
