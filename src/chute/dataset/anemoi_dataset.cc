#include "chute/dataset/anemoi_dataset.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "chute/array/read_plan.h"
#include "chute/dataset/rows_to_columns.h"
#include "chute/util/error.h"
#include "chute/util/float16.h"
#include "chute/util/thread_pool.h"

namespace chute {
namespace {

constexpr int64_t kCellTile = 256;  // cells transposed at a time (variables-last)

[[noreturn]] void invalid(const std::string& message) {
  fail(ErrorCode::kInvalidArgument, "anemoi dataset: {}", message);
}

bool supported_output(DataType t) {
  return t == DataType{DTypeKind::kFloat, 4} || t == DataType{DTypeKind::kFloat, 2} ||
         t == DataType{DTypeKind::kBFloat, 2};
}

// n stored values (float32, float64 or float16) as float32.
void load(const std::byte* src, DataType type, int64_t n, float* out) {
  if (type.size == 4) {
    std::memcpy(out, src, static_cast<size_t>(n) * 4);
  } else if (type.size == 8) {
    for (int64_t i = 0; i < n; ++i) {
      double v;
      std::memcpy(&v, src + 8 * i, 8);
      out[i] = static_cast<float>(v);
    }
  } else {
    for (int64_t i = 0; i < n; ++i) {
      uint16_t v;
      std::memcpy(&v, src + 2 * i, 2);
      out[i] = half_to_float(v);
    }
  }
}

// Writes float32 `v` as `type` at element `i` of `out`.
inline void store(std::byte* out, DataType type, int64_t i, float v) {
  if (type.size == 4) {
    std::memcpy(out + 4 * i, &v, 4);
  } else {
    const uint16_t bits = type.kind == DTypeKind::kBFloat ? float_to_bfloat16(v) : float_to_half(v);
    std::memcpy(out + 2 * i, &bits, 2);
  }
}

}  // namespace

AnemoiDataset::AnemoiDataset(AnemoiOptions options) : options_(std::move(options)) {
  const AnemoiOptions& o = options_;
  if (o.sources.empty()) invalid("no data arrays");
  if (!o.source_names.empty() && o.source_names.size() != o.sources.size()) {
    invalid("source_names must name every source");
  }
  auto name = [&](size_t s) {
    return s < o.source_names.size() ? o.source_names[s] : o.sources[s]->name();
  };
  for (size_t s = 0; s < o.sources.size(); ++s) {
    if (!o.sources[s]) invalid(fmt::format("source {} is null", s));
    const ArrayMetadata& m = o.sources[s]->metadata();
    if (m.rank() != 4) {
      invalid(
          fmt::format("'{}': array 'data' has {} dimensions, expected 4 (time, variable, "
                      "ensemble, cell)",
                      name(s), m.rank()));
    }
    const DataType t = m.data_type;
    if (t.is_time() || t.kind != DTypeKind::kFloat) {
      invalid(fmt::format("'{}': array 'data' has dtype {}, expected float32 (or float16/64)",
                          name(s), t.name()));
    }
    if (s == 0) {
      stored_type_ = t;
      stored_members_ = m.shape[2];
      stored_cells_ = m.shape[3];
    } else if (t != stored_type_ || m.shape[2] != stored_members_ || m.shape[3] != stored_cells_) {
      invalid(
          fmt::format("'{}' has data of dtype {} with {} ensemble members and {} cells, but "
                      "'{}' has {} with {} and {}: they cannot be combined",
                      name(s), t.name(), m.shape[2], m.shape[3], name(0), stored_type_.name(),
                      stored_members_, stored_cells_));
    }
  }
  item_ = stored_type_.size;
  members_ = o.members;
  if (members_.empty()) {
    for (int64_t e = 0; e < stored_members_; ++e) members_.push_back(e);
  }
  for (int64_t e : members_) {
    if (e < 0 || e >= stored_members_) {
      invalid(fmt::format("ensemble member {} is outside the {} members of '{}'", e,
                          stored_members_, name(0)));
    }
  }
  const int64_t cell_end = o.cell_end < 0 ? stored_cells_ : o.cell_end;
  if (o.cell_begin < 0 || o.cell_begin >= cell_end || cell_end > stored_cells_) {
    invalid(fmt::format("cells [{}, {}) are not inside the {} cells of '{}'", o.cell_begin,
                        o.cell_end, stored_cells_, name(0)));
  }
  cells_ = cell_end - o.cell_begin;
  if (o.num_variables < 1) invalid("the dataset has no variables");
  if (o.layouts.empty()) invalid("no layouts");
  for (size_t l = 0; l < o.layouts.size(); ++l) {
    const AnemoiOptions::Layout& layout = o.layouts[l];
    int64_t rows = 0;
    for (const AnemoiOptions::Read& r : layout.reads) {
      if (r.source < 0 || r.source >= static_cast<int64_t>(o.sources.size())) {
        invalid(fmt::format("layout {} reads source {} of {}", l, r.source, o.sources.size()));
      }
      const int64_t vars = o.sources[static_cast<size_t>(r.source)]->metadata().shape[1];
      if (r.var_begin < 0 || r.var_begin >= r.var_end || r.var_end > vars) {
        invalid(fmt::format("layout {} reads variables [{}, {}) of '{}', which has {}", l,
                            r.var_begin, r.var_end, name(static_cast<size_t>(r.source)), vars));
      }
      rows += r.var_end - r.var_begin;
    }
    if (static_cast<int64_t>(layout.rows.size()) != o.num_variables) {
      invalid(fmt::format("layout {} places {} variables, expected {}", l, layout.rows.size(),
                          o.num_variables));
    }
    for (int64_t row : layout.rows) {
      if (row < 0 || row >= rows) invalid(fmt::format("layout {}: row {} of {}", l, row, rows));
    }
    max_rows_ = std::max(max_rows_, rows);
  }
  const auto dates = static_cast<int64_t>(o.date_layout.size());
  if (dates < 1) invalid("no dates");
  if (static_cast<int64_t>(o.date_time_offsets.size()) != dates + 1 ||
      o.date_time_offsets.front() != 0 ||
      o.date_time_offsets.back() != static_cast<int64_t>(o.date_times.size())) {
    invalid("date_time_offsets must hold one offset per date and the end");
  }
  for (int64_t k = 0; k < dates; ++k) {
    const int64_t l = o.date_layout[static_cast<size_t>(k)];
    if (l < 0 || l >= static_cast<int64_t>(o.layouts.size())) {
      invalid(fmt::format("date {} has layout {} of {}", k, l, o.layouts.size()));
    }
    const AnemoiOptions::Layout& layout = o.layouts[static_cast<size_t>(l)];
    const int64_t first = o.date_time_offsets[static_cast<size_t>(k)];
    if (o.date_time_offsets[static_cast<size_t>(k) + 1] - first !=
        static_cast<int64_t>(layout.reads.size())) {
      invalid(fmt::format("date {} has times for {} reads, its layout has {}", k,
                          o.date_time_offsets[static_cast<size_t>(k) + 1] - first,
                          layout.reads.size()));
    }
    for (size_t r = 0; r < layout.reads.size(); ++r) {
      const int64_t t = o.date_times[static_cast<size_t>(first) + r];
      const auto& source = o.sources[static_cast<size_t>(layout.reads[r].source)];
      if (t < 0 || t >= source->metadata().shape[0]) {
        invalid(fmt::format("date {} reads time {} of '{}', which has {} dates", k, t,
                            name(static_cast<size_t>(layout.reads[r].source)),
                            source->metadata().shape[0]));
      }
    }
  }
  if (o.input_offsets.empty()) invalid("no input steps");
  if (o.sample_dates.empty()) invalid("no samples (no reference date has all its steps)");
  distinct_offsets_ = o.input_offsets;
  distinct_offsets_.insert(distinct_offsets_.end(), o.target_offsets.begin(),
                           o.target_offsets.end());
  std::sort(distinct_offsets_.begin(), distinct_offsets_.end());
  distinct_offsets_.erase(std::unique(distinct_offsets_.begin(), distinct_offsets_.end()),
                          distinct_offsets_.end());
  for (int64_t r : o.sample_dates) {
    if (r + distinct_offsets_.front() < 0 || r + distinct_offsets_.back() >= dates) {
      invalid(fmt::format("sample date {} with offsets [{}, {}] is outside the {} dates", r,
                          distinct_offsets_.front(), distinct_offsets_.back(), dates));
    }
  }
  auto block_of = [&](int64_t offset) {
    return static_cast<size_t>(
        std::lower_bound(distinct_offsets_.begin(), distinct_offsets_.end(), offset) -
        distinct_offsets_.begin());
  };
  for (int64_t d : o.input_offsets) input_blocks_.push_back(block_of(d));
  for (int64_t d : o.target_offsets) target_blocks_.push_back(block_of(d));
  auto check_variables = [&](const std::vector<int64_t>& vars, const char* what, bool required) {
    if (required && vars.empty()) invalid(fmt::format("no {}", what));
    for (int64_t v : vars) {
      if (v < 0 || v >= o.num_variables) {
        invalid(fmt::format("{}: variable {} of {}", what, v, o.num_variables));
      }
    }
  };
  check_variables(o.input_variables, "input variables", true);
  check_variables(o.target_variables, "target variables", !o.target_offsets.empty());
  if (!o.mul.empty() || !o.add.empty()) {
    if (static_cast<int64_t>(o.mul.size()) != o.num_variables || o.mul.size() != o.add.size()) {
      invalid(fmt::format("mul and add must hold {} values each, got {} and {}", o.num_variables,
                          o.mul.size(), o.add.size()));
    }
  }
  if (!supported_output(o.output_dtype)) {
    invalid(fmt::format("output dtype must be float32, float16 or bfloat16, got {}",
                        o.output_dtype.name()));
  }
  const int64_t e = members();
  auto shape = [&](size_t steps, size_t vars) {
    return o.variables_first ? std::vector<int64_t>{static_cast<int64_t>(steps),
                                                    static_cast<int64_t>(vars), e, cells_}
                             : std::vector<int64_t>{static_cast<int64_t>(steps), e, cells_,
                                                    static_cast<int64_t>(vars)};
  };
  outputs_.push_back(OutputSpec{"inputs", o.output_dtype,
                                shape(o.input_offsets.size(), o.input_variables.size())});
  if (!o.target_offsets.empty()) {
    outputs_.push_back(OutputSpec{"targets", o.output_dtype,
                                  shape(o.target_offsets.size(), o.target_variables.size())});
  }
  // The normalisation of each output's variables, in their order (none without o.mul).
  for (const auto* vars : {&o.input_variables, &o.target_variables}) {
    auto& [mul, add] = output_maps_.emplace_back();
    if (o.mul.empty()) continue;
    for (int64_t v : *vars) {
      mul.push_back(o.mul[static_cast<size_t>(v)]);
      add.push_back(o.add[static_cast<size_t>(v)]);
    }
  }
  slot_bytes_ = header_bytes() + static_cast<int64_t>(distinct_offsets_.size()) * block_bytes();
  staging_.push_back(OutputSpec{"anemoi_staging", DataType{DTypeKind::kUInt, 1}, {slot_bytes_}});
}

int64_t AnemoiDataset::stored_bytes_per_sample() const {
  int64_t rows = 0;
  for (int64_t d : distinct_offsets_) {
    const int64_t k = options_.sample_dates.front() + d;
    const auto& layout = options_.layouts[static_cast<size_t>(options_.date_layout[k])];
    for (const auto& r : layout.reads) rows += r.var_end - r.var_begin;
  }
  return rows * members() * cells_ * item_;
}

void AnemoiDataset::plan(int64_t sample, int64_t slot, const BatchMemory& memory,
                         ReadPlan& plan) const {
  const AnemoiOptions& o = options_;
  std::byte* slot_base = memory.staging[0] + slot * slot_bytes_;
  const int64_t reference = o.sample_dates[static_cast<size_t>(sample)];
  const int64_t e = members();
  // Consecutive stored members are one box.
  std::vector<std::pair<int64_t, int64_t>> member_runs;  // (first stored member, count)
  for (size_t i = 0; i < members_.size(); ++i) {
    if (!member_runs.empty() &&
        member_runs.back().first + member_runs.back().second == members_[i]) {
      ++member_runs.back().second;
    } else {
      member_runs.emplace_back(members_[i], 1);
    }
  }
  // Each date's reads are one finishing part (finish_part): tag + b, where the caller tags.
  const int64_t tag = plan.target_tag();
  for (size_t b = 0; b < distinct_offsets_.size(); ++b) {
    if (tag >= 0) plan.set_target_tag(tag + static_cast<int64_t>(b));
    const int64_t date = reference + distinct_offsets_[b];
    const int64_t layout_index = o.date_layout[static_cast<size_t>(date)];
    std::memcpy(slot_base + 8 * static_cast<int64_t>(b), &layout_index, 8);
    const auto& layout = o.layouts[static_cast<size_t>(layout_index)];
    std::byte* block = slot_base + header_bytes() + static_cast<int64_t>(b) * block_bytes();
    int64_t row = 0;
    for (size_t r = 0; r < layout.reads.size(); ++r) {
      const AnemoiOptions::Read& read = layout.reads[r];
      const int64_t t = o.date_times[static_cast<size_t>(o.date_time_offsets[date]) + r];
      const Array& array = *o.sources[static_cast<size_t>(read.source)];
      const int64_t rows = read.var_end - read.var_begin;
      int64_t member_position = 0;
      for (const auto& [first, count] : member_runs) {
        const int64_t start[4] = {t, read.var_begin, first, o.cell_begin};
        StridedView dst;
        dst.data = block + ((row * e + member_position) * cells_) * item_;
        dst.shape = {1, rows, count, cells_};
        dst.byte_strides = {rows * e * cells_ * item_, e * cells_ * item_, cells_ * item_, item_};
        plan.add(array, start, dst, fmt::format("sample {} (date {}, time {})", sample, date, t));
        member_position += count;
      }
      row += rows;
    }
  }
  plan.set_target_tag(tag);
}

void AnemoiDataset::place(size_t k, const std::byte* slot_in, std::byte* slot_out,
                          int64_t only_block) const {
  const AnemoiOptions& o = options_;
  const bool inputs = k == 0;
  const std::vector<int64_t>& vars = inputs ? o.input_variables : o.target_variables;
  const std::vector<size_t>& blocks = inputs ? input_blocks_ : target_blocks_;
  const auto nv = static_cast<int64_t>(vars.size());
  const int64_t e = members();
  const DataType out_type = o.output_dtype;
  const int64_t out_item = out_type.size;
  const int64_t tile_cells = std::min(cells_, kCellTile);
  const auto& [mul, add] = output_maps_[k];
  // Per worker, reused: place() runs once per date and output of every sample.
  thread_local std::vector<const float*> rows;
  thread_local std::vector<float> converted, tile;
  rows.resize(static_cast<size_t>(nv));
  // float32 output variables-last is written in place; the other cases go through a tile.
  if (item_ != 4) converted.resize(static_cast<size_t>(nv * tile_cells));
  if (!o.variables_first && out_item != 4) tile.resize(static_cast<size_t>(nv * tile_cells));
  for (size_t s = 0; s < blocks.size(); ++s) {
    if (only_block >= 0 && blocks[s] != static_cast<size_t>(only_block)) continue;
    int64_t layout_index;
    std::memcpy(&layout_index, slot_in + 8 * static_cast<int64_t>(blocks[s]), 8);
    const auto& layout = o.layouts[static_cast<size_t>(layout_index)];
    const std::byte* block =
        slot_in + header_bytes() + static_cast<int64_t>(blocks[s]) * block_bytes();
    std::byte* step_out = slot_out + static_cast<int64_t>(s) * nv * e * cells_ * out_item;
    for (int64_t m = 0; m < e; ++m) {
      for (int64_t c0 = 0; c0 < cells_; c0 += kCellTile) {
        const int64_t n = std::min(kCellTile, cells_ - c0);
        for (int64_t j = 0; j < nv; ++j) {
          const int64_t r = layout.rows[static_cast<size_t>(vars[static_cast<size_t>(j)])];
          const std::byte* src = block + ((r * e + m) * cells_ + c0) * item_;
          if (item_ == 4) {
            rows[static_cast<size_t>(j)] = reinterpret_cast<const float*>(src);
          } else {
            float* row = converted.data() + j * tile_cells;
            load(src, stored_type_, n, row);
            rows[static_cast<size_t>(j)] = row;
          }
        }
        const float* mul_p = mul.empty() ? nullptr : mul.data();
        const float* add_p = add.empty() ? nullptr : add.data();
        if (o.variables_first) {  // (step, variable, member, cell)
          for (int64_t j = 0; j < nv; ++j) {
            const float* row = rows[static_cast<size_t>(j)];
            std::byte* dst = step_out + ((j * e + m) * cells_ + c0) * out_item;
            if (out_item == 4 && mul_p == nullptr) {
              std::memcpy(dst, row, static_cast<size_t>(n) * 4);
            } else if (out_item == 4) {
              auto* d = reinterpret_cast<float*>(dst);
              for (int64_t i = 0; i < n; ++i) d[i] = row[i] * mul_p[j] + add_p[j];
            } else {
              for (int64_t i = 0; i < n; ++i) {
                store(dst, out_type, i, mul_p ? row[i] * mul_p[j] + add_p[j] : row[i]);
              }
            }
          }
          continue;
        }
        // (step, member, cell, variable)
        std::byte* dst = step_out + ((m * cells_ + c0) * nv) * out_item;
        if (out_item == 4) {
          detail::rows_to_columns(rows.data(), mul_p, add_p, nv, n, reinterpret_cast<float*>(dst),
                                  nv);
        } else {
          detail::rows_to_columns(rows.data(), mul_p, add_p, nv, n, tile.data(), nv);
          for (int64_t i = 0; i < n * nv; ++i) store(dst, out_type, i, tile[i]);
        }
      }
    }
  }
}

void AnemoiDataset::finish_sample(const BatchMemory& memory, int64_t slot) const {
  finish_part(memory, slot, -1);  // every date
}

void AnemoiDataset::finish_part(const BatchMemory& memory, int64_t slot, int64_t part) const {
  const std::byte* slot_in = memory.staging[0] + slot * slot_bytes_;
  for (size_t k = 0; k < outputs_.size(); ++k) {
    place(k, slot_in, memory.outputs[k] + slot * outputs_[k].sample_nbytes(), part);
  }
}

void AnemoiDataset::finish(const BatchMemory& memory, ThreadPool* pool) const {
  if (pool) {
    pool->parallel_for(static_cast<size_t>(memory.batch_size), [&](size_t slot, size_t) {
      finish_sample(memory, static_cast<int64_t>(slot));
    });
  } else {
    for (int64_t slot = 0; slot < memory.batch_size; ++slot) finish_sample(memory, slot);
  }
}

std::string AnemoiDataset::describe() const {
  const AnemoiOptions& o = options_;
  return fmt::format(
      "anemoi: {} samples of {} input and {} target steps, {} of {} variables in, {} out, {} "
      "members, {} cells, {} source(s) (first '{}'), {}{}",
      num_samples(), o.input_offsets.size(), o.target_offsets.size(), o.input_variables.size(),
      o.num_variables, o.target_variables.size(), members(), cells_, o.sources.size(),
      o.source_names.empty() ? o.sources[0]->name() : o.source_names[0], o.output_dtype.name(),
      o.variables_first ? ", variables first" : "");
}

}  // namespace chute
