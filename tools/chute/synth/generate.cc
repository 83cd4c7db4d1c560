#include "chute/synth/generate.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <limits>
#include <vector>

#include "chute/array/strided_copy.h"
#include "chute/util/element_count.h"
#include "chute/util/error.h"

namespace chute::synth {
namespace {

struct WorkerState {
  std::vector<float> values;
  ByteBuffer encoded;
  CodecScratch scratch;
};

/// The .npy (format 1.0) header for a C-order float32 array of `shape`, padded to 64 bytes.
std::string npy_header(std::span<const int64_t> shape) {
  std::string dims;  // "4, 8" or "4," (a 1-tuple)
  for (size_t d = 0; d < shape.size(); ++d) dims += (d ? ", " : "") + std::to_string(shape[d]);
  if (shape.size() == 1) dims += ",";
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + "), }";
  size_t unpadded = 10 + dict.size() + 1;
  dict.append((64 - unpadded % 64) % 64, ' ');
  dict += '\n';
  std::string header = "\x93NUMPY";
  header += '\x01';
  header += '\x00';
  header += static_cast<char>(dict.size() & 0xff);
  header += static_cast<char>((dict.size() >> 8) & 0xff);
  return header + dict;
}

void pwrite_all(int fd, const std::byte* data, size_t size, int64_t offset,
                const std::string& path) {
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::pwrite(fd, data + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      fail_errno(errno, "write", path);
    }
    done += static_cast<size_t>(n);
  }
}

/// The part of an edge chunk outside the array holds the fill value, as zarr-python writes it
/// (so it compresses to almost nothing instead of costing stored bytes).
void pad_edge_chunk(const ArraySpec& spec, std::span<const int64_t> start,
                    std::span<float> values) {
  const auto& chunk = spec.chunk_shape;
  float pad = 0.0f;
  if (spec.fill_value.is_number()) {
    pad = spec.fill_value.get<float>();
  } else if (spec.fill_value.is_string() && spec.fill_value.get<std::string>() == "NaN") {
    pad = std::numeric_limits<float>::quiet_NaN();
  }
  const auto view = StridedView::contiguous(reinterpret_cast<std::byte*>(values.data()), chunk, 4);
  for (size_t d = 0; d < chunk.size(); ++d) {
    const int64_t valid = spec.shape[d] - start[d];
    if (valid >= chunk[d]) continue;
    StridedView slab = view;  // [valid, chunk) along axis d, everything along the others
    slab.data += valid * view.byte_strides[d];
    slab.shape[d] = chunk[d] - valid;
    strided_fill(slab, std::as_bytes(std::span(&pad, 1)));
  }
}

}  // namespace

int64_t generated_bytes(std::span<const FieldArrayJob> jobs) {
  int64_t total = 0;
  for (const auto& job : jobs) total += job.writer->chunk_count() * job.writer->chunk_nbytes();
  return total;
}

GenerateResult generate_arrays(std::span<FieldArrayJob> jobs, ThreadPool& pool,
                               ProgressTracker* progress) {
  struct Task {
    size_t job;
    int64_t chunk;
  };
  std::vector<Task> tasks;
  GenerateResult result;
  for (size_t j = 0; j < jobs.size(); ++j) {
    const auto& spec = jobs[j].writer->spec();
    if (spec.data_type.kind != DTypeKind::kFloat || spec.data_type.size != 4) {
      fail(ErrorCode::kInvalidArgument, "{}: expected a float32 array to generate, got {}",
           jobs[j].writer->path(), spec.data_type.name());
    }
    result.logical_bytes += element_count(spec.shape) * 4;
    for (int64_t c = 0; c < jobs[j].writer->chunk_count(); ++c) tasks.push_back({j, c});
  }
  std::vector<WorkerState> workers(pool.size());
  std::atomic<int64_t> stored{0};
  pool.parallel_for(tasks.size(), [&](size_t i, size_t worker) {
    const FieldArrayJob& job = jobs[tasks[i].job];
    WorkerState& state = workers[worker];
    const auto& chunk_shape = job.writer->spec().chunk_shape;
    auto coords = job.writer->chunk_coords(tasks[i].chunk);
    std::vector<int64_t> start(coords.size());
    for (size_t d = 0; d < coords.size(); ++d) start[d] = coords[d] * chunk_shape[d];
    state.values.resize(static_cast<size_t>(job.writer->chunk_elements()));
    job.field->fill(start, chunk_shape, state.values);
    if (job.observe) job.observe(tasks[i].chunk, state.values);
    pad_edge_chunk(job.writer->spec(), start, state.values);
    stored += job.writer->write_chunk(coords, std::as_bytes(std::span(state.values)), state.scratch,
                                      state.encoded);
    if (progress) progress->add(job.writer->chunk_nbytes());
  });
  result.stored_bytes = stored.load();
  result.chunks = static_cast<int64_t>(tasks.size());
  return result;
}

GenerateResult write_npy(const std::string& path, const Field& field, ThreadPool& pool,
                         ProgressTracker* progress, bool channels_last) {
  const auto& shape = field.spec().shape;
  channels_last = channels_last && shape.size() >= 2;
  // Written shape and the axis the slabs split: axis 0, or (channels last) axis 1 of the field.
  std::vector<int64_t> file_shape(shape.begin(), shape.end());
  if (channels_last) std::rotate(file_shape.begin(), file_shape.begin() + 1, file_shape.end());
  const std::string header = npy_header(file_shape);
  const size_t split = channels_last ? 1 : 0;
  const int64_t channels = channels_last ? shape[0] : 1;
  // Slabs: whole trailing planes along the split axis, about 4 MB each.
  const int64_t plane = element_count(std::span(shape).subspan(split + 1)) * channels;
  const int64_t rows_per_slab = std::max<int64_t>(1, (int64_t{4} << 20) / (plane * 4));
  const int64_t slabs = (shape[split] + rows_per_slab - 1) / rows_per_slab;

  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail_errno(errno, "create", path);
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  pwrite_all(fd, reinterpret_cast<const std::byte*>(header.data()), header.size(), 0, path);

  std::vector<std::vector<float>> buffers(pool.size()), moved(pool.size());
  pool.parallel_for(static_cast<size_t>(slabs), [&](size_t s, size_t worker) {
    int64_t first = static_cast<int64_t>(s) * rows_per_slab;
    int64_t rows = std::min(rows_per_slab, shape[split] - first);
    std::vector<int64_t> start(shape.size(), 0), box(shape.begin(), shape.end());
    start[split] = first;
    box[split] = rows;
    auto& buffer = buffers[worker];
    buffer.resize(static_cast<size_t>(rows * plane));
    field.fill(start, box, buffer);
    const float* out = buffer.data();
    if (channels_last) {  // (C, n) -> (n, C)
      const auto n = static_cast<size_t>(rows * plane / channels);
      auto& t = moved[worker];
      t.resize(buffer.size());
      for (size_t c = 0; c < static_cast<size_t>(channels); ++c) {
        for (size_t i = 0; i < n; ++i) t[i * static_cast<size_t>(channels) + c] = buffer[c * n + i];
      }
      out = t.data();
    }
    pwrite_all(fd, reinterpret_cast<const std::byte*>(out), buffer.size() * 4,
               static_cast<int64_t>(header.size()) + first * plane * 4, path);
    if (progress) progress->add(static_cast<int64_t>(buffer.size()) * 4);
  });
  GenerateResult result;
  result.logical_bytes = element_count(shape) * 4;
  result.stored_bytes = static_cast<int64_t>(header.size()) + result.logical_bytes;
  result.chunks = slabs;
  return result;
}

}  // namespace chute::synth
