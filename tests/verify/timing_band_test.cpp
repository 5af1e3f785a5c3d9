#include "verify/timing_band.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <vector>

namespace attune {
namespace {

TEST(TimingBand, RelativeForLongKernelsAbsoluteFloorForShortOnes) {
  // A 40 us row: 10% is 4 us, above the floor.
  EXPECT_TRUE(within_band(40, 43.9, 0.10, 0.25));
  EXPECT_FALSE(within_band(40, 44.1, 0.10, 0.25));
  // A 2 us row: 10% is 0.2 us, under the floor of 0.25 us.
  EXPECT_TRUE(within_band(2, 2.24, 0.10, 0.25));
  EXPECT_FALSE(within_band(2, 2.26, 0.10, 0.25));
  // No floor: the relative band alone.
  EXPECT_FALSE(within_band(2, 2.24, 0.10, 0));
  // Faster than recorded is always within.
  EXPECT_TRUE(within_band(2, 1.5, 0.10, 0));
}

// A timer that returns the given timings in order (and counts its calls).
struct Timings {
  std::vector<double> values;
  std::size_t calls = 0;
  double operator()() { return values.at(calls++); }
};

TEST(TimingBand, AFirstTimingOutsideTheBandIsConfirmedByTheMedianOfMore) {
  // One slow sample among fast ones: the median of three passes the row.
  Timings once{{2.42, 2.05, 2.10}};
  TimingVerdict v = judge_timing(2.0, std::ref(once), 0.10, 0.25, 2);
  EXPECT_TRUE(v.ok);
  EXPECT_EQ(once.calls, 3u);
  EXPECT_DOUBLE_EQ(v.measured_us, 2.10);
  EXPECT_EQ(v.timings, (std::vector<double>{2.42, 2.05, 2.10}));
  // Slower every time: still fails, on the median.
  Timings slow{{2.42, 2.30, 2.50}};
  v = judge_timing(2.0, std::ref(slow), 0.10, 0.25, 2);
  EXPECT_FALSE(v.ok);
  EXPECT_DOUBLE_EQ(v.measured_us, 2.42);
  // No retries: the first timing is the verdict.
  Timings no{{2.42, 2.05, 2.10}};
  v = judge_timing(2.0, std::ref(no), 0.10, 0.25, 0);
  EXPECT_FALSE(v.ok);
  EXPECT_EQ(no.calls, 1u);
  // A first timing within the band is not timed again.
  Timings fine{{2.10, 9.0}};
  v = judge_timing(2.0, std::ref(fine), 0.10, 0.25, 2);
  EXPECT_TRUE(v.ok);
  EXPECT_EQ(fine.calls, 1u);
  // An even count of timings: the mean of the middle two.
  Timings even{{2.42, 2.0, 2.2, 2.6}};
  v = judge_timing(2.0, std::ref(even), 0.10, 0.25, 3);
  EXPECT_DOUBLE_EQ(v.measured_us, 2.31);
}

}  // namespace
}  // namespace attune
