#include "measure/stats.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace attune {

namespace {
double median_of(std::vector<double>& v) {
  const std::size_t n = v.size();
  std::nth_element(v.begin(), v.begin() + n / 2, v.end());
  double hi = v[n / 2];
  if (n % 2) return hi;
  double lo = *std::max_element(v.begin(), v.begin() + n / 2);
  return 0.5 * (lo + hi);
}
}  // namespace

SampleStats summarize(std::vector<double> samples) {
  SampleStats s;
  s.n = static_cast<int>(samples.size());
  if (samples.empty()) return s;
  auto [mn, mx] = std::minmax_element(samples.begin(), samples.end());
  s.min = *mn;
  s.max = *mx;
  s.median = median_of(samples);
  if (s.n < 2 || s.median == 0) return s;
  std::sort(samples.begin(), samples.end());
  const double n = static_cast<double>(s.n);
  const double half = 0.98 * std::sqrt(n);
  const auto lo = static_cast<std::size_t>(std::max(0.0, std::floor(n / 2 - half)));
  const auto hi = static_cast<std::size_t>(std::min(n - 1, std::ceil(n / 2 + half) - 1));
  s.noise = (samples[hi] - samples[lo]) / 2 / 1.96 / std::fabs(s.median);
  return s;
}

SampleStats less_baseline(const SampleStats& total, const SampleStats& baseline) {
  constexpr double kLeast = 0.01;
  SampleStats s;
  s.n = total.n;
  s.median = std::max(total.median - baseline.median, kLeast);
  s.min = std::max(total.min - baseline.median, kLeast);
  s.max = std::max(total.max - baseline.median, kLeast);
  s.noise = std::hypot(total.noise * total.median, baseline.noise * baseline.median) / s.median;
  return s;
}

Measurement measurement_of(const SampleStats& s, Regime regime) {
  Measurement m;
  m.regime = regime;
  m.cache = regime == Regime::kDeploy ? CacheState::kCold : CacheState::kWarm;
  m.samples = s.n;
  m.median_us = s.median;
  m.min_us = s.min;
  m.max_us = s.max;
  m.noise = s.noise;
  return m;
}

SampleStats sample_until_stable(const std::function<double()>& one_sample,
                                const SamplingPolicy& policy, const platform::Clock& clock) {
  const auto start = clock.now();
  std::vector<double> samples;
  SampleStats s;
  while (true) {
    samples.push_back(one_sample());
    const int n = static_cast<int>(samples.size());
    if (n < policy.min_samples) continue;
    s = summarize(samples);
    if (s.noise <= policy.noise_bound || n >= policy.max_samples) break;
    std::chrono::duration<double> spent = clock.now() - start;
    if (spent.count() >= policy.time_cap_s) break;
  }
  return s;
}

}  // namespace attune
