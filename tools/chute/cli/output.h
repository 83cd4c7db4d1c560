#pragma once
// Formatting helpers shared by the commands: byte sizes, shapes, aligned key/value lines and a
// progress reporter for stderr.

#include <chrono>
#include <cstdint>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace chute::cli {

/// "1.50 GB", "812 kB", "17 B" (decimal units, three significant digits).
std::string human_bytes(double bytes);
/// "(4, 181, 360, 5)" from a JSON array of integers; "()" for a 0-d shape.
std::string shape_string(const nlohmann::json& shape);
/// A JSON scalar as a short human string (strings unquoted).
std::string scalar_string(const nlohmann::json& value);
/// "key        value" with keys padded to `width`.
std::string field_line(const std::string& key, const std::string& value, size_t width = 16);
/// Rows of cells as an aligned table (columns separated by two spaces, no trailing blanks).
std::string table(const std::vector<std::vector<std::string>>& rows);

/// Reports bytes done / total on stderr: a redrawn bar when stderr is a terminal, otherwise a
/// line at every 10%. Thread-safe; updates are throttled.
class ProgressReporter {
 public:
  explicit ProgressReporter(std::string label, bool enabled = true);
  void update(int64_t done, int64_t total);
  /// Ends the bar's line (terminal) or prints nothing more.
  void finish();

 private:
  std::string label_;
  bool enabled_;
  bool tty_;
  std::mutex mutex_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_draw_{};
  int last_decile_ = 0;
  bool drawn_ = false;
};

}  // namespace chute::cli
