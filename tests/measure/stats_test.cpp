#include "measure/stats.h"

#include <gtest/gtest.h>

namespace attune {
namespace {

TEST(Stats, MedianMinMaxAndRobustNoise) {
  auto s = summarize({5, 1, 3, 2, 4});
  EXPECT_EQ(s.n, 5);
  EXPECT_DOUBLE_EQ(s.median, 3);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 5);
  EXPECT_GT(s.noise, 0);
  EXPECT_DOUBLE_EQ(summarize({1, 2, 3, 4}).median, 2.5);
  // Among enough samples one wild one (a preemption) does not move the noise estimate.
  std::vector<double> calm;
  for (int i = 0; i < 40; ++i) calm.push_back(10.0 + 0.01 * (i % 7));
  std::vector<double> wild = calm;
  wild[17] = 1000;
  EXPECT_DOUBLE_EQ(summarize(wild).noise, summarize(calm).noise);
  EXPECT_DOUBLE_EQ(summarize(wild).max, 1000);
  // Two clock states: bimodal samples are noisy even when most equal the median.
  EXPECT_GT(summarize({50, 150, 50, 150, 50}).noise, 0.2);
}

TEST(Stats, SamplingStopsOnceTheMedianIsQuiet) {
  int calls = 0;
  SamplingPolicy p;
  p.min_samples = 5;
  p.noise_bound = 0.01;
  auto s = sample_until_stable(
      [&] {
        ++calls;
        return 100.0 + (calls % 2 ? 0.1 : -0.1);
      },
      p);
  EXPECT_EQ(s.n, 5);  // quiet from the start: stops at the minimum
  calls = 0;
  p.max_samples = 50;
  p.time_cap_s = 100;
  auto noisy = sample_until_stable(
      [&] {
        ++calls;
        return calls % 2 ? 50.0 : 150.0;
      },
      p);
  EXPECT_EQ(noisy.n, 50);  // never quiet: stops at the cap
}

TEST(Stats, AnAbsoluteNoiseFloorStopsASmallMedianThatIsNotRelativelyQuiet) {
  // A median of 2 with +-0.2 alternating samples: 0.102 absolute noise (5% relative) however
  // many samples, far over 0.5%.
  int calls = 0;
  auto sample = [&] { return 2.0 + (++calls % 2 ? 0.2 : -0.2); };
  SamplingPolicy p;
  p.noise_bound = 0.005;
  p.max_samples = 1000;
  p.time_cap_s = 100;
  EXPECT_EQ(sample_until_stable(sample, p).n, 1000);  // no floor: only the cap stops it
  calls = 0;
  p.noise_floor_us = 0.11;
  const SampleStats s = sample_until_stable(sample, p);
  EXPECT_EQ(s.n, p.min_samples);
  EXPECT_LE(s.noise * s.median, 0.11);
}

}  // namespace
}  // namespace attune
