#include "chute/bench/roofline.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

#include "chute/array/chunk_source.h"
#include "chute/array/read_plan.h"
#include "chute/array/read_scratch.h"
#include "chute/bench/machine.h"
#include "chute/codec/sharding.h"
#include "chute/store/file_store.h"
#include "chute/util/error.h"

namespace chute::bench {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// Decodes one stored object into `out` (warm, large enough) and returns the decoded bytes.
/// Whole chunks go through the array's codec chain; shards decode each non-empty inner chunk.
/// place(decoded) runs after each (inner) chunk.
template <typename Place>
int64_t decode_object(const Array& array, std::span<const std::byte> stored, ByteBuffer& out,
                      CodecScratch& scratch, std::vector<ShardIndexEntry>& index, Place&& place) {
  const ShardingCodec* sharding = array.codecs().sharding();
  if (sharding == nullptr) {
    const auto nbytes = static_cast<size_t>(array.codecs().decoded_nbytes());
    out.resize(nbytes);
    array.codecs().decode(stored, out.span(), scratch);
    place(std::span<const std::byte>(out.span()));
    return static_cast<int64_t>(nbytes);
  }
  const uint64_t index_nbytes = sharding->index_encoded_nbytes();
  if (stored.size() < index_nbytes) {
    fail(ErrorCode::kCorruptData, "shard of {} bytes is shorter than its index ({} bytes)",
         stored.size(), index_nbytes);
  }
  auto encoded_index = stored.subspan(sharding->index_offset(stored.size()), index_nbytes);
  sharding->decode_index(encoded_index, stored.size(), index, scratch);
  const auto inner_nbytes = static_cast<size_t>(sharding->inner->decoded_nbytes());
  out.resize(inner_nbytes);
  int64_t decoded = 0;
  for (const ShardIndexEntry& entry : index) {
    if (entry.is_empty()) continue;
    sharding->inner->decode(stored.subspan(entry.offset, entry.nbytes), out.span(), scratch);
    place(std::span<const std::byte>(out.span()));
    decoded += static_cast<int64_t>(inner_nbytes);
  }
  return decoded;
}

RooflineResult finish(RooflineResult result, double read_s, double decode_s, double place_gbps,
                      double place_copy_gbps) {
  const auto gbps = [](int64_t bytes, double seconds) {
    return seconds > 0 ? static_cast<double>(bytes) / seconds / 1e9 : 0.0;
  };
  result.read_gbps = gbps(result.decoded_bytes, read_s);
  result.read_stored_gbps = gbps(result.encoded_bytes, read_s);
  result.decode_single_gbps = gbps(result.decoded_bytes, decode_s);
  result.decode_gbps = result.decode_single_gbps * result.decode_parallelism;
  result.place_gbps = place_gbps;
  result.place_copy_gbps = place_copy_gbps;
  // Reads from storage run on their own (the loader's reads in flight) while the workers
  // decode and place, so the slower of the two sides bounds the loader. Reads from the page
  // cache or memory are copies on the same cores as decoding: their times add up.
  result.read_overlaps = result.read_source.starts_with("storage");
  result.decode_limit_gbps =
      loader_limit(result.read_gbps, {result.decode_gbps}, result.read_overlaps);
  result.combined_gbps =
      loader_limit(result.read_gbps, {result.decode_gbps, result.place_gbps}, result.read_overlaps);
  result.bounding_step = bounding_step(result);
  return result;
}

/// The shortest of `repeats` (at least one) timed runs of pass().
template <typename Pass>
double best_seconds(int repeats, Pass&& pass) {
  double best = 0;
  for (int i = 0; i < std::max(1, repeats); ++i) {
    const auto start = Clock::now();
    pass();
    const double elapsed = seconds_since(start);
    if (i == 0 || elapsed < best) best = elapsed;
  }
  return best;
}

/// Reads the chunk's stored object into `out`; a chunk that vanished since it was listed is an
/// error.
void read_chunk(const ChunkRef& ref, ByteBuffer& out) {
  if (ref.nbytes) {
    out.resize(static_cast<size_t>(*ref.nbytes));
    if (ref.store().read_range(ref.key, ref.offset, out.span())) return;
  } else if (ref.store().read(ref.key, out)) {
    return;
  }
  {
    fail(ErrorCode::kNotFound, "roofline: chunk {} of {} disappeared during the run", ref.key,
         ref.array->name());
  }
}

/// A batch's worth of warm destination: enough to leave the caches; past it, slots wrap
/// around. At least 64 MiB, so that a small set of chunks still lands outside the caches.
class BatchDestination {
 public:
  explicit BatchDestination(int64_t total, int64_t largest) {
    constexpr int64_t kMinDestination = int64_t{64} << 20;
    constexpr int64_t kMaxDestination = int64_t{256} << 20;
    bytes_ = std::max({largest, kMinDestination, std::min(total, kMaxDestination)});
    buffer_.resize(static_cast<size_t>(bytes_));
    std::memset(buffer_.data(), 0, buffer_.size());
  }
  /// Copies `data` into the slot that starts `offset` bytes into the batch.
  void place(int64_t offset, std::span<const std::byte> data) {
    const auto nbytes = static_cast<int64_t>(data.size());
    offset %= bytes_;
    if (offset + nbytes > bytes_) offset = 0;
    std::memcpy(buffer_.data() + offset, data.data(), data.size());
  }

 private:
  int64_t bytes_ = 0;
  ByteBuffer buffer_;
};

/// Each chunk's slot: decoded bytes of the chunks before it.
std::vector<int64_t> slot_offsets(std::span<const ChunkRef> chunks, int64_t& total,
                                  int64_t& largest) {
  std::vector<int64_t> offsets(chunks.size());
  total = 0;
  largest = 0;
  for (size_t i = 0; i < chunks.size(); ++i) {
    const int64_t nbytes = chunks[i].array->metadata().chunk_nbytes();
    offsets[i] = total;
    total += nbytes;
    largest = std::max(largest, nbytes);
  }
  return offsets;
}

/// GB/s of the best of `repeats` passes copying every chunk's decoded bytes (chunk_nbytes())
/// from a warm per-worker source into consecutive slots of one warm batch-sized destination.
double measure_place_gbps(std::span<const ChunkRef> chunks, ThreadPool& pool, int repeats) {
  int64_t total = 0, largest = 0;
  const std::vector<int64_t> offsets = slot_offsets(chunks, total, largest);
  BatchDestination destination(total, largest);
  std::vector<ByteBuffer> sources(pool.size());
  for (ByteBuffer& source : sources) {
    source.resize(static_cast<size_t>(largest));
    std::memset(source.data(), 1, source.size());
  }
  const double best = best_seconds(repeats, [&] {
    pool.parallel_for(chunks.size(), [&](size_t i, size_t worker) {
      const auto nbytes = static_cast<size_t>(chunks[i].array->metadata().chunk_nbytes());
      destination.place(offsets[i], {sources[worker].data(), nbytes});
    });
  });
  return best > 0 ? static_cast<double>(total) / best / 1e9 : 0.0;
}

/// GB/s of decoded bytes of the best of `repeats` passes of the plain loop: each worker preads
/// a chunk into its warm buffer, decodes it into another, and (when `place`) copies it into the
/// chunk's slot of a warm batch-sized destination.
double measure_loop_gbps(std::span<const ChunkRef> chunks, ThreadPool& pool, int repeats,
                         int64_t max_stored, bool place) {
  int64_t total = 0, largest = 0;
  const std::vector<int64_t> offsets = slot_offsets(chunks, total, largest);
  std::optional<BatchDestination> destination;
  if (place) destination.emplace(total, largest);
  struct Worker {
    ByteBuffer stored, decoded;
    CodecScratch codec;
    std::vector<ShardIndexEntry> index;
  };
  std::vector<Worker> workers(pool.size());
  for (Worker& w : workers) {
    w.stored.resize(static_cast<size_t>(max_stored));
    std::memset(w.stored.data(), 0, w.stored.size());
    w.decoded.resize(static_cast<size_t>(largest));
    std::memset(w.decoded.data(), 0, w.decoded.size());
  }
  std::atomic<int64_t> decoded{0};
  const double best = best_seconds(repeats, [&] {
    decoded = 0;
    pool.parallel_for(chunks.size(), [&](size_t i, size_t worker) {
      Worker& w = workers[worker];
      read_chunk(chunks[i], w.stored);
      int64_t offset = offsets[i];
      decoded += decode_object(*chunks[i].array, w.stored.span(), w.decoded, w.codec, w.index,
                               [&](std::span<const std::byte> bytes) {
                                 if (!destination) return;
                                 destination->place(offset, bytes);
                                 offset += static_cast<int64_t>(bytes.size());
                               });
    });
  });
  return best > 0 ? static_cast<double>(decoded.load()) / best / 1e9 : 0.0;
}

std::string file_path(const ChunkRef& ref) {
  if (const auto* files = dynamic_cast<const FileStore*>(&ref.store())) {
    return join_key(files->root(), ref.key);
  }
  return {};
}

}  // namespace

std::vector<ChunkRef> unique_chunks(std::span<const ChunkTask> tasks) {
  std::vector<ChunkRef> refs;
  std::set<std::tuple<const Array*, std::string, uint64_t>> seen;
  ReadScratch scratch;
  for (const ChunkTask& task : tasks) {
    const ChunkSource& source = task.array->source();
    if (source.mapped() != nullptr) continue;  // copied out of a mapping: no chunk reads
    ChunkRef ref;
    ref.array = task.array;
    ref.key = task.array->storage_key(task.chunk_coords);
    if (task.array->codecs().sharding() == nullptr) {
      const ChunkLocation where = source.locate(task.chunk_coords, scratch, nullptr);
      // Never written: a missing object is kept (counted as missing); a chunk missing inside
      // an existing file (HDF5) has nothing to read.
      if (!where.found && ref.store().size(ref.key)) continue;
      if (where.nbytes &&
          (where.offset != 0 || where.store != &task.array->store() || scratch.key != ref.key)) {
        ref.key = scratch.key;
        ref.offset = where.offset;
        ref.nbytes = where.nbytes;
        ref.range_store = where.store;
      }
    }
    if (seen.emplace(ref.array, ref.key, ref.offset).second) refs.push_back(std::move(ref));
  }
  return refs;
}

std::vector<ChunkRef> chunks_in_boxes(const Array& array,
                                      std::span<const std::vector<int64_t>> starts,
                                      std::span<const std::vector<int64_t>> shapes) {
  if (starts.size() != shapes.size()) {
    fail(ErrorCode::kInvalidArgument, "array '{}': {} box starts but {} box shapes", array.name(),
         starts.size(), shapes.size());
  }
  const size_t rank = array.rank();
  const auto& chunk = array.read_chunk_shape();
  std::vector<ChunkRef> refs;
  std::set<std::string> seen;
  std::vector<int64_t> first(rank), last(rank), coords(rank);
  for (size_t box = 0; box < starts.size(); ++box) {
    const std::vector<int64_t>& start = starts[box];
    const std::vector<int64_t>& shape = shapes[box];
    array.check_box(start, shape);
    if (std::any_of(shape.begin(), shape.end(), [](int64_t n) { return n == 0; })) continue;
    for (size_t d = 0; d < rank; ++d) {
      first[d] = coords[d] = start[d] / chunk[d];
      last[d] = (start[d] + shape[d] - 1) / chunk[d];
    }
    for (bool more = true; more;) {
      std::string key = array.storage_key(coords);
      if (seen.insert(key).second) {
        ChunkRef ref;
        ref.array = &array;
        ref.key = std::move(key);
        refs.push_back(std::move(ref));
      }
      more = false;
      for (size_t d = rank; d-- > 0;) {
        if (++coords[d] <= last[d]) {
          more = true;
          break;
        }
        coords[d] = first[d];
      }
    }
  }
  return refs;
}

double combined_limit(std::initializer_list<double> step_gbps) {
  double seconds_per_gb = 0;
  for (double gbps : step_gbps) {
    if (gbps <= 0) return 0;
    seconds_per_gb += 1.0 / gbps;
  }
  return seconds_per_gb > 0 ? 1.0 / seconds_per_gb : 0.0;
}

double loader_limit(double read, std::initializer_list<double> worker_steps, bool reads_overlap) {
  if (read <= 0) return 0;
  double seconds = 0;  // per unit, of the workers' steps
  for (double rate : worker_steps) {
    if (rate <= 0) return 0;
    seconds += 1.0 / rate;
  }
  if (reads_overlap) return seconds > 0 ? std::min(read, 1.0 / seconds) : read;
  return 1.0 / (seconds + 1.0 / read);
}

int reads_in_flight(std::span<const ChunkRef> chunks, int threads, int io_concurrency) {
  int window = io_concurrency;
  if (window <= 0) {  // the store's preference, as ReadPlan::resolve_io_concurrency
    window = 1;
    for (const ChunkRef& ref : chunks) {
      if (ref.array->source().mapped() == nullptr) {
        window = std::max(1, ref.store().preferred_concurrency());
        break;
      }
    }
  }
  return window > 1 ? window : std::max(1, threads);
}

RooflineResult measure_roofline(std::span<const ChunkRef> all_chunks,
                                const RooflineOptions& options) {
  RooflineResult result;
  result.threads = std::max(1, options.threads);
  result.reads_in_flight = options.reads_in_flight > 0 ? options.reads_in_flight : result.threads;
  result.decode_parallelism = std::min(result.threads, std::max(1, options.usable_cores));
  result.chunks_total = all_chunks.size();

  // Stored sizes first: missing chunks are fill values, not reads.
  std::vector<ChunkRef> present;
  std::vector<int64_t> stored_sizes;
  for (const ChunkRef& ref : all_chunks) {
    if (auto size = ref.nbytes ? ref.nbytes : ref.store().size(ref.key)) {
      present.push_back(ref);
      stored_sizes.push_back(static_cast<int64_t>(*size));
    } else {
      ++result.missing_chunks;
    }
  }
  if (present.empty()) return result;

  // An evenly spaced subset when the chunks would hold more than the cap in memory.
  int64_t nominal_decoded = 0;
  for (const ChunkRef& ref : present) nominal_decoded += ref.array->metadata().chunk_nbytes();
  size_t stride = 1;
  if (nominal_decoded > options.max_decoded_bytes && options.max_decoded_bytes > 0) {
    stride = static_cast<size_t>((nominal_decoded + options.max_decoded_bytes - 1) /
                                 options.max_decoded_bytes);
  }
  std::vector<ChunkRef> chunks;
  std::vector<int64_t> sizes;
  for (size_t i = 0; i < present.size(); i += stride) {
    chunks.push_back(present[i]);
    sizes.push_back(stored_sizes[i]);
  }
  result.chunks = chunks.size();
  const int64_t max_stored = *std::max_element(sizes.begin(), sizes.end());
  for (int64_t size : sizes) result.encoded_bytes += size;

  std::vector<std::string> paths;
  for (const ChunkRef& ref : chunks) {
    if (std::string path = file_path(ref); !path.empty()) paths.push_back(std::move(path));
  }
  if (!paths.empty()) result.page_cache_fraction = page_cache_resident_fraction(paths);
  const MachineInfo machine = describe_machine();
  result.fits_in_ram = result.encoded_bytes < machine.memory_available_bytes;

  // Read probe, with as many preads at once as the loader keeps reads in flight: every
  // reader's buffer is grown to the largest object and touched beforehand.
  ThreadPool pool(static_cast<size_t>(result.threads));
  ThreadPool read_pool(static_cast<size_t>(result.reads_in_flight));
  std::vector<ByteBuffer> buffers(read_pool.size());
  for (ByteBuffer& buffer : buffers) {
    buffer.resize(static_cast<size_t>(max_stored));
    std::memset(buffer.data(), 0, buffer.size());
  }
  const double best_read_s = best_seconds(options.repeats, [&] {
    if (options.cold) {
      evict_page_cache(paths);
      result.page_cache_after_eviction = page_cache_resident_fraction(paths);
    }
    read_pool.parallel_for(
        chunks.size(), [&](size_t i, size_t worker) { read_chunk(chunks[i], buffers[worker]); });
  });
  // The best pass counts, so data that fits in RAM is read from the page cache by then.
  const bool cached = !options.cold && (result.page_cache_fraction >= 0.95 ||
                                        (result.fits_in_ram && options.repeats > 1));
  if (paths.empty()) {
    result.read_source = "in-memory store";
  } else if (options.cold) {
    const double left = result.page_cache_after_eviction;
    result.read_source = left >= 0 && left <= 0.05 ? "storage (cold: evicted before each pass)"
                                                   : "storage? (eviction left pages resident)";
  } else {
    result.read_source = cached ? "page cache (memory bandwidth)" : "storage";
  }

  const double place_copy_gbps = measure_place_gbps(chunks, pool, options.repeats);
  const double place_gbps = options.place ? options.place(pool, options.repeats) : place_copy_gbps;
  if (options.place) result.place_step = options.place_step;

  if (options.known_decode_single_gbps > 0) {
    int64_t decoded = 0;
    for (const ChunkRef& ref : chunks) decoded += ref.array->metadata().chunk_nbytes();
    result.decoded_bytes = decoded;
    const double seconds = static_cast<double>(decoded) / (options.known_decode_single_gbps * 1e9);
    return finish(result, best_read_s, seconds, place_gbps, place_copy_gbps);
  }

  // Decode probe: the stored objects held in memory, decoded one after another on one thread.
  std::vector<ByteBuffer> stored(chunks.size());
  pool.parallel_for(chunks.size(), [&](size_t i, size_t) { read_chunk(chunks[i], stored[i]); });
  ByteBuffer out;
  CodecScratch scratch;
  std::vector<ShardIndexEntry> index;
  int64_t max_decoded = 0;
  for (const ChunkRef& ref : chunks) {
    max_decoded = std::max(max_decoded, ref.array->metadata().chunk_nbytes());
  }
  out.resize(static_cast<size_t>(max_decoded));
  std::memset(out.data(), 0, out.size());
  const auto place_nothing = [](std::span<const std::byte>) {};
  decode_object(*chunks[0].array, stored[0].span(), out, scratch, index,
                place_nothing);  // warm contexts
  const double best_decode_s = best_seconds(options.repeats, [&] {
    int64_t decoded = 0;
    for (size_t i = 0; i < chunks.size(); ++i) {
      decoded +=
          decode_object(*chunks[i].array, stored[i].span(), out, scratch, index, place_nothing);
    }
    result.decoded_bytes = decoded;
  });

  result.loop_decode_gbps = measure_loop_gbps(chunks, pool, options.repeats, max_stored, false);
  result.loop_gbps = measure_loop_gbps(chunks, pool, options.repeats, max_stored, true);
  return finish(result, best_read_s, best_decode_s, place_gbps, place_copy_gbps);
}

nlohmann::json to_json(const RooflineResult& r) {
  return {{"threads", r.threads},
          {"reads_in_flight", r.reads_in_flight},
          {"decode_parallelism", r.decode_parallelism},
          {"chunks", r.chunks},
          {"chunks_total", r.chunks_total},
          {"missing_chunks", r.missing_chunks},
          {"stored_bytes", r.encoded_bytes},
          {"decoded_bytes", r.decoded_bytes},
          {"compression_ratio",
           r.encoded_bytes > 0 ? static_cast<double>(r.decoded_bytes) / r.encoded_bytes : 0.0},
          {"read_gbps", r.read_gbps},
          {"read_stored_gbps", r.read_stored_gbps},
          {"decode_single_gbps", r.decode_single_gbps},
          {"decode_gbps", r.decode_gbps},
          {"place_gbps", r.place_gbps},
          {"place_copy_gbps", r.place_copy_gbps},
          {"place_step", r.place_step},
          {"decode_limit_gbps", r.decode_limit_gbps},
          {"combined_gbps", r.combined_gbps},
          {"loop_decode_gbps",
           r.loop_decode_gbps > 0 ? nlohmann::json(r.loop_decode_gbps) : nlohmann::json(nullptr)},
          {"loop_gbps", r.loop_gbps > 0 ? nlohmann::json(r.loop_gbps) : nlohmann::json(nullptr)},
          {"page_cache_fraction", r.page_cache_fraction},
          {"fits_in_ram", r.fits_in_ram},
          {"read_source", r.read_source},
          {"read_overlaps", r.read_overlaps},
          {"page_cache_after_eviction", r.page_cache_after_eviction >= 0
                                            ? nlohmann::json(r.page_cache_after_eviction)
                                            : nlohmann::json(nullptr)},
          {"bounding_step", r.bounding_step},
          {"mapped", r.mapped}};
}

std::string bounding_step(const RooflineResult& r) {
  const double read = r.read_gbps > 0 ? r.read_gbps : 1e300;
  const double decode = r.decode_gbps > 0 ? r.decode_gbps : 1e300;
  const double place = r.place_gbps > 0 ? r.place_gbps : 1e300;
  if (read <= decode && read <= place) {
    return r.read_source.starts_with("page cache") ? "read" : "storage";
  }
  return decode <= place ? "decode" : "placement";
}

}  // namespace chute::bench
