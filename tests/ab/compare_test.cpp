// The A/B statistics and verdict on synthetic series: no processes, no timing.
#include "ab/compare.h"

#include <gtest/gtest.h>

namespace attune::ab {
namespace {

Comparison compared(std::vector<double> ref, std::vector<double> cand,
                    Better better = Better::kLower) {
  auto c = compare(std::move(ref), std::move(cand), better);
  EXPECT_TRUE(c.ok()) << c.error().message();
  return c.ok() ? *c : Comparison{};
}

TEST(AbStats, DescribeGivesMedianExtremesAndInterpolatedQuartiles) {
  Distribution d = describe({5, 1, 4, 2, 3});
  EXPECT_EQ(d.n, 5);
  EXPECT_DOUBLE_EQ(d.median, 3);
  EXPECT_DOUBLE_EQ(d.min, 1);
  EXPECT_DOUBLE_EQ(d.max, 5);
  EXPECT_DOUBLE_EQ(d.q1, 2);
  EXPECT_DOUBLE_EQ(d.q3, 4);
  EXPECT_DOUBLE_EQ(d.iqr(), 2);
  EXPECT_EQ(d.values, (std::vector<double>{5, 1, 4, 2, 3}));  // run order kept
  Distribution e = describe({4, 1, 3, 2});
  EXPECT_DOUBLE_EQ(e.median, 2.5);
  EXPECT_DOUBLE_EQ(e.q1, 1.75);  // numpy's default: 1 + 0.75 * (2 - 1)
  EXPECT_DOUBLE_EQ(e.q3, 3.25);
  Distribution one = describe({7});
  EXPECT_DOUBLE_EQ(one.iqr(), 0);
}

TEST(AbStats, DriftComparesTheMediansOfTheRefHalvesInRunOrder) {
  EXPECT_NEAR(ref_drift({100, 100, 100, 110, 110, 110}), 0.1, 1e-12);
  // The middle run of an odd count belongs to neither half: a wild one there does not count.
  EXPECT_NEAR(ref_drift({100, 100, 999, 110, 110}), 0.1, 1e-12);
  // Medians: one preempted run in a half does not move it.
  EXPECT_DOUBLE_EQ(ref_drift({100, 500, 100, 100, 100, 100}), 0);
  // Signed: the machine got faster.
  EXPECT_NEAR(ref_drift({100, 90}), -0.1, 1e-12);
  // Noise that is not a trend: alternating runs, same medians in both halves.
  EXPECT_DOUBLE_EQ(ref_drift({100, 104, 100, 104}), 0);
  EXPECT_DOUBLE_EQ(ref_drift({100}), 0);
  EXPECT_DOUBLE_EQ(ref_drift({}), 0);
}

TEST(AbStats, AGainBeyondTheDriftIsAGain) {
  Comparison c = compared({100, 101, 100, 101, 100}, {80, 80, 81, 80});
  EXPECT_DOUBLE_EQ(c.ratio, 100.0 / 80);
  EXPECT_DOUBLE_EQ(c.speedup, c.ratio);
  EXPECT_DOUBLE_EQ(c.drift, 0);  // halves {100,101} and {101,100}
  EXPECT_EQ(c.verdict, Verdict::kGain);
  EXPECT_EQ(c.ref.n, 5);
  EXPECT_EQ(c.cand.n, 4);
}

TEST(AbStats, AGainSmallerThanTheDriftIsNoGain) {
  // The ref moved 10% between the halves of the session; cand is 5% better than ref's median.
  Comparison c = compared({100, 100, 100, 110, 110, 110}, {100, 100, 100, 100, 100});
  EXPECT_NEAR(c.drift, 0.10, 1e-12);
  EXPECT_NEAR(c.speedup, 1.05, 1e-12);
  EXPECT_EQ(c.verdict, Verdict::kWithinDrift);
  EXPECT_EQ(to_string(c.verdict), "within_drift");
  // The same cand against a steady ref is a gain: the drift, not the ratio, decided.
  EXPECT_EQ(compared({105, 105, 105, 105, 105, 105}, {100, 100, 100, 100, 100}).verdict,
            Verdict::kGain);
}

TEST(AbStats, ADriftTowardsFasterRefusesAsMuchAsOneTowardsSlower) {
  Comparison c = compared({110, 110, 110, 100, 100, 100}, {100, 100, 100, 100, 100});
  EXPECT_LT(c.drift, 0);
  EXPECT_EQ(c.verdict, Verdict::kWithinDrift);
}

TEST(AbStats, ALossBeyondTheDriftIsALossAndASmallLossIsWithinDrift) {
  Comparison c = compared({100, 100, 100}, {120, 121, 119});
  EXPECT_NEAR(c.speedup, 100.0 / 120, 1e-12);
  EXPECT_EQ(c.verdict, Verdict::kLoss);
  EXPECT_EQ(compared({100, 100, 100, 100, 110, 110}, {103, 103}).verdict, Verdict::kWithinDrift);
}

TEST(AbStats, HigherIsBetterTurnsTheSpeedupAroundButNotTheRatio) {
  Comparison h = compared({100, 100, 100}, {125, 125}, Better::kHigher);
  EXPECT_DOUBLE_EQ(h.ratio, 0.8);
  EXPECT_DOUBLE_EQ(h.speedup, 1.25);
  EXPECT_EQ(h.verdict, Verdict::kGain);
  Comparison l = compared({100, 100, 100}, {125, 125}, Better::kLower);
  EXPECT_DOUBLE_EQ(l.speedup, 0.8);
  EXPECT_EQ(l.verdict, Verdict::kLoss);
}

TEST(AbStats, TooFewRunsOrNonPositiveMediansCannotBeCompared) {
  EXPECT_FALSE(compare({100}, {90}, Better::kLower).ok());
  EXPECT_FALSE(compare({100, 100}, {}, Better::kLower).ok());
  auto zero = compare({100, 100}, {0, 0, 1}, Better::kLower);
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.error().message().find("median of the cand runs is 0"), std::string::npos)
      << zero.error().message();
  EXPECT_FALSE(compare({-1, -2}, {1}, Better::kLower).ok());
}

}  // namespace
}  // namespace attune::ab
