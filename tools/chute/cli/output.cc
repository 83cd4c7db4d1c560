#include "output.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace chute::cli {

std::string human_bytes(double bytes) {
  static const char* const kUnits[] = {"B", "kB", "MB", "GB", "TB", "PB"};
  size_t unit = 0;
  while (bytes >= 999.5 && unit + 1 < std::size(kUnits)) {
    bytes /= 1000.0;
    ++unit;
  }
  if (unit == 0) return fmt::format("{:.0f} B", bytes);
  int decimals = bytes < 9.995 ? 2 : bytes < 99.95 ? 1 : 0;
  return fmt::format("{:.{}f} {}", bytes, decimals, kUnits[unit]);
}

std::string shape_string(const nlohmann::json& shape) {
  if (!shape.is_array()) return "-";
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + shape[i].dump();
  return s + ")";
}

std::string scalar_string(const nlohmann::json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_null()) return "-";
  return value.dump();
}

std::string field_line(const std::string& key, const std::string& value, size_t width) {
  std::string line = key;
  line.append(width > key.size() ? width - key.size() : 1, ' ');
  return line + value + "\n";
}

std::string table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> widths;
  for (const auto& row : rows) {
    if (widths.size() < row.size()) widths.resize(row.size(), 0);
    for (size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      line += row[c];
      if (c + 1 < row.size()) line.append(widths[c] - row[c].size() + 2, ' ');
    }
    out += line + "\n";
  }
  return out;
}

ProgressReporter::ProgressReporter(std::string label, bool enabled)
    : label_(std::move(label)), enabled_(enabled), tty_(::isatty(STDERR_FILENO) == 1) {}

void ProgressReporter::update(int64_t done, int64_t total) {
  if (!enabled_ || total <= 0) return;
  std::lock_guard lock(mutex_);
  auto now = std::chrono::steady_clock::now();
  double seconds = std::chrono::duration<double>(now - start_).count();
  double rate = seconds > 0 ? done / seconds : 0.0;
  double fraction = std::clamp(static_cast<double>(done) / total, 0.0, 1.0);
  if (tty_) {
    if (done < total && now - last_draw_ < std::chrono::milliseconds(100)) return;
    last_draw_ = now;
    constexpr int kWidth = 30;
    int filled = static_cast<int>(fraction * kWidth);
    std::string bar(filled, '#');
    bar.append(kWidth - filled, '-');
    fmt::print(stderr, "\r{} [{}] {:3.0f}%  {} / {}  {}/s   ", label_, bar, fraction * 100,
               human_bytes(done), human_bytes(total), human_bytes(rate));
    std::fflush(stderr);
    drawn_ = true;
  } else {
    int decile = static_cast<int>(fraction * 10);
    if (decile <= last_decile_) return;
    last_decile_ = decile;
    fmt::print(stderr, "{}: {:3d}%  {} / {}  {}/s\n", label_, decile * 10, human_bytes(done),
               human_bytes(total), human_bytes(rate));
  }
}

void ProgressReporter::finish() {
  std::lock_guard lock(mutex_);
  if (enabled_ && tty_ && drawn_) fmt::print(stderr, "\n");
}

}  // namespace chute::cli
