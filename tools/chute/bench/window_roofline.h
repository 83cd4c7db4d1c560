#pragma once
// The windows' (W2) place step for the roofline (roofline.h): the placement the loader runs for
// every staged window, timed alone. It is WindowDataset::place_sample, the code finish_sample()
// runs: CF decoding, normalisation, the cast to the output dtype and, channels-last, the
// interleave. Each worker places from one window's staged planes that it holds warm (read and
// decoded once before timing, as the crop roofline places from a cache-resident decoded chunk)
// into the window's slot of a batch-sized output buffer in memory: the loader's threads, no
// reads, no pipeline scheduling; the best of `repeats` passes over one batch. The rate counts
// decoded chunk bytes (decoded_bytes_per_sample() a window), as the read and decode steps do.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "chute/dataset/window_dataset.h"
#include "chute/util/thread_pool.h"

namespace chute::bench {

struct WindowPlacement {
  int64_t samples = 0;        // windows placed a pass (the batch)
  int64_t output_bytes = 0;   // output bytes the last pass wrote (place_sample calls × a window)
  int64_t decoded_bytes = 0;  // samples × decoded_bytes_per_sample()
  double seconds = 0;         // the best pass
  double gbps = 0;            // decoded_bytes / seconds, 10^9 bytes/s
  /// Every output of slot 0 after the last pass, output after output (for checks: every
  /// worker holds the planes of the batch's first window, so each slot is that window).
  std::vector<std::byte> first_slot;
};

/// Times the placement of `batch` (sample numbers; the planes of batch[0] are what every
/// worker places) on `pool`'s workers. Throws kInvalidArgument when the dataset places nothing
/// after the reads (not staged()) or the batch is empty.
WindowPlacement measure_window_placement(const WindowDataset& dataset,
                                         std::span<const int64_t> batch, ThreadPool& pool,
                                         int repeats);

}  // namespace chute::bench
