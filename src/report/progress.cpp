#include "report/progress.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace attune {

std::string clock_text(double seconds) {
  const auto s = static_cast<std::int64_t>(std::max(0.0, std::round(seconds)));
  if (s >= 3600) return fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
  return fmt::format("{}:{:02}", s / 60, s % 60);
}

std::string progress_line(const Progress& p, int width) {
  const double total = static_cast<double>(std::max<std::uint64_t>(p.space_size, 1));
  const int fill = static_cast<int>(width * std::min(1.0, static_cast<double>(p.index) / total));
  std::string line = fmt::format("{} [{}{}] {}/{} best {}", p.problem, std::string(fill, '#'),
                                 std::string(width - fill, ' '), p.index, p.space_size,
                                 p.best_us ? fmt::format("{:.2f} us", *p.best_us) : "-");
  line += "  " + clock_text(p.elapsed_s);
  if (p.index > 0 && p.elapsed_s > 0) {
    const double rate = static_cast<double>(p.index) / p.elapsed_s;
    line += rate >= 1 ? fmt::format(", {:.1f}/s", rate) : fmt::format(", {:.1f} s each", 1 / rate);
    double left = static_cast<double>(p.space_size) - static_cast<double>(p.index);
    if (p.max_candidates) left = std::min(left, static_cast<double>(*p.max_candidates - p.index));
    double eta = std::max(0.0, left) / rate;
    if (p.time_left_s) eta = std::min(eta, std::max(0.0, *p.time_left_s));
    line += ", at most " + clock_text(eta) + " left";
  }
  return line;
}

}  // namespace attune
