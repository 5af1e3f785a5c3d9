#include "platform/clock.h"

#include <gtest/gtest.h>

namespace attune::platform {
namespace {

using Seconds = std::chrono::duration<double>;

TEST(FakeClock, MovesOnlyWhenToldAndRecordsEverySleep) {
  FakeClock clock;
  const auto start = clock.now();
  EXPECT_EQ(clock.now(), start);
  clock.sleep_for(Seconds(1.5));
  clock.advance(Seconds(0.25));
  clock.sleep_for(Seconds(3));
  EXPECT_NEAR(Seconds(clock.now() - start).count(), 4.75, 1e-9);
  ASSERT_EQ(clock.sleeps().size(), 2u);  // advance() is not a sleep
  EXPECT_DOUBLE_EQ(clock.sleeps()[0].count(), 1.5);
  EXPECT_DOUBLE_EQ(clock.sleeps()[1].count(), 3.0);
}

TEST(FakeClock, AClockThatTakesTheBaseInterfaceIsDrivenByIt) {
  FakeClock fake;
  Clock& clock = fake;
  const auto t0 = clock.now();
  clock.sleep_for(Seconds(60));  // returns at once
  EXPECT_NEAR(Seconds(clock.now() - t0).count(), 60, 1e-9);
}

TEST(SystemClock, NeverGoesBackAndIsOneObject) {
  Clock& a = system_clock();
  const auto t0 = a.now();
  a.sleep_for(Seconds(0));
  EXPECT_GE(a.now(), t0);
  EXPECT_EQ(&a, &system_clock());
}

}  // namespace
}  // namespace attune::platform
