#pragma once
// `chute bench STORE --anemoi`: an anemoi dataset (a Zarr group whose `data` array is (time,
// variable, ensemble, cell)) cut into samples as anemoi-training cuts them, for the bench. One
// store, read by its attributes: `variables`, `start_date`, `frequency`, `missing_dates`, and the
// `mean`/`stdev` arrays. The Python layer (chute.anemoi) resolves the full set of
// anemoi-datasets' options (concat, join, dates, frequency); the bench measures the read.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "chute/dataset/anemoi_dataset.h"

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

/// Seconds since 1970-01-01 of "YYYY-MM-DD", "YYYY-MM-DDTHH", "YYYY-MM-DDTHH:MM[:SS]" (a space
/// for the T too); kInvalidArgument naming `what` otherwise.
int64_t parse_iso_seconds(const std::string& text, const std::string& what);

}  // namespace chute::bench
