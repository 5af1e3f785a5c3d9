#include <set>

#include <gtest/gtest.h>

#include "search/strategy.h"

namespace attune {
namespace {

Space test_space() {
  return Space::make({{"a", {1, 2, 3, 4, 5}, 2}, {"b", {1, 2, 4, 8}, 0}, {"c", {0, 1, 2}, 0}},
                     {{"a * b <= 16",
                       {"a", "b"},
                       [](const Assignment& x) { return x.i("a") * x.i("b") <= 16; }}})
      .value();
}

std::vector<Point> drain(Strategy& s) {
  std::vector<Point> out;
  while (auto p = s.propose()) out.push_back(*p);
  return out;
}

TEST(Grid, ShardsAreDisjointDeterministicAndCoverTheGrid) {
  Space space = test_space();
  auto all = drain(**make_strategy("grid", space, {}));
  EXPECT_EQ(all.size(), space.count());
  EXPECT_EQ(all.front(), space.baseline());
  for (std::uint32_t n : {2u, 3u, 7u}) {
    std::multiset<Point> uni;
    for (std::uint32_t i = 0; i < n; ++i) {
      auto shard = drain(**make_strategy("grid", space, {0, i, n}));
      auto again = drain(**make_strategy("grid", space, {0, i, n}));
      EXPECT_EQ(shard, again) << "shard " << i << "/" << n << " is not deterministic";
      uni.insert(shard.begin(), shard.end());
    }
    EXPECT_EQ(uni.size(), all.size()) << n << " shards overlap or miss configs";
    EXPECT_EQ(std::set<Point>(uni.begin(), uni.end()), std::set<Point>(all.begin(), all.end()));
  }
}

TEST(Grid, BadShardsAreRefused) {
  Space space = test_space();
  EXPECT_FALSE(make_strategy("grid", space, {0, 3, 2}).ok());
  EXPECT_FALSE(make_strategy("grid", space, {0, 0, 0}).ok());
  EXPECT_FALSE(make_strategy("random", space, {0, 0, 2}).ok());
  auto r = make_strategy("annealed-luck", space, {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("known: grid"), std::string::npos);
}

TEST(Random, SeededWithoutReplacementAndLegal) {
  Space space = test_space();
  auto a = drain(**make_strategy("random", space, {42}));
  auto b = drain(**make_strategy("random", space, {42}));
  auto c = drain(**make_strategy("random", space, {43}));
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_EQ(a.size(), space.count());
  EXPECT_EQ(std::set<Point>(a.begin(), a.end()).size(), a.size());
  for (const auto& p : a) EXPECT_TRUE(space.prefix_legal(p));
}

}  // namespace
}  // namespace attune
