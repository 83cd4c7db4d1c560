#include "chute/bench/model_step.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "chute/bench/python_tools.h"
#include "chute/util/error.h"

namespace chute::bench {

nlohmann::json measure_model_step(const ModelStepSpec& spec) {
  using nlohmann::json;
  if (spec.model != "torch") {
    return {{"status", "failed"}, {"note", fmt::format("unknown model '{}'", spec.model)}};
  }
  std::vector<std::string> arguments;
  for (const auto& [name, path] : spec.arrays) {
    arguments.push_back("--array");
    arguments.push_back(name + "=" + path);
  }
  arguments.push_back("--indices");
  arguments.push_back(fmt::format("{}", fmt::join(spec.indices, ",")));
  for (const auto& [flag, value] :
       {std::pair{"--threads", spec.threads}, {"--steps", spec.steps}, {"--warmup", spec.warmup}}) {
    arguments.push_back(flag);
    arguments.push_back(std::to_string(value));
  }
  ToolResult tool;
  try {
    tool = run_python_tool("bench.model", arguments);
  } catch (const Error& e) {
    return {{"status", "failed"}, {"note", e.what()}};
  }
  for (auto line = tool.stdout_lines.rbegin(); line != tool.stdout_lines.rend(); ++line) {
    json parsed = json::parse(*line, nullptr, /*allow_exceptions=*/false);
    if (parsed.is_object() && parsed.contains("status")) return parsed;
  }
  return {{"status", "failed"},
          {"note", fmt::format("the model helper exited with {}: {}", tool.exit_code,
                               last_line(tool.stderr_text))}};
}

double mean_step_ms(const nlohmann::json& result) {
  if (result.value("status", "") != "ok" || !result.contains("step_ms")) return 0;
  const auto& steps = result["step_ms"];
  if (!steps.is_array() || steps.empty()) return 0;
  double sum = 0;
  for (const auto& s : steps) sum += s.get<double>();
  return sum / static_cast<double>(steps.size());
}

}  // namespace chute::bench
