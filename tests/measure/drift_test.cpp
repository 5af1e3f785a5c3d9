// The anchor protocol on its own: a scripted anchor, a FakeClock, no real sleeps.
#include "measure/drift.h"

#include <deque>

#include <gtest/gtest.h>

namespace attune::measure {
namespace {

using Result = AnchorCheck::Result;

// Readings handed out in order; past the script's end, the last level repeats.
struct ScriptedAnchor {
  std::deque<std::optional<double>> script;
  std::optional<double> level = 10.0;
  int reads = 0;
  std::optional<double> operator()() {
    ++reads;
    if (script.empty()) return level;
    auto t = script.front();
    script.pop_front();
    return t;
  }
};

struct DriftGuardTest : ::testing::Test {
  platform::FakeClock clock;
  ScriptedAnchor anchor;
  DriftPolicy policy;
  DriftGuard guard() {
    return DriftGuard(
        policy, [this] { return anchor(); }, clock);
  }
  std::vector<double> sleeps() const {
    std::vector<double> s;
    for (auto d : clock.sleeps()) s.push_back(d.count());
    return s;
  }
};

TEST_F(DriftGuardTest, ACheckIsDueEveryNCandidatesAndTheFirstTakesTheReference) {
  policy.anchor_every = 3;
  DriftGuard g = guard();
  EXPECT_FALSE(g.add({0}, {1}));
  EXPECT_EQ(anchor.reads, 3);  // the reference: the median of three readings
  EXPECT_FALSE(g.add({1}, {2}));
  EXPECT_TRUE(g.add({2}, {3}));
  EXPECT_TRUE(g.pending());
  AnchorCheck c = g.check();
  EXPECT_EQ(c.result, Result::kClean);
  EXPECT_EQ(anchor.reads, 4);  // one reading within the bound is enough
  EXPECT_TRUE(c.redo.empty());
  EXPECT_FALSE(g.pending());
  EXPECT_TRUE(clock.sleeps().empty());
}

TEST_F(DriftGuardTest, OneSlowReadingIsOverruledByTwoConfirmingOnes) {
  policy.anchor_every = 1;
  DriftGuard g = guard();
  anchor.script = {10, 10, 10, 15, 10, 10};
  ASSERT_TRUE(g.add({0}, {1}));
  AnchorCheck c = g.check();
  EXPECT_EQ(c.result, Result::kClean);
  EXPECT_EQ(anchor.reads, 6);
  EXPECT_TRUE(clock.sleeps().empty());
}

TEST_F(DriftGuardTest,
       DriftHandsBackTheCandidatesSinceTheLastCleanAnchorAndBacksOffUntilItRecovers) {
  policy.anchor_every = 2;
  policy.backoff_s = 1.0;
  DriftGuard g = guard();
  ASSERT_FALSE(g.add({0}, {1}));
  ASSERT_TRUE(g.add({1}, {2, 3}));
  ASSERT_EQ(g.check().result, Result::kClean);  // these two were measured on a quiet device
  ASSERT_FALSE(g.add({2}, {4}));
  ASSERT_TRUE(g.add({3}, {5, 6}));
  // Slow by 40% for the check and the first round of the back-off, then back.
  anchor.script = {14, 14, 14, 14, 14, 14};
  AnchorCheck c = g.check();
  ASSERT_EQ(c.result, Result::kDrifted);
  EXPECT_DOUBLE_EQ(c.reference_us, 10);
  EXPECT_DOUBLE_EQ(c.reading_us, 14);
  EXPECT_NEAR(c.drift(), 0.4, 1e-12);
  ASSERT_EQ(c.redo.size(), 2u);
  EXPECT_EQ(c.redo[0].point, (Point{2}));
  EXPECT_EQ(c.redo[0].rows, (std::vector<std::int64_t>{4}));
  EXPECT_EQ(c.redo[1].point, (Point{3}));
  EXPECT_EQ(c.redo[1].rows, (std::vector<std::int64_t>{5, 6}));
  EXPECT_TRUE(clock.sleeps().empty());  // the caller discards before the wait

  Settling s = g.settle();
  EXPECT_TRUE(s.recovered);
  EXPECT_FALSE(s.new_reference_us);
  EXPECT_EQ(sleeps(), (std::vector<double>{1.0, 2.0}));  // doubling
  // Measured again, the two are checked at the next anchor, against the old level.
  EXPECT_FALSE(g.add({2}, {7}));
  EXPECT_TRUE(g.add({3}, {8, 9}));
  EXPECT_EQ(g.check().result, Result::kClean);
}

// A two-level anchor: the device settles at a new level and stays there. After max_backoffs
// rounds the guard measures against the new level instead of backing off for ever.
TEST_F(DriftGuardTest, AnAnchorThatStaysAtANewLevelBecomesTheReference) {
  policy.anchor_every = 1;
  policy.backoff_s = 0.5;
  policy.max_backoffs = 4;
  DriftGuard g = guard();
  ASSERT_TRUE(g.add({0}, {1}));
  anchor.level = 13;
  AnchorCheck c = g.check();
  ASSERT_EQ(c.result, Result::kDrifted);
  Settling s = g.settle();
  EXPECT_FALSE(s.recovered);
  ASSERT_TRUE(s.new_reference_us);
  EXPECT_DOUBLE_EQ(*s.new_reference_us, 13);
  EXPECT_EQ(sleeps(), (std::vector<double>{0.5, 1.0, 2.0, 4.0}));
  ASSERT_TRUE(g.add({1}, {2}));
  EXPECT_EQ(g.check().result, Result::kClean);  // 13 is the level now
  anchor.level = 10;                            // and back to 10 is drift again
  ASSERT_TRUE(g.add({2}, {3}));
  EXPECT_EQ(g.check().result, Result::kDrifted);
}

TEST_F(DriftGuardTest, WithoutBackOffRoundsTheDriftedReadingIsTheNewLevel) {
  policy.anchor_every = 1;
  policy.max_backoffs = 0;
  DriftGuard g = guard();
  ASSERT_TRUE(g.add({0}, {1}));
  anchor.level = 20;
  ASSERT_EQ(g.check().result, Result::kDrifted);
  Settling s = g.settle();
  EXPECT_TRUE(clock.sleeps().empty());
  ASSERT_TRUE(s.new_reference_us);
  EXPECT_DOUBLE_EQ(*s.new_reference_us, 20);
}

TEST_F(DriftGuardTest, AnAnchorThatFailsToRunLeavesItsCandidatesUnchecked) {
  policy.anchor_every = 1;
  DriftGuard g = guard();
  ASSERT_TRUE(g.add({0}, {1}));
  anchor.script = {std::nullopt};
  AnchorCheck c = g.check();
  EXPECT_EQ(c.result, Result::kUnreadable);
  EXPECT_TRUE(c.redo.empty());
  EXPECT_FALSE(g.pending());
}

TEST_F(DriftGuardTest, NoReferenceNoPendingAndOffMeansNoReadings) {
  policy.anchor_every = 1;
  anchor.level = std::nullopt;  // the anchor never runs
  DriftGuard g = guard();
  EXPECT_FALSE(g.add({0}, {1}));
  EXPECT_FALSE(g.pending());
  anchor.level = 10;  // it does later: that reading becomes the reference
  EXPECT_TRUE(g.add({1}, {2}));

  policy.anchor_every = 0;
  anchor.reads = 0;
  DriftGuard off = guard();
  EXPECT_FALSE(off.add({0}, {1}));
  EXPECT_FALSE(off.pending());
  EXPECT_EQ(anchor.reads, 0);
}

// The H200's gemm m=1000 n=9216 k=3072 anchor: two levels (74.8 us and 82-85 us) it switches
// between. Without a bound the tuner discarded and re-measured candidates fifteen times and never
// finished; with one, the levels are found and a reading at either is clean.
TEST_F(DriftGuardTest, AnAnchorWithTwoLevelsIsDetectedAndStopsCountingAsDrift) {
  policy.anchor_every = 1;
  policy.backoff_s = 0.5;
  policy.max_backoffs = 2;
  DriftGuard g = guard();
  // The reference at the low level, then readings alternating between the two levels.
  anchor.script = {74.8, 74.9, 74.7};
  ASSERT_TRUE(g.add({0}, {1}));
  const std::vector<double> two = {83.1, 74.8, 84.0, 74.6, 82.9, 74.9, 83.5, 74.7};
  for (int i = 0; i < 400; ++i)
    anchor.script.push_back(two[static_cast<std::size_t>(i) % two.size()]);
  int drifted = 0, unstable = 0;
  for (int i = 0; i < 40; ++i) {
    ASSERT_TRUE(g.add({static_cast<std::uint32_t>(i + 1)}, {i + 2}));
    AnchorCheck c = g.check();
    drifted += c.result == Result::kDrifted;
    unstable += c.result == Result::kUnstable;
    if (c.result == Result::kDrifted) (void)g.settle();
  }
  ASSERT_TRUE(g.levels());
  EXPECT_NEAR(g.levels()->low_us, 74.8, 0.2);
  EXPECT_NEAR(g.levels()->high_us, 83.3, 0.8);
  EXPECT_GE(g.levels()->low_readings, 2);
  EXPECT_GE(g.levels()->high_readings, 2);
  EXPECT_LE(drifted, 3);  // a few events before the two levels are seen, then none
  EXPECT_EQ(unstable, 0);
  EXPECT_LE(g.waited_s(), policy.max_wait_s);
}

TEST_F(DriftGuardTest, OneDriftEpisodeAndItsRecoveryAreNotTwoLevels) {
  EXPECT_FALSE(anchor_levels({10, 10.1, 9.9, 14, 14.1, 13.9, 14, 10, 10.1, 10}, 0.1));
  EXPECT_FALSE(anchor_levels({10, 10.1, 9.9, 10, 10.2, 9.8}, 0.1));  // one level
  auto l = anchor_levels({10, 14, 10.1, 14.1, 9.9, 13.9, 10}, 0.1);
  ASSERT_TRUE(l);
  EXPECT_DOUBLE_EQ(l->low_us, 10);
  EXPECT_DOUBLE_EQ(l->high_us, 14);
  EXPECT_EQ(l->low_readings, 4);
  EXPECT_EQ(l->high_readings, 3);
}

// A device that keeps drifting to new levels: the problem's back-off rounds are bounded, after
// which it is unstable and its search ends instead of looping.
TEST_F(DriftGuardTest, BackOffRoundsPerProblemAreBoundedThenTheProblemIsUnstable) {
  policy.anchor_every = 1;
  policy.backoff_s = 0.25;
  policy.max_backoffs = 2;
  policy.max_rounds = 5;
  policy.max_wait_s = 1000;
  DriftGuard g = guard();
  ASSERT_TRUE(g.add({0}, {1}));
  double level = 10;
  std::vector<Result> results;
  for (int i = 0; i < 10 && (results.empty() || results.back() != Result::kUnstable); ++i) {
    level *= 1.5;  // a new level at every check, never coming back
    anchor.level = level;
    ASSERT_TRUE(g.add({static_cast<std::uint32_t>(i + 1)}, {i + 2}));
    AnchorCheck c = g.check();
    results.push_back(c.result);
    if (c.result == Result::kUnstable) {
      EXPECT_EQ(c.redo.size(), 1u);  // what was measured drifted is still handed back
      break;
    }
    Settling s = g.settle();
    if (s.unstable) break;
  }
  EXPECT_LE(g.rounds(), policy.max_rounds + 1);
  EXPECT_TRUE(results.back() == Result::kUnstable || g.rounds() >= policy.max_rounds);
  EXPECT_LE(clock.sleeps().size(), static_cast<std::size_t>(policy.max_rounds));
}

TEST_F(DriftGuardTest, BackOffTimePerProblemIsBoundedThenTheProblemIsUnstable) {
  policy.anchor_every = 1;
  policy.backoff_s = 1;
  policy.max_backoffs = 6;  // 1 + 2 + 4 + 8 + 16 + 32 s unbounded
  policy.max_wait_s = 10;
  DriftGuard g = guard();
  ASSERT_TRUE(g.add({0}, {1}));
  anchor.level = 20;
  ASSERT_EQ(g.check().result, Result::kDrifted);
  Settling s = g.settle();
  EXPECT_TRUE(s.unstable);
  EXPECT_FALSE(s.new_reference_us);
  double total = 0;
  for (double d : sleeps()) total += d;
  EXPECT_DOUBLE_EQ(total, 10);  // 1 + 2 + 4 + 3: the last wait cut at the bound
  EXPECT_DOUBLE_EQ(g.waited_s(), 10);
}

// The level measured against after a back-off that did not recover is the median of several
// readings: one low reading among them does not become the reference.
TEST_F(DriftGuardTest, ANewLevelIsTheMedianOfSeveralReadings) {
  policy.anchor_every = 1;
  policy.backoff_s = 0.5;
  policy.max_backoffs = 1;
  policy.rebase_readings = 5;
  DriftGuard g = guard();
  ASSERT_TRUE(g.add({0}, {1}));
  // check (3 readings), one back-off round (3), then the five the new level is taken from.
  anchor.script = {13, 13, 13, 13, 13, 13, 11.0, 13.1, 12.9, 13.0, 13.2};
  ASSERT_EQ(g.check().result, Result::kDrifted);
  Settling s = g.settle();
  ASSERT_TRUE(s.new_reference_us);
  EXPECT_DOUBLE_EQ(*s.new_reference_us, 13.0);
}

}  // namespace
}  // namespace attune::measure
