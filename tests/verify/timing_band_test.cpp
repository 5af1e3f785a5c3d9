#include "verify/timing_band.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace attune
