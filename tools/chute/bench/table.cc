#include "chute/bench/table.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "chute/util/error.h"

namespace chute::bench {
namespace {

/// Display width in terminal columns: counts UTF-8 code points (± and µ are one column).
size_t display_width(const std::string& text) {
  size_t width = 0;
  for (unsigned char c : text) width += (c & 0xC0) != 0x80;
  return width;
}

/// A number with at most a unit and a "± spread": "12.5", "1.2 GB/s", "3.1 ± 0.2", "2.00×".
/// Prose that happens to start with a digit has more spaces and stays left-aligned.
bool looks_numeric(const std::string& cell) {
  if (cell.empty()) return false;
  const unsigned char first = cell[0];
  const bool starts_like_number =
      std::isdigit(first) || ((first == '-' || first == '+') && cell.size() > 1 &&
                              std::isdigit(static_cast<unsigned char>(cell[1])));
  return starts_like_number && std::count(cell.begin(), cell.end(), ' ') <= 3;
}

}  // namespace

Table::Table(std::vector<std::string> headers) : headers_(std::move(headers)) {}

void Table::add_row(std::vector<std::string> cells) {
  if (cells.size() != headers_.size()) {
    fail(ErrorCode::kInternal, "table row has {} cells, expected {}", cells.size(),
         headers_.size());
  }
  rows_.push_back(std::move(cells));
}

std::string Table::render(const std::string& title) const {
  std::vector<size_t> widths(headers_.size());
  for (size_t c = 0; c < headers_.size(); ++c) {
    widths[c] = display_width(headers_[c]);
    for (const auto& row : rows_) widths[c] = std::max(widths[c], display_width(row[c]));
  }
  auto line = [&](const std::vector<std::string>& cells, bool header) {
    std::string out;
    for (size_t c = 0; c < cells.size(); ++c) {
      const size_t pad = widths[c] - display_width(cells[c]);
      const bool right = !header && looks_numeric(cells[c]);
      if (c > 0) out += "  ";
      if (right) out += std::string(pad, ' ');
      out += cells[c];
      if (!right && c + 1 < cells.size()) out += std::string(pad, ' ');
    }
    return out + "\n";
  };
  std::string out;
  if (!title.empty()) out += title + "\n";
  out += line(headers_, true);
  size_t total = 0;
  for (size_t w : widths) total += w;
  out += std::string(total + 2 * (widths.empty() ? 0 : widths.size() - 1), '-') + "\n";
  for (const auto& row : rows_) out += line(row, false);
  return out;
}

std::string format_number(double value, int significant) {
  if (!std::isfinite(value)) return "n/a";
  if (value == 0) return "0";
  const int magnitude = static_cast<int>(std::floor(std::log10(std::fabs(value))));
  const int decimals = std::max(0, significant - 1 - magnitude);
  return fmt::format("{:.{}f}", value, decimals);
}

std::string format_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (std::fabs(bytes) >= 1024 && unit < 4) bytes /= 1024, ++unit;
  return format_number(bytes) + " " + units[unit];
}

std::string format_seconds(double seconds) {
  if (!std::isfinite(seconds)) return "n/a";
  if (seconds >= 1 || seconds == 0) return format_number(seconds) + " s";
  if (seconds >= 1e-3) return format_number(seconds * 1e3) + " ms";
  return format_number(seconds * 1e6) + " µs";
}

std::string format_percent(double fraction) {
  if (!std::isfinite(fraction)) return "n/a";
  return fmt::format("{:.1f}%", fraction * 100);
}

std::string format_mean_std(double mean, double std, int significant) {
  return format_number(mean, significant) + " ± " + format_number(std, 2);
}

}  // namespace chute::bench
