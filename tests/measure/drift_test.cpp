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

}  // namespace
}  // namespace attune::measure
