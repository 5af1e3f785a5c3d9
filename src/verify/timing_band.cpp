#include "verify/timing_band.h"

#include <algorithm>

namespace attune {

bool within_band(double recorded_us, double measured_us, double band, double floor_us) {
  return measured_us <= recorded_us + std::max(recorded_us * band, floor_us);
}

TimingVerdict judge_timing(double recorded_us, const std::function<double()>& time_once,
                           double band, double floor_us, int retries) {
  TimingVerdict v;
  v.timings.push_back(time_once());
  v.measured_us = v.timings.front();
  v.ok = within_band(recorded_us, v.measured_us, band, floor_us);
  if (v.ok || retries <= 0) return v;
  for (int i = 0; i < retries; ++i) v.timings.push_back(time_once());
  std::vector<double> sorted = v.timings;
  std::sort(sorted.begin(), sorted.end());
  const std::size_t n = sorted.size();
  v.measured_us = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  v.ok = within_band(recorded_us, v.measured_us, band, floor_us);
  return v;
}

}  // namespace attune
