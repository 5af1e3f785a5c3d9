// The one-line progress of a tuning run on a terminal: where the search is, the best so far, the
// time spent, the rate and how long at most is left. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace attune {

struct Progress {
  std::string problem;
  std::int64_t index = 0;        // candidates evaluated for this problem
  std::uint64_t space_size = 0;  // configs in its space
  std::optional<double> best_us;
  double elapsed_s = 0;                        // on this problem
  std::optional<std::int64_t> max_candidates;  // --max-candidates
  std::optional<double> time_left_s;           // what --time-limit leaves the run
};

// "gemm [#####     ] 12/40 best 3.87 us  0:09, 1.3/s, at most 0:21 left". The time left is an
// upper bound: the space (or --max-candidates) at the rate so far, capped by the time limit;
// patience may end the search sooner.
std::string progress_line(const Progress& p, int width = 30);

// m:ss, or h:mm:ss from an hour on.
std::string clock_text(double seconds);

}  // namespace attune
