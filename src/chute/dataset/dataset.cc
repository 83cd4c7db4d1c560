#include "chute/dataset/dataset.h"

#include "chute/util/thread_pool.h"

namespace chute {

int64_t OutputSpec::sample_elements() const {
  int64_t n = 1;
  for (int64_t extent : sample_shape) n *= extent;
  return n;
}

const std::vector<OutputSpec>& Dataset::staging() const {
  static const std::vector<OutputSpec> kNone;
  return kNone;
}

void Dataset::finish(const BatchMemory&, ThreadPool*) const {}

void Dataset::finish_sample(const BatchMemory&, int64_t) const {}

}  // namespace chute
