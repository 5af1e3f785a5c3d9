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

TEST(Stats, LessABaselineSubtractsMediansAndCombinesTheirNoise) {
  SampleStats total{.n = 40, .median = 5.0, .min = 4.8, .max = 9.0, .noise = 0.004};
  SampleStats lead{.n = 40, .median = 3.0, .min = 2.9, .max = 3.5, .noise = 0.005};
  const SampleStats d = less_baseline(total, lead);
  EXPECT_EQ(d.n, 40);
  EXPECT_DOUBLE_EQ(d.median, 2.0);
  EXPECT_DOUBLE_EQ(d.min, 1.8);
  EXPECT_DOUBLE_EQ(d.max, 6.0);
  // 0.02 us and 0.015 us of absolute noise: 0.025 us, 1.25% of 2 us.
  EXPECT_NEAR(d.noise, 0.0125, 1e-12);
  // Nothing added beyond the baseline: the least a timing resolves, never zero or negative.
  lead.median = 5.2;
  const SampleStats none = less_baseline(total, lead);
  EXPECT_DOUBLE_EQ(none.median, 0.01);
  EXPECT_DOUBLE_EQ(none.min, 0.01);
  EXPECT_GT(none.noise, 1);
}

}  // namespace
}  // namespace attune
