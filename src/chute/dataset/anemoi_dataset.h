#pragma once
// Samples of anemoi datasets (ECMWF's anemoi-datasets, NOAA-PSL's ufs2arco) cut as
// anemoi-training cuts them. An anemoi dataset is a Zarr group whose `data` array is
// (time, variable, ensemble, cell), a date's variables in one chunk, the grid flattened to cells.
//
// The Python layer (chute/_anemoi.py) resolves the user's view of one or more stores (variables
// selected or dropped, dates by start/end/frequency, concat along time, join of variables) into
// a virtual dataset of dates × variables, each date made of reads of stored variable ranges of
// one source array at one time (a Layout). This class reads and places its samples:
//
// Sample i has reference date r = sample_dates[i]; its input dates are r + input_offsets[s],
// its target dates r + target_offsets[s] (virtual date indices). Outputs, per sample:
//   "inputs"  (input steps, ensemble, cells, input variables), or with variables_first
//             (input steps, input variables, ensemble, cells);
//   "targets" likewise with the target steps and target variables (absent without targets).
// Values are x × mul[v] + add[v] in float32 (anemoi-training's normaliser; mul and add empty:
// as stored), then cast to float32, float16 or bfloat16.
//
// Reading: each read of each distinct date of a sample is one box [t, var_begin:var_end,
// members, cells] of its source, decoded into the sample's staging slot (a chunk holding the
// whole box decodes straight there); finish_sample() then gathers the chosen variables,
// normalises, transposes to variables-last and casts, cell tile by cell tile.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "chute/array/array.h"
#include "chute/array/dtype.h"
#include "chute/dataset/dataset.h"

namespace chute {

struct AnemoiOptions {
  /// The stored `data` arrays, each (time, variable, ensemble, cell), float32 (or float16/64,
  /// converted while staged). All share the ensemble and cell axes' lengths.
  std::vector<ArrayPtr> sources;
  /// Names for messages (the store path of each source).
  std::vector<std::string> source_names;

  /// One box of a date: stored variables [var_begin, var_end) of `source`.
  struct Read {
    int64_t source = 0;
    int64_t var_begin = 0, var_end = 0;
  };
  /// How a date is read: its reads, and for each virtual variable the row (variable position
  /// in the reads' ranges, concatenated in read order) that holds it.
  struct Layout {
    std::vector<Read> reads;
    std::vector<int64_t> rows;  // one per virtual variable
  };
  std::vector<Layout> layouts;
  /// Per virtual date: its layout, and the stored time index of each of that layout's reads
  /// (date_times[date_time_offsets[k] + r] for read r of date k; offsets hold dates + 1).
  std::vector<int64_t> date_layout;
  std::vector<int64_t> date_times;
  std::vector<int64_t> date_time_offsets;
  int64_t num_variables = 0;  // of the virtual dataset

  /// Stored ensemble members read, in output order; all of them when empty.
  std::vector<int64_t> members;
  /// Cells [cell_begin, cell_end) are read (reader groups split them); cell_end -1: all.
  int64_t cell_begin = 0, cell_end = -1;

  std::vector<int64_t> sample_dates;  // the reference date (virtual index) of each sample
  std::vector<int64_t> input_offsets = {0};
  std::vector<int64_t> target_offsets = {1};  // empty: no "targets" output
  std::vector<int64_t> input_variables;       // virtual variable indices, in output order
  std::vector<int64_t> target_variables;
  /// Normalisation per virtual variable (both empty: none).
  std::vector<float> mul, add;
  bool variables_first = false;
  DataType output_dtype{DTypeKind::kFloat, 4};  // float32, float16 or bfloat16
};

class AnemoiDataset final : public Dataset {
 public:
  /// Throws kInvalidArgument naming the option (and source) when the options do not describe a
  /// consistent virtual dataset: sources not 4-d or of different ensemble/cell lengths, a read
  /// outside its source, a row outside its layout, a date or offset outside the dates, a
  /// variable index outside the virtual variables, mul/add of the wrong length, an output
  /// dtype that is not float32/float16/bfloat16, no samples.
  explicit AnemoiDataset(AnemoiOptions options);

  int64_t num_samples() const override {
    return static_cast<int64_t>(options_.sample_dates.size());
  }
  const std::vector<OutputSpec>& outputs() const override { return outputs_; }
  const std::vector<OutputSpec>& staging() const override { return staging_; }
  void plan(int64_t sample, int64_t slot, const BatchMemory& memory, ReadPlan& plan) const override;
  void finish(const BatchMemory& memory, ThreadPool* pool) const override;
  bool finishes_per_sample() const override { return true; }
  void finish_sample(const BatchMemory& memory, int64_t slot) const override;
  /// One part per distinct date: each date is placed as soon as it is read.
  int64_t finish_parts() const override { return static_cast<int64_t>(distinct_offsets_.size()); }
  /// `part` -1: every date (finish_sample).
  void finish_part(const BatchMemory& memory, int64_t slot, int64_t part) const override;
  std::string describe() const override;

  const AnemoiOptions& options() const { return options_; }
  int64_t cells() const { return cells_; }
  int64_t members() const { return static_cast<int64_t>(members_.size()); }
  /// Bytes of stored values a sample reads (every box of every distinct date).
  int64_t stored_bytes_per_sample() const;

 private:
  /// Staged slot: a header of one int64 per distinct date (the layout read for it), then one
  /// block of max_rows_ × members × cells values (stored dtype) per distinct date.
  int64_t header_bytes() const { return 8 * static_cast<int64_t>(distinct_offsets_.size()); }
  int64_t block_bytes() const { return max_rows_ * members() * cells_ * item_; }
  /// Places the steps of output `k` of one sample that come from distinct date `block` (every
  /// step when `block` is negative) from its staged slot.
  void place(size_t k, const std::byte* slot_in, std::byte* slot_out, int64_t block) const;

  AnemoiOptions options_;
  std::vector<int64_t> members_;                      // resolved (all when options gave none)
  std::vector<int64_t> distinct_offsets_;             // sorted union of input and target offsets
  std::vector<size_t> input_blocks_, target_blocks_;  // block of each step
  /// Per output (inputs, targets): each variable's (mul, add), empty without normalisation.
  std::vector<std::pair<std::vector<float>, std::vector<float>>> output_maps_;
  std::vector<OutputSpec> outputs_;
  std::vector<OutputSpec> staging_;
  int64_t cells_ = 0, stored_cells_ = 0, stored_members_ = 0;
  int64_t max_rows_ = 0;
  int64_t item_ = 4;  // bytes per stored value
  DataType stored_type_{DTypeKind::kFloat, 4};
  int64_t slot_bytes_ = 0;
};

}  // namespace chute
