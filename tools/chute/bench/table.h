#pragma once
// A terminal table with aligned columns: text left-aligned, numbers right-aligned.

#include <string>
#include <vector>

namespace chute::bench {

class Table {
 public:
  explicit Table(std::vector<std::string> headers);
  /// Precondition: cells.size() == number of headers.
  void add_row(std::vector<std::string> cells);
  /// Renders with a title line, a header row, a rule and the rows; each line ends in '\n'.
  std::string render(const std::string& title = {}) const;
  size_t rows() const { return rows_.size(); }

 private:
  std::vector<std::string> headers_;
  std::vector<std::vector<std::string>> rows_;
};

/// Formatting helpers shared by the report: "1.23 GB/s", "12.3 MiB", "45.6%", "±".
std::string format_number(double value, int significant = 3);
std::string format_bytes(double bytes);
std::string format_seconds(double seconds);
std::string format_percent(double fraction);
std::string format_mean_std(double mean, double std, int significant = 3);

}  // namespace chute::bench
