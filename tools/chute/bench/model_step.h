#pragma once
// `chute bench --model torch`: times a real small PyTorch model (python/chute/bench/model.py)
// on one batch of the dataset, so the compute and full modes run with that model's step time
// instead of a guessed one.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace chute::bench {

struct ModelStepSpec {
  std::string model;                                        // "torch"
  std::vector<std::pair<std::string, std::string>> arrays;  // name -> path (packed datasets)
  std::vector<int64_t> indices;                             // the samples of the cached batch
  int threads = 0;
  int steps = 5;
  int warmup = 1;
};

/// Runs the helper; returns its JSON ({"status": "ok", "step_ms": [...], ...} or
/// {"status": "skipped"/"failed", "note": ...}). Never throws for a helper failure.
nlohmann::json measure_model_step(const ModelStepSpec& spec);

/// Mean of "step_ms" of an "ok" result, else 0.
double mean_step_ms(const nlohmann::json& result);

}  // namespace chute::bench
