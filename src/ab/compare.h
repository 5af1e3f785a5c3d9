// The statistics of an A/B comparison of two commands: each side's distribution, the ratio of
// the medians, the ref-to-ref drift, and the verdict that refuses a gain the drift could explain.
// Pure functions on value types; thread-safe.
#pragma once

#include <string_view>
#include <vector>

#include "core/error.h"

namespace attune::ab {

// Which way the measured value improves: times are lower-is-better, throughputs higher.
enum class Better { kLower, kHigher };

std::string_view to_string(Better b);  // "lower", "higher"

// One side's runs. Quartiles by linear interpolation between order statistics (numpy's default,
// R's type 7), so q1 and q3 of two or three runs are still defined.
struct Distribution {
  std::vector<double> values;  // in the order they were run
  int n = 0;
  double median = 0;
  double min = 0;
  double max = 0;
  double q1 = 0;
  double q3 = 0;
  double iqr() const { return q3 - q1; }
};

Distribution describe(std::vector<double> values);

// The ref-to-ref drift, signed: median(second half of the ref runs) / median(first half) - 1,
// the halves taken in run order with the middle run left out when the count is odd (so 11 refs
// compare runs 1-5 with runs 7-11). Needs at least 2 runs; 0 for fewer.
//
// Why this definition: the gain it is held against is itself a ratio of two medians taken over
// the same span of time, and this is the same statistic where the true answer is known to be 1
// (ref against itself, earlier against later). It therefore moves with everything that can move
// such a ratio: a slow trend over the session (clocks settling, heat, a neighbour's job starting)
// and run-to-run noise as it survives a median, and it shrinks as --rounds grows just as the
// uncertainty of the gain does. The other usual choice, the median relative change between
// consecutive ref runs, is a single-run noise figure: it does not shrink with more rounds (a real
// 2% gain under 5% per-run noise could never be shown however long one measured) and it misses a
// monotone trend made of small steps. Its weakness: with few rounds the halves are small and the
// estimate is itself noisy, so it can come out near 0 by chance; use enough rounds (default 10).
double ref_drift(const std::vector<double>& ref);

enum class Verdict {
  kGain,         // cand is better than ref by more than the drift
  kLoss,         // cand is worse than ref by more than the drift
  kWithinDrift,  // |speedup - 1| <= |drift|: reported as "no gain (within drift)"
};

std::string_view to_string(Verdict v);  // "gain", "loss", "within_drift"

struct Comparison {
  Better better = Better::kLower;
  Distribution ref;
  Distribution cand;
  double ratio = 0;  // median(ref) / median(cand)
  double speedup =
      0;  // how many times better cand is: ratio when lower is better, 1 / ratio when higher
  double drift = 0;  // ref_drift(ref.values), signed
  Verdict verdict = Verdict::kWithinDrift;
};

// Compares the runs. The gain (speedup - 1) and the drift are both relative changes of a median,
// so they are compared directly: a gain or loss no larger than |drift| is kWithinDrift.
// Errors (unsupported): fewer than 2 ref runs or no cand run; a median that is not positive (a
// ratio of such medians says nothing).
Result<Comparison> compare(std::vector<double> ref, std::vector<double> cand, Better better);

}  // namespace attune::ab
