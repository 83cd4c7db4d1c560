// anemoi samples: batches equal the formula of each source element placed as anemoi-training
// lays them out (steps, member, cell, variable), through a join of two sources whose dates read
// different times, chosen members and cells, normalisation, variables-first and bfloat16; and
// options that describe no consistent dataset are refused naming what is wrong.

#include "chute/dataset/anemoi_dataset.h"

#include <gtest/gtest.h>

#include "chute/format/test_util.h"
#include "chute/pipeline/batch_assembler.h"
#include "chute/pipeline/loader_test_support.h"
#include "chute/util/float16.h"

namespace chute {
namespace {

using namespace chute::loader_testing;
using chute::testing::expect_error;

constexpr int64_t kDates = 9, kMembers = 3, kCells = 300;

struct Fixture {
  std::shared_ptr<MemoryStore> store = std::make_shared<MemoryStore>();
  ArrayPtr a =
      make_float_array(store, "a", {kDates, 4, kMembers, kCells}, {1, 4, kMembers, kCells}, 1);
  ArrayPtr b =
      make_float_array(store, "b", {kDates + 2, 2, kMembers, kCells}, {1, 2, kMembers, kCells}, 2);

  // Virtual variables: a0 a1 a2 a3 b0 b1 (a join); date k reads a at k and b at k + 2.
  AnemoiOptions options() const {
    AnemoiOptions o;
    o.sources = {a, b};
    o.source_names = {"a.zarr", "b.zarr"};
    o.layouts = {{{{0, 0, 4}, {1, 0, 2}}, {0, 1, 2, 3, 4, 5}}};
    for (int64_t k = 0; k < kDates; ++k) {
      o.date_layout.push_back(0);
      o.date_times.push_back(k);
      o.date_times.push_back(k + 2);
      o.date_time_offsets.push_back(2 * k);
    }
    o.date_time_offsets.push_back(2 * kDates);
    o.num_variables = 6;
    o.sample_dates = {1, 4, 6};
    o.input_offsets = {-1, 0};
    o.target_offsets = {1, 2};
    o.input_variables = {5, 0, 3};
    o.target_variables = {1, 4};
    return o;
  }
};

// The stored value of virtual variable v at virtual date k, member m, cell c.
float stored(int64_t k, int64_t v, int64_t m, int64_t c) {
  if (v < 4) {
    const int64_t index[4] = {k, v, m, c};
    return value_at(1, index);
  }
  const int64_t index[4] = {k + 2, v - 4, m, c};
  return value_at(2, index);
}

std::vector<std::byte> assemble(const std::shared_ptr<AnemoiDataset>& dataset,
                                const std::vector<int64_t>& samples, size_t threads) {
  BatchAssembler assembler(dataset, static_cast<int64_t>(samples.size()), threads);
  std::vector<std::byte> buffer(assembler.layout().total_bytes);
  assembler.assemble(samples, buffer.data());
  std::vector<std::byte> out;
  // outputs only, in order
  for (size_t k = 0; k < dataset->outputs().size(); ++k) {
    const std::byte* begin = buffer.data() + assembler.layout().offsets[k];
    out.insert(
        out.end(), begin,
        begin + dataset->outputs()[k].sample_nbytes() * static_cast<int64_t>(samples.size()));
  }
  return out;
}

struct Expect {
  const AnemoiOptions& o;
  std::vector<int64_t> members;
  int64_t cell_begin, cells;
  // Value of output k, sample `sample` (slot), step s, member position e, cell c (relative),
  // variable position j.
  float operator()(size_t k, int64_t sample, size_t s, size_t e, int64_t c, size_t j) const {
    const auto& vars = k == 0 ? o.input_variables : o.target_variables;
    const auto& offsets = k == 0 ? o.input_offsets : o.target_offsets;
    const int64_t date = o.sample_dates[static_cast<size_t>(sample)] + offsets[s];
    const int64_t v = vars[j];
    float x = stored(date, v, members[e], cell_begin + c);
    if (!o.mul.empty()) x = x * o.mul[static_cast<size_t>(v)] + o.add[static_cast<size_t>(v)];
    return x;
  }
};

TEST(AnemoiDataset, JoinedSourcesPlacedVariablesLast) {
  Fixture f;
  AnemoiOptions o = f.options();
  for (bool normalise : {false, true}) {
    // Six inputs: four transposed in registers, two after; 300 cells: a tile of 256 and one of 44.
    o.input_variables = {5, 0, 3, 1, 2, 4};
    if (normalise) {
      o.mul = {0.5f, 2.0f, 1.0f, 0.25f, 3.0f, -1.0f};
      o.add = {1.0f, -2.0f, 0.0f, 5.0f, 0.5f, 7.0f};
    }
    auto dataset = std::make_shared<AnemoiDataset>(o);
    ASSERT_EQ(dataset->outputs().size(), 2u);
    EXPECT_EQ(dataset->outputs()[0].sample_shape, (std::vector<int64_t>{2, kMembers, kCells, 6}));
    EXPECT_EQ(dataset->outputs()[1].sample_shape, (std::vector<int64_t>{2, kMembers, kCells, 2}));
    const std::vector<int64_t> samples = {2, 0, 1, 2};
    for (size_t threads : {1, 3}) {
      const std::vector<std::byte> bytes = assemble(dataset, samples, threads);
      const auto* values = reinterpret_cast<const float*>(bytes.data());
      Expect expect{o, {0, 1, 2}, 0, kCells};
      size_t i = 0;
      for (size_t k = 0; k < 2; ++k) {
        const size_t nv = k == 0 ? 6 : 2;
        for (int64_t sample : samples) {
          for (size_t s = 0; s < 2; ++s) {
            for (size_t e = 0; e < kMembers; ++e) {
              for (int64_t c = 0; c < kCells; ++c) {
                for (size_t j = 0; j < nv; ++j, ++i) {
                  ASSERT_EQ(values[i], expect(k, sample, s, e, c, j))
                      << "output " << k << " sample " << sample << " step " << s << " member " << e
                      << " cell " << c << " variable " << j;
                }
              }
            }
          }
        }
      }
      EXPECT_EQ(i * 4, bytes.size());
    }
  }
}

TEST(AnemoiDataset, MembersCellsNormalisationVariablesFirstAndBfloat16) {
  Fixture f;
  AnemoiOptions o = f.options();
  o.members = {2, 0};
  o.cell_begin = 37;
  o.cell_end = 250;
  o.mul = {0.5f, 2.0f, 1.0f, 0.25f, 3.0f, -1.0f};
  o.add = {1.0f, -2.0f, 0.0f, 5.0f, 0.5f, 7.0f};
  o.target_offsets = {2};
  for (bool bf16 : {false, true}) {
    o.variables_first = true;
    o.output_dtype = bf16 ? kBFloat16 : kFloat32;
    auto dataset = std::make_shared<AnemoiDataset>(o);
    const int64_t cells = 250 - 37;
    EXPECT_EQ(dataset->outputs()[0].sample_shape, (std::vector<int64_t>{2, 3, 2, cells}));
    const std::vector<int64_t> samples = {1, 2};
    const std::vector<std::byte> bytes = assemble(dataset, samples, 2);
    Expect expect{o, {2, 0}, 37, cells};
    size_t i = 0;
    for (size_t k = 0; k < 2; ++k) {
      const size_t nv = k == 0 ? 3 : 2, steps = k == 0 ? 2 : 1;
      for (int64_t sample : samples) {
        for (size_t s = 0; s < steps; ++s) {
          for (size_t j = 0; j < nv; ++j) {
            for (size_t e = 0; e < 2; ++e) {
              for (int64_t c = 0; c < cells; ++c, ++i) {
                const float want = expect(k, sample, s, e, c, j);
                float got;
                if (bf16) {
                  uint16_t bits;
                  std::memcpy(&bits, bytes.data() + 2 * i, 2);
                  ASSERT_EQ(bits, float_to_bfloat16(want));
                } else {
                  std::memcpy(&got, bytes.data() + 4 * i, 4);
                  ASSERT_EQ(got, want) << k << " " << sample << " " << s << " " << j;
                }
              }
            }
          }
        }
      }
    }
    EXPECT_EQ(i * (bf16 ? 2 : 4), bytes.size());
  }
}

TEST(AnemoiDataset, WideVariablesLastInPartlyFilledBatches) {
  // Ten and eight variables (the 8 × 8 register transposes and the rows after them), two
  // members, 300 cells, normalised, float32 and bfloat16 (through the tile); a batch of 4
  // holding 3 samples, each placed date by date.
  auto store = std::make_shared<MemoryStore>();
  const ArrayPtr w = make_float_array(store, "w", {kDates, 10, 2, kCells}, {1, 10, 2, kCells}, 3);
  AnemoiOptions o;
  o.sources = {w};
  o.layouts = {{{{0, 0, 10}}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}}};
  for (int64_t k = 0; k < kDates; ++k) {
    o.date_layout.push_back(0);
    o.date_times.push_back(k);
    o.date_time_offsets.push_back(k);
  }
  o.date_time_offsets.push_back(kDates);
  o.num_variables = 10;
  o.sample_dates = {1, 3, 5, 7};
  o.input_offsets = {-1, 0};
  o.target_offsets = {1};
  o.input_variables = {9, 0, 3, 1, 2, 4, 5, 6, 7, 8};
  o.target_variables = {2, 7, 1, 4, 0, 3, 5, 6};
  for (int64_t v = 0; v < 10; ++v) {
    o.mul.push_back(0.5f + 0.25f * static_cast<float>(v));
    o.add.push_back(static_cast<float>(v) - 3.0f);
  }
  const std::vector<int64_t> samples = {3, 0, 2};
  for (bool bf16 : {false, true}) {
    o.output_dtype = bf16 ? kBFloat16 : kFloat32;
    auto dataset = std::make_shared<AnemoiDataset>(o);
    BatchAssembler assembler(dataset, 4, 2);
    std::vector<std::byte> buffer(assembler.layout().total_bytes);
    assembler.assemble(samples, buffer.data());
    const int64_t item = bf16 ? 2 : 4;
    for (size_t k = 0; k < 2; ++k) {
      const auto& vars = k == 0 ? o.input_variables : o.target_variables;
      const auto& offsets = k == 0 ? o.input_offsets : o.target_offsets;
      const std::byte* out = buffer.data() + assembler.layout().offsets[k];
      int64_t i = 0;
      for (int64_t sample : samples) {
        for (int64_t offset : offsets) {
          const int64_t date = o.sample_dates[static_cast<size_t>(sample)] + offset;
          for (int64_t m = 0; m < 2; ++m) {
            for (int64_t c = 0; c < kCells; ++c) {
              for (int64_t v : vars) {
                const int64_t index[4] = {date, v, m, c};
                const float want = value_at(3, index) * o.mul[static_cast<size_t>(v)] +
                                   o.add[static_cast<size_t>(v)];
                if (bf16) {
                  uint16_t bits;
                  std::memcpy(&bits, out + item * i, 2);
                  ASSERT_EQ(bits, float_to_bfloat16(want)) << k << " " << sample << " " << i;
                } else {
                  float got;
                  std::memcpy(&got, out + item * i, 4);
                  ASSERT_EQ(got, want) << k << " " << sample << " " << date << " " << c << " " << v;
                }
                ++i;
              }
            }
          }
        }
      }
    }
  }
}

TEST(AnemoiDataset, EachDateIsAFinishingPartOfItsSlot) {
  Fixture f;
  auto dataset = std::make_shared<AnemoiDataset>(f.options());
  const int64_t parts = dataset->finish_parts();
  ASSERT_EQ(parts, 4);  // distinct offsets -1, 0, 1, 2
  std::vector<std::vector<std::byte>> buffers;
  BatchMemory memory;
  memory.batch_size = 3;
  for (const auto* specs : {&dataset->outputs(), &dataset->staging()}) {
    for (const OutputSpec& spec : *specs) {
      buffers.emplace_back(static_cast<size_t>(spec.sample_nbytes() * memory.batch_size));
      (specs == &dataset->outputs() ? memory.outputs : memory.staging)
          .push_back(buffers.back().data());
    }
  }
  ReadPlan plan;
  plan.set_target_tag(2 * parts);  // slot 2, as the assembler tags it
  dataset->plan(0, 2, memory, plan);
  EXPECT_EQ(plan.target_tag(), 2 * parts);  // restored
  std::vector<int> targets_of_part(static_cast<size_t>(parts));
  for (const ChunkTask& task : plan.tasks()) {
    for (const ChunkTarget& target : task.targets) {
      ASSERT_GE(target.tag, 2 * parts);
      ASSERT_LT(target.tag, 3 * parts);
      ++targets_of_part[static_cast<size_t>(target.tag - 2 * parts)];
    }
  }
  for (int count : targets_of_part) EXPECT_EQ(count, 2);  // a and b of each date
  ReadPlan untagged;  // planned without tags (the roofline, the bench's chunk lists)
  dataset->plan(0, 0, memory, untagged);
  for (const ChunkTask& task : untagged.tasks()) {
    for (const ChunkTarget& target : task.targets) EXPECT_EQ(target.tag, -1);
  }
}

TEST(AnemoiDataset, InputsOnlyWithoutTargets) {
  Fixture f;
  AnemoiOptions o = f.options();
  o.target_offsets.clear();
  o.target_variables.clear();
  AnemoiDataset dataset(o);
  EXPECT_EQ(dataset.outputs().size(), 1u);
  EXPECT_NE(dataset.describe().find("a.zarr"), std::string::npos);
}

TEST(AnemoiDataset, InconsistentOptionsAreNamed) {
  Fixture f;
  auto check = [&](auto edit, std::initializer_list<std::string_view> words) {
    AnemoiOptions o = f.options();
    edit(o);
    expect_error([&] { AnemoiDataset dataset(o); }, ErrorCode::kInvalidArgument, words);
  };
  check([](AnemoiOptions& o) { o.members = {3}; }, {"ensemble member 3", "a.zarr"});
  check([](AnemoiOptions& o) { o.cell_end = kCells + 1; }, {"cells", "a.zarr"});
  check([](AnemoiOptions& o) { o.layouts[0].reads[1].var_end = 3; }, {"b.zarr", "has 2"});
  check([](AnemoiOptions& o) { o.layouts[0].rows[5] = 6; }, {"row 6"});
  check([](AnemoiOptions& o) { o.date_times[1] = kDates + 2; }, {"b.zarr", "time 11"});
  check([](AnemoiOptions& o) { o.sample_dates = {7}; }, {"sample date 7"});
  check([](AnemoiOptions& o) { o.sample_dates.clear(); }, {"no samples"});
  check([](AnemoiOptions& o) { o.input_variables = {6}; }, {"input variables", "6"});
  check([](AnemoiOptions& o) { o.mul = {1.0f}; }, {"mul and add"});
  check([](AnemoiOptions& o) { o.output_dtype = kInt16; }, {"output dtype"});
  Fixture g;
  check(
      [&](AnemoiOptions& o) {
        o.sources[1] =
            make_float_array(g.store, "c", {kDates + 2, 2, 1, kCells}, {1, 2, 1, kCells}, 3);
      },
      {"b.zarr", "cannot be combined"});
}

}  // namespace
}  // namespace chute
