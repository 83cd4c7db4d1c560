#pragma once
// The machine's limit for a given set of chunks, measured in the same run as the loader:
//   read     = pread of the chunks' stored objects into warm buffers on `threads` workers;
//   decode   = the single-threaded decode rate (codec chain into a warm buffer) × the number of
//              threads that can run at once (min(threads, usable cores));
//   place    = copying each chunk's decoded bytes from a cache-resident buffer into its own slot
//              of a batch-sized buffer in memory, on `threads` workers: the least any layout
//              costs to land decoded data in a batch (for chunks decoded straight into the batch
//              it is the price of the decoder writing to memory instead of to cache). Where the
//              workload's placement must also transform (windows: CF decoding, normalisation,
//              the cast, the interleave), the caller passes that placement (RooflineOptions::
//              place, window_roofline.h), as the crop roofline places with its transforms; the
//              copy is then still measured and reported as place_copy_gbps;
//   combined = what workers that each read, decode and place a chunk can reach:
//              1/(1/read + 1/decode + 1/place). decode_limit leaves placement out.
// Each step above runs alone, with its buffers hot in cache, so their combination is an upper
// bound. The plain loops are measured as well: `threads` workers that each pread a chunk into
// a warm buffer and decode it into another (loop_decode), then copy it into its slot of a
// batch-sized buffer (loop). They pay what the steps do to each other's caches, as any reader
// does, and are the "plain C loop of pread + single-threaded decode" baseline itself.
// All rates are GB/s of DECODED bytes (10^9 bytes/s), so they compare directly with the loader's
// GB/s. When the chunks sit in the page cache the read rate is a memory-bandwidth figure, not a
// storage one: the result says which it is.

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "chute/array/array.h"
#include "chute/array/read_plan.h"
#include "chute/util/thread_pool.h"

namespace chute::bench {

/// One stored object to probe: a chunk (or, for sharded arrays, a whole shard) of an array.
struct ChunkRef {
  const Array* array = nullptr;
  std::string key;  // Array::storage_key of the chunk or shard
  /// Chunks stored inside a larger value (HDF5/NetCDF-4 chunks in their file): the byte range
  /// of the chunk in `key`'s value; nullopt: the whole value is the chunk (or shard).
  uint64_t offset = 0;
  std::optional<uint64_t> nbytes;
  const Store* range_store = nullptr;  // with nbytes: the store holding `key` (else array's)
  const Store& store() const { return range_store ? *range_store : array->store(); }
};

/// The distinct stored objects behind a set of chunk tasks (e.g. every ReadPlan of the batches
/// the benchmark read). Inner chunks of a shard map to their shard; chunks inside one file
/// (HDF5, NetCDF-4) are told apart by their byte range; chunks never written and arrays copied
/// out of a mapping (contiguous HDF5, .npy), which have no chunks to read, are left out.
std::vector<ChunkRef> unique_chunks(std::span<const ChunkTask> tasks);

/// The distinct stored objects holding the boxes [starts[i], starts[i] + shapes[i]) of
/// `array`, in order of first appearance. Boxes are checked as reads check them
/// (Array::check_box).
std::vector<ChunkRef> chunks_in_boxes(const Array& array,
                                      std::span<const std::vector<int64_t>> starts,
                                      std::span<const std::vector<int64_t>> shapes);

struct RooflineOptions {
  int threads = 1;
  int usable_cores = 1;
  int repeats = 3;                      // timed passes; the best counts
  int64_t max_decoded_bytes = 1 << 30;  // probe an evenly spaced subset above this
  /// When > 0, the single-threaded decode rate already measured on these chunks: the decode
  /// probe and the plain loops are skipped (sweeps re-measure only the read rate per thread
  /// count).
  double known_decode_single_gbps = 0;
  /// --page-cache cold: the chunks' files are evicted from the page cache before every read
  /// pass, so the read step is the storage's rate.
  bool cold = false;
  /// Parallel preads of the read pass: the reads the loader keeps in flight
  /// (reads_in_flight()); 0: `threads`.
  int reads_in_flight = 0;
  /// When set, the place step: the workload's own placement timed on the roofline's `threads`
  /// workers (the pool it is given), best of `repeats` passes, in GB/s of decoded bytes; the
  /// plain copy still runs, as place_copy_gbps. `place_step` says what it times.
  std::function<double(ThreadPool& pool, int repeats)> place;
  std::string place_step;
};

struct RooflineResult {
  int threads = 1;
  int reads_in_flight = 1;     // parallel preads of the read pass
  int decode_parallelism = 1;  // min(threads, usable cores)
  size_t chunks = 0;           // probed (after subsetting)
  size_t chunks_total = 0;     // before subsetting
  size_t missing_chunks = 0;   // absent from the store (fill value): not probed
  int64_t encoded_bytes = 0;
  int64_t decoded_bytes = 0;
  double read_gbps = 0;             // decoded-byte equivalent of the read pass
  double read_stored_gbps = 0;      // stored (compressed) bytes per second
  double decode_single_gbps = 0;    // one thread
  double decode_gbps = 0;           // × decode_parallelism
  double place_gbps = 0;            // the place step (`place_step`), `threads` workers
  double place_copy_gbps = 0;       // copy into a batch-sized buffer, `threads` workers
  std::string place_step = "copy";  // what place_gbps times: "copy" or options.place_step
  double decode_limit_gbps = 0;     // 1/(1/read + 1/decode); min(read, decode) when read_overlaps
  double combined_gbps = 0;         // the limit the loader is compared with (with placement)
  /// The read step is storage (cold, or data the page cache does not hold): its reads run
  /// beside the decode threads, so combined = min(read, 1/(1/decode + 1/place)) instead of
  /// 1/(1/read + 1/decode + 1/place).
  bool read_overlaps = false;
  double loop_decode_gbps = 0;            // measured loop: pread + decode; 0 when not measured
  double loop_gbps = 0;                   // measured loop: pread + decode + copy into a batch
  double page_cache_fraction = -1;        // of the probed files resident before the read pass
  bool fits_in_ram = false;               // the probed stored bytes < MemAvailable
  std::string read_source;                // "page cache (memory bandwidth)" or "storage"
  double page_cache_after_eviction = -1;  // cold: resident fraction right after evicting
  /// The slowest of the steps: "storage" (read, cold or from a store that is not the page
  /// cache), "read" (from the page cache), "decode" or "placement".
  std::string bounding_step;
  /// Arrays copied out of a file mapping (mapped_roofline.h): the read step is that copy, there
  /// is no decode step, and `chunks` counts the boxes copied.
  bool mapped = false;
};

/// How many reads the loader keeps in flight on `chunks` with `threads` decode threads and the
/// io_concurrency option (0: the stores' preference), as ReadPlan resolves it: a window of 1
/// means each decode thread reads its own chunks (`threads` reads at once).
int reads_in_flight(std::span<const ChunkRef> chunks, int threads, int io_concurrency);

/// Which of read / decode / place bounds `r` (the slowest rate), named as bounding_step is.
std::string bounding_step(const RooflineResult& r);

/// Measures the roofline on `chunks`. Throws when a chunk is corrupt (the same error the loader
/// would give). Precondition: every ref's array outlives the call.
RooflineResult measure_roofline(std::span<const ChunkRef> chunks, const RooflineOptions& options);

/// The limit of workers that run these steps one after another on each chunk:
/// 1 / (1/step_1 + 1/step_2 + ...); 0 when a step measured nothing (rate <= 0).
double combined_limit(std::initializer_list<double> step_gbps);

/// The limit of a loader whose read step runs at `read` and whose workers then run
/// `worker_steps` (decode, place) one after another on each chunk, in any one unit (GB/s,
/// samples/s). With `reads_overlap` (reads from storage, kept in flight by the read engine
/// while the workers decode and place) the slower side bounds it:
/// min(read, combined_limit(worker_steps)). Otherwise (reads from the page cache or memory:
/// copies on the workers' own cores) the times add: combined_limit({read, worker_steps...}).
/// 0 when a step measured nothing (rate <= 0).
double loader_limit(double read, std::initializer_list<double> worker_steps, bool reads_overlap);

nlohmann::json to_json(const RooflineResult& roofline);

}  // namespace chute::bench
