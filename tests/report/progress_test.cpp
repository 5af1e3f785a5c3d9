#include "report/progress.h"

#include <gtest/gtest.h>

namespace attune {
namespace {

TEST(Progress, ClockTextIsMinutesAndSecondsThenHours) {
  EXPECT_EQ(clock_text(0), "0:00");
  EXPECT_EQ(clock_text(9.4), "0:09");
  EXPECT_EQ(clock_text(125), "2:05");
  EXPECT_EQ(clock_text(3725), "1:02:05");
  EXPECT_EQ(clock_text(-3), "0:00");
}

TEST(Progress, ShowsElapsedRateAndAnUpperBoundOnWhatIsLeft) {
  Progress p;
  p.problem = "matmul";
  p.index = 12;
  p.space_size = 40;
  p.best_us = 3868.8;
  p.elapsed_s = 6;  // 2 a second: 28 configs left take 14 s
  EXPECT_EQ(progress_line(p, 10),
            "matmul [###       ] 12/40 best 3868.80 us  0:06, 2.0/s, at most 0:14 left");
  p.max_candidates = 20;  // 8 left: 4 s
  EXPECT_NE(progress_line(p, 10).find("at most 0:04 left"), std::string::npos);
  p.time_left_s = 1.2;  // the time limit comes first
  EXPECT_NE(progress_line(p, 10).find("at most 0:01 left"), std::string::npos);
}

TEST(Progress, SlowCandidatesShowSecondsEachAndNoRateBeforeTheFirst) {
  Progress p;
  p.problem = "gemm";
  p.space_size = 100;
  p.elapsed_s = 3;
  EXPECT_EQ(progress_line(p, 4), "gemm [    ] 0/100 best -  0:03");
  p.index = 2;
  p.elapsed_s = 10;  // 5 s each, 98 left
  EXPECT_NE(progress_line(p, 4).find(", 5.0 s each, at most 8:10 left"), std::string::npos);
}

}  // namespace
}  // namespace attune
