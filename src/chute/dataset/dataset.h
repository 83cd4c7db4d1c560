#pragma once
// What a sample is. A Dataset names its outputs (dtype and per-sample shape of each) and, for one
// sample and one slot of the batch, adds the boxes to read into a ReadPlan with destinations
// inside the batch's buffers. The batch assembler gathers all samples of a batch into one plan
// (duplicate chunks are read once), executes it, then calls finish() for transforms after the
// read (normalisation, casts).

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "chute/array/array.h"
#include "chute/array/dtype.h"

namespace chute {

class ReadPlan;    // chute/array/read_plan.h (internal)
class ThreadPool;  // chute/util/thread_pool.h (internal)

/// One output of a dataset: a batch holds it as an array of shape (batch, sample_shape...).
struct OutputSpec {
  std::string name;
  DataType dtype;
  std::vector<int64_t> sample_shape;

  int64_t sample_elements() const;
  int64_t sample_nbytes() const { return sample_elements() * dtype.size; }
};

/// The memory of one batch being assembled. outputs[k] holds batch_size × outputs()[k] in C order;
/// staging[k] likewise for staging()[k] (scratch the dataset reads into before finish() turns it
/// into outputs, e.g. float32 values cast to bfloat16). Slots are numbered 0..batch_size-1.
/// `seed` and `epoch` are the sampler's, for datasets that draw per-sample randomness (random
/// crops, their transforms): they derive it from (seed, epoch, sample) with a counter-based
/// hash, so a batch stays a pure function of the sampler's inputs whatever the thread count.
struct BatchMemory {
  int64_t batch_size = 0;
  std::vector<std::byte*> outputs;
  std::vector<std::byte*> staging;
  uint64_t seed = 0;
  int64_t epoch = 0;
};

class Dataset {
 public:
  virtual ~Dataset() = default;

  /// Samples are numbered 0..num_samples()-1.
  virtual int64_t num_samples() const = 0;
  /// What a batch holds, in a fixed order.
  virtual const std::vector<OutputSpec>& outputs() const = 0;
  /// Extra per-batch buffers that plan() reads into and finish() consumes (default: none). The
  /// assembler owns them and reuses them for every batch.
  virtual const std::vector<OutputSpec>& staging() const;

  /// Adds the reads of sample `sample` into slot `slot` of `memory` to `plan`.
  /// Preconditions: 0 <= sample < num_samples(), 0 <= slot < memory.batch_size; the buffers of
  /// `memory` stay valid until the plan is executed. Reads of different slots never overlap.
  virtual void plan(int64_t sample, int64_t slot, const BatchMemory& memory,
                    ReadPlan& plan) const = 0;

  /// Runs after the plan of a whole batch has been executed: transforms the `memory` of that
  /// batch in place (or staging -> outputs). May use `pool` (null means inline). Default: nothing.
  /// The result must not depend on the pool's size.
  virtual void finish(const BatchMemory& memory, ThreadPool* pool) const;
  /// True when finish() is the same work done slot by slot: the assembler then calls
  /// finish_part(memory, slot, part) (by default finish_sample(memory, slot)) for each part of
  /// each slot once every chunk read into it has been placed
  /// (on the worker that placed its last chunk, while the sample's values are still in the
  /// caches) instead of finish() after the whole batch. The result must be the bytes finish()
  /// would make. Default: false.
  virtual bool finishes_per_sample() const { return false; }
  /// finish() for slot `slot` alone (only called when finishes_per_sample()). Default: nothing.
  virtual void finish_sample(const BatchMemory& memory, int64_t slot) const;
  /// With finishes_per_sample(): the parts a slot's finishing splits into (default 1), each
  /// finished as soon as its own reads are placed (anemoi: one part a date, placed while the
  /// date is still in the caches). The assembler tags a slot's targets slot × finish_parts()
  /// (ReadPlan::target_tag) before plan(); plan() adds the part to that tag for the targets of
  /// part p > 0 (when the tag is >= 0: other callers plan without tags). Then
  /// finish_part(memory, slot, p) is called for each part; together they make the bytes
  /// finish_sample() would. Default: finish_sample() for the one part (a dataset that returns
  /// more than one part overrides finish_part as well).
  virtual int64_t finish_parts() const { return 1; }
  virtual void finish_part(const BatchMemory& memory, int64_t slot, int64_t part) const {
    finish_sample(memory, slot);
  }

  /// One line for messages and benchmark reports.
  virtual std::string describe() const = 0;
};

using DatasetPtr = std::shared_ptr<const Dataset>;

}  // namespace chute
