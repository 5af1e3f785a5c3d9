// attune verify's timing check: is a row's time through libattune-rt within the band of what the
// tuner recorded for it? Pure; thread-safe.
#pragma once

#include <functional>
#include <vector>

namespace attune {

// The band a row's measured time may exceed its recorded one by: `band` of the recorded time,
// and never less than `floor_us`. Timed in separate processes, the deploy regime reproduces a
// kernel to about 0.2 us whatever its length (on the H200, three verifies of one table gave
// 1.82-2.08 us for a 2 us RMSNorm), so a relative band alone fails the smallest kernels on
// noise, not on what was dispatched.
bool within_band(double recorded_us, double measured_us, double band, double floor_us);

// One row's timing verdict. A first timing outside the band is confirmed before it fails the
// row: the row is timed `retries` times more and judged by the median of all its timings, so one
// slow sample (another process's clock ramp, a neighbour on the bus) does not fail a row while a
// row that is slower every time still does. A first timing within the band is the verdict.
struct TimingVerdict {
  double measured_us = 0;       // the first timing, or the median of all of them when retried
  std::vector<double> timings;  // every timing taken, in order
  bool ok = true;
};
TimingVerdict judge_timing(double recorded_us, const std::function<double()>& time_once,
                           double band, double floor_us, int retries);

}  // namespace attune
