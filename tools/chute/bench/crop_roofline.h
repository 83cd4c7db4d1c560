#pragma once
// The roofline of W3 crops, in samples/s on the same crops the loader read: the steps the
// loader runs for every chunk a crop touches, on `threads` workers, one batch plan at a time:
//   read    = the store reads of the touched chunks (the bytes the loader reads: only the
//             ranges a crop needs where the codec allows), timed inside a pass that also
//             decodes (Array::load), so it sees the same page cache;
//   decode  = the codec chain on those bytes, from the same pass;
//   place   = the strided copies that put each chunk's part of each crop into the batch with
//             the crop's transform (negative / permuted strides), from a cache-resident decoded
//             chunk: measured alone;
//   combined = loader_limit (roofline.h): 1/(1/read + 1/decode + 1/place), the limit of workers
//             that do the three; min(read, 1/(1/decode + 1/place)) when the reads come from
//             storage (cold) and the read engine kept every one in flight beside the workers
//             (`read_overlaps`: chunks read whole; chunks read in part and mapped sources are
//             read by the worker that decodes or copies them, so their times add);
//   loop    = the three as one loop (ReadPlan::execute of each batch's plan, no pipeline):
//             what a plain C loop over the same work reaches.
// Rates are crops (samples) per second; GB/s figures count the crops' bytes.

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <vector>

#include "chute/dataset/crop_dataset.h"

namespace chute::bench {

struct CropRooflineResult {
  int threads = 1;
  int64_t samples = 0;
  int64_t sample_bytes = 0;  // output bytes of one crop (all arrays)
  int64_t chunk_reads = 0;   // chunk tasks over all batch plans
  double read_samples_per_s = 0;
  double decode_samples_per_s = 0;
  double place_samples_per_s = 0;
  double combined_samples_per_s = 0;
  /// Reads from storage (cold), every one in flight beside the decode/place workers: see
  /// combined.
  bool read_overlaps = false;
  /// Warm crops of mapped sources (.npy, contiguous HDF5): the loader copies each piece out of
  /// the mapping straight to its transformed place in one pass that stages the far-apart rows
  /// in L1 with the next ones prefetched, so memory reads run under the transposes and the
  /// limit is the slower half, min(read, place), not their sum.
  bool fused_mapped_copy = false;
  double loop_samples_per_s = 0;
  double bytes_read_per_sample = 0;
  /// Decoded bytes per crop, whole blosc blocks counted (the crop's own bytes: sample_bytes).
  double bytes_decoded_per_sample = 0;
};

/// Measures the crop roofline on `batches` (sample numbers of `epoch`s in order:
/// batch b belongs to epoch b / batches_per_epoch) with the loader's seed. `before_reads`, when
/// set, runs (untimed) before each pass that reads a batch's chunks: `--page-cache cold` drops
/// the dataset's pages there, so the probes read from storage as the loader's trials do.
CropRooflineResult measure_crop_roofline(const CropDataset& dataset,
                                         const std::vector<std::vector<int64_t>>& batches,
                                         uint64_t seed, int64_t batches_per_epoch, int threads,
                                         const std::function<void()>& before_reads = {});

/// The crops of `batches` as [corner..., transform] rows (for the peers).
std::vector<std::vector<std::vector<int64_t>>> crops_of_batches(
    const CropDataset& dataset, const std::vector<std::vector<int64_t>>& batches, uint64_t seed,
    int64_t batches_per_epoch);

nlohmann::json to_json(const CropRooflineResult& result);

}  // namespace chute::bench
