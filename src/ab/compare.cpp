#include "ab/compare.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "measure/stats.h"

namespace attune::ab {

namespace {

// The q-quantile of sorted values, interpolating linearly between order statistics.
double quantile(const std::vector<double>& sorted, double q) {
  const double h = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(h));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (h - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

}  // namespace

std::string_view to_string(Better b) {
  return b == Better::kLower ? "lower" : "higher";
}

std::string_view to_string(Verdict v) {
  switch (v) {
    case Verdict::kGain:
      return "gain";
    case Verdict::kLoss:
      return "loss";
    case Verdict::kWithinDrift:
      return "within_drift";
  }
  return "within_drift";
}

Distribution describe(std::vector<double> values) {
  Distribution d;
  const SampleStats s = summarize(values);
  d.n = s.n;
  d.median = s.median;
  d.min = s.min;
  d.max = s.max;
  d.values = std::move(values);
  if (d.values.empty()) return d;
  std::vector<double> sorted = d.values;
  std::sort(sorted.begin(), sorted.end());
  d.q1 = quantile(sorted, 0.25);
  d.q3 = quantile(sorted, 0.75);
  return d;
}

double ref_drift(const std::vector<double>& ref) {
  const std::size_t half = ref.size() / 2;
  if (half == 0) return 0;
  const double first =
      summarize({ref.begin(), ref.begin() + static_cast<std::ptrdiff_t>(half)}).median;
  const double second =
      summarize({ref.end() - static_cast<std::ptrdiff_t>(half), ref.end()}).median;
  if (first == 0) return 0;
  return second / first - 1;
}

Result<Comparison> compare(std::vector<double> ref, std::vector<double> cand, Better better) {
  if (ref.size() < 2 || cand.empty())
    return Error::unsupported(
        fmt::format("an A/B comparison needs at least 2 ref runs and 1 cand run (got {} and {})",
                    ref.size(), cand.size()));
  Comparison c;
  c.better = better;
  c.drift = ref_drift(ref);
  c.ref = describe(std::move(ref));
  c.cand = describe(std::move(cand));
  for (const auto* d : {&c.ref, &c.cand})
    if (!(d->median > 0))
      return Error::unsupported(
          fmt::format("the median of the {} runs is {:g}; a ratio of medians needs positive values",
                      d == &c.ref ? "ref" : "cand", d->median));
  c.ratio = c.ref.median / c.cand.median;
  c.speedup = better == Better::kLower ? c.ratio : 1 / c.ratio;
  const double gain = c.speedup - 1;
  if (std::fabs(gain) <= std::fabs(c.drift))
    c.verdict = Verdict::kWithinDrift;
  else
    c.verdict = gain > 0 ? Verdict::kGain : Verdict::kLoss;
  return c;
}

}  // namespace attune::ab
