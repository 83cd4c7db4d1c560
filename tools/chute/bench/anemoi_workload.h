#pragma once
// `chute bench STORE --anemoi`: an anemoi dataset (a Zarr group whose `data` array is (time,
// variable, ensemble, cell)) cut into samples as anemoi-training cuts them, for the bench. One
// store, read by its attributes: `variables`, `start_date`, `frequency`, `missing_dates`, and the
// `mean`/`stdev` arrays. The Python layer (chute.anemoi) resolves the full set of
// anemoi-datasets' options (concat, join, dates, frequency); the bench measures the read.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "chute/dataset/anemoi_dataset.h"
#include "chute/util/thread_pool.h"

namespace chute::bench {

struct AnemoiFlags {
  bool enabled = false;  // --anemoi
  int64_t multistep_input = 2;
  int64_t rollout = 1;
  int64_t timeincrement = 1;           // in dates
  std::string normalise = "mean-std";  // or "none"
};

struct AnemoiBench {
  std::shared_ptr<AnemoiDataset> dataset;
  std::vector<std::string> variables;  // selected, in output order
  std::vector<int64_t> sample_dates;   // reference date of each sample
  int64_t dates = 0, cells = 0, members = 0;
};

/// Opens the anemoi store at `path`; `select` (empty: every variable) in the order given,
/// `dtype` float32/float16/bfloat16, `variables_first` for (steps, variables, ensemble, cells).
/// Throws kInvalidArgument / kInvalidMetadata naming the store and the attribute.
AnemoiBench open_anemoi_bench(const std::string& path, const AnemoiFlags& flags,
                              const std::vector<std::string>& select, const std::string& dtype,
                              bool variables_first);

/// The roofline's place step for anemoi samples: AnemoiDataset::finish_sample (select,
/// normalise, transpose to variables last, cast), timed alone on `pool`'s workers from the
/// staged slots of `batch` (read and decoded once before timing, into memory as the loader
/// stages them) into a batch-sized output in memory; the best of `repeats` passes. GB/s of
/// stored bytes (stored_bytes_per_sample() a sample), as the read and decode steps count.
double measure_anemoi_finish_gbps(const AnemoiDataset& dataset, std::span<const int64_t> batch,
                                  ThreadPool& pool, int repeats);

/// Seconds since 1970-01-01 of "YYYY-MM-DD", "YYYY-MM-DDTHH", "YYYY-MM-DDTHH:MM[:SS]" (a space
/// for the T too); kInvalidArgument naming `what` otherwise.
int64_t parse_iso_seconds(const std::string& text, const std::string& what);

}  // namespace chute::bench
