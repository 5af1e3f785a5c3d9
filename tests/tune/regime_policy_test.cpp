#include "tune/regime_policy.h"

#include <gtest/gtest.h>

namespace attune {
namespace {

TEST(RegimePolicy, RankFirstThenDeployForTheBaselineAndWithinTheBand) {
  auto p = RegimePolicy::make({Regime::kRank, Regime::kDeploy}, 0.5);
  ASSERT_TRUE(p.ok()) << p.error().message();
  EXPECT_EQ(p->ranking(), Regime::kRank);
  EXPECT_TRUE(p->deploys(false, 100, std::nullopt));  // the first passing candidate
  EXPECT_TRUE(p->deploys(false, 150, 100.0));         // at the band's edge
  EXPECT_FALSE(p->deploys(false, 151, 100.0));
  EXPECT_TRUE(p->deploys(true, 1000, 100.0));  // the baseline always
  EXPECT_EQ(p->ranking_us(3.0, 4.0), 3.0);
  EXPECT_EQ(p->ranking_us(std::nullopt, 4.0), std::nullopt);
}

TEST(RegimePolicy, ABackendMeasuringOnlyInDeployIsRankedByItsDeployTime) {
  auto p = RegimePolicy::make({Regime::kDeploy}, 0.5);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->ranking(), Regime::kDeploy);
  EXPECT_FALSE(p->deploys(true, 100, std::nullopt));  // measured there already
  EXPECT_FALSE(p->deploys(false, 100, 100.0));
  EXPECT_EQ(p->ranking_us(std::nullopt, 4.0), 4.0);
}

TEST(RegimePolicy, NoDeployRegimeOrANegativeBandIsRefused) {
  EXPECT_FALSE(RegimePolicy::make({Regime::kRank}, 0.5).ok());
  EXPECT_FALSE(RegimePolicy::make({}, 0.5).ok());
  EXPECT_FALSE(RegimePolicy::make({Regime::kRank, Regime::kDeploy}, -0.1).ok());
}

}  // namespace
}  // namespace attune
