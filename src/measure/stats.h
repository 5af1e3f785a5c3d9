// Sample statistics and noise-based stopping for timing. Pure functions; thread-safe (with a
// thread-safe clock).
#pragma once

#include <functional>
#include <vector>

#include "core/measurement.h"
#include "platform/clock.h"

namespace attune {

struct SampleStats {
  int n = 0;
  double median = 0;
  double min = 0;
  double max = 0;
  // Relative standard error of the median, from the distribution-free 95% confidence interval
  // of the median (order statistics n/2 -+ 0.98 sqrt(n)): half its width / 1.96 / median. It
  // needs no normality, so bimodal timings (two clock states) read as noisy, and one preempted
  // sample stops mattering once there are enough samples.
  double noise = 0;
};

SampleStats summarize(std::vector<double> samples);

// What `total`'s timings take beyond `baseline`'s (a graph of the candidate behind an empty
// kernel, less a graph of the empty kernel alone): the difference of the medians, the extremes
// less the baseline's median, and the two medians' absolute noise combined, relative to the
// difference. A difference at or under zero is taken as the least a timing resolves (10 ns).
SampleStats less_baseline(const SampleStats& total, const SampleStats& baseline);

struct SamplingPolicy {
  int min_samples = 10;
  int max_samples = 1000;
  double noise_bound = 0.005;  // stop once the median's relative noise is under 0.5%
  double time_cap_s = 2.0;     // or once this much wall time went into sampling
};

// A Measurement of these samples in the regime (clocks left unknown for the caller to fill).
Measurement measurement_of(const SampleStats& s, Regime regime);

// Calls one_sample() (returns one timed sample) until the policy says stop; the time cap is read
// on `clock`.
SampleStats sample_until_stable(const std::function<double()>& one_sample,
                                const SamplingPolicy& policy,
                                const platform::Clock& clock = platform::system_clock());

}  // namespace attune
