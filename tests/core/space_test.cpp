#include "core/space.h"

#include <set>

#include <gtest/gtest.h>

namespace attune {
namespace {

Space tiles_space() {
  // 4 x 3 x 2 = 24 cartesian; the constraint bm * bn <= 8192 prunes at the second fork.
  std::vector<Knob> knobs = {
      {"bm", {32, 64, 128, 256}, 1, KnobKind::kInPlace},
      {"bn", {32, 64, 128}, 0, KnobKind::kInPlace},
      {"stages", {2, 3}, 0, KnobKind::kInPlace},
  };
  std::vector<Constraint> cs = {
      {"bm * bn <= 8192",
       {"bm", "bn"},
       [](const Assignment& a) { return a.i("bm") * a.i("bn") <= 8192; }},
  };
  return Space::make(std::move(knobs), std::move(cs)).value();
}

TEST(Space, BaselineComesFirstAndEnumerationIsCompleteAndUnique) {
  Space s = tiles_space();
  auto e = s.enumerate();
  auto first = e.next();
  ASSERT_TRUE(first);
  EXPECT_EQ(s.config(*first).text(), "bm=64,bn=32,stages=2");
  std::set<Point> seen{*first};
  while (auto p = e.next()) {
    EXPECT_TRUE(s.prefix_legal(*p));
    EXPECT_TRUE(seen.insert(*p).second) << "duplicate " << s.config(*p).text();
  }
  // Legal (bm,bn): 32x{32,64,128}, 64x{32,64,128}, 128x{32,64}, 256x{32} = 9, times 2 stages.
  EXPECT_EQ(seen.size(), 18u);
  EXPECT_EQ(s.count(), 18u);
  EXPECT_EQ(s.cartesian_size(), 24.0);
}

TEST(Space, EnumerationIsDeterministic) {
  Space s = tiles_space();
  std::vector<std::string> a, b;
  for (auto e = s.enumerate(); auto p = e.next();) a.push_back(s.config(*p).text());
  for (auto e = s.enumerate(); auto p = e.next();) b.push_back(s.config(*p).text());
  EXPECT_EQ(a, b);
}

TEST(Space, IllegalPrefixIsPrunedAtItsFork) {
  Space s = tiles_space();
  int calls = 0;
  std::vector<Knob> knobs = {{"a", {1, 2}, 0}, {"b", {1, 2, 3}, 0}, {"c", {1, 2, 3, 4}, 0}};
  std::vector<Constraint> cs = {{"a == 1", {"a"}, [&](const Assignment& x) {
                                   ++calls;
                                   return x.i("a") == 1;
                                 }}};
  Space t = Space::make(knobs, cs).value();
  EXPECT_EQ(t.count(), 12u);
  // The constraint reads only 'a', so it runs once per option of 'a' per walk, not per leaf.
  EXPECT_LE(calls, 2 + 1);                        // +1 for the baseline check in make()
  EXPECT_TRUE(s.legal_options({3}).size() == 1);  // bm=256 allows only bn=32
}

TEST(Space, DeadEndPrefixesAreSkipped) {
  // b's only legal options with a=2 are none: a=2 is a dead end.
  std::vector<Knob> knobs = {{"a", {1, 2, 3}, 0}, {"b", {1, 2}, 0}};
  std::vector<Constraint> cs = {
      {"a != 2", {"a", "b"}, [](const Assignment& x) { return x.i("a") != 2; }}};
  Space s = Space::make(knobs, cs).value();
  EXPECT_EQ(s.count(), 4u);
  std::vector<std::string> texts;
  for (auto e = s.enumerate(); auto p = e.next();) texts.push_back(s.config(*p).text());
  EXPECT_EQ(texts, (std::vector<std::string>{"a=1,b=1", "a=1,b=2", "a=3,b=1", "a=3,b=2"}));
}

TEST(Space, ConfigRoundTripsThroughText) {
  Space s = tiles_space();
  for (auto e = s.enumerate(); auto p = e.next();) {
    Config c = s.config(*p);
    auto back = s.parse(c.text());
    ASSERT_TRUE(back.ok()) << back.error().message();
    EXPECT_EQ(*back, c);
    EXPECT_EQ(back->hash(), c.hash());
  }
}

TEST(Space, AConfigLeavingKnobsOutTakesTheBaselinesValuesForThem) {
  Space s = tiles_space();  // baseline bm=64, bn=32, stages=2
  auto p = s.point_over_baseline(*Config::parse("stages=3"));
  ASSERT_TRUE(p.ok()) << p.error().message();
  EXPECT_EQ(s.config(*p).text(), "bm=64,bn=32,stages=3");
  auto whole = s.point_over_baseline(*Config::parse("bm=128,bn=64,stages=2"));
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(*whole, *s.point(*Config::parse("bm=128,bn=64,stages=2")));
  EXPECT_FALSE(s.point_over_baseline(*Config::parse("x=1")).ok());       // unknown knob
  EXPECT_FALSE(s.point_over_baseline(*Config::parse("stages=9")).ok());  // no such option
  // Constraints are the caller's: bm=256 with the baseline's bn=32 is legal, with bn=128 not.
  auto wide = s.point_over_baseline(*Config::parse("bm=256,bn=128"));
  ASSERT_TRUE(wide.ok());
  EXPECT_FALSE(s.prefix_legal(*wide));
}

TEST(Space, ParseRejectsUnknownKnobsValuesAndIllegalConfigs) {
  Space s = tiles_space();
  EXPECT_FALSE(s.parse("bm=64,bn=32").ok());               // missing knob
  EXPECT_FALSE(s.parse("bm=64,bn=32,stages=9").ok());      // no such option
  EXPECT_FALSE(s.parse("bm=64,bn=32,stages=2,x=1").ok());  // unknown knob
  auto illegal = s.parse("bm=256,bn=128,stages=2");
  ASSERT_FALSE(illegal.ok());
  EXPECT_NE(illegal.error().message().find("bm * bn <= 8192"), std::string::npos);
  EXPECT_TRUE(s.parse("stages=3,bn=64,bm=32").ok());  // any order
}

TEST(Space, MakeRejectsBadDeclarations) {
  EXPECT_FALSE(Space::make({{"a", {}, 0}}).ok());
  EXPECT_FALSE(Space::make({{"a", {1}, 1}}).ok());
  EXPECT_FALSE(Space::make({{"a", {1}, 0}, {"a", {2}, 0}}).ok());
  EXPECT_FALSE(Space::make({{"a b", {1}, 0}}).ok());
  EXPECT_FALSE(Space::make({{"a", {"x,y"}, 0}}).ok());
  EXPECT_FALSE(Space::make({{"a", {1, 1}, 0}}).ok());
  EXPECT_FALSE(
      Space::make({{"a", {1}, 0}}, {{"b>0", {"b"}, [](const Assignment&) { return true; }}}).ok());
  // A baseline that violates a constraint is refused with the constraint named.
  auto r = Space::make({{"a", {1, 2}, 0}},
                       {{"a > 1", {"a"}, [](const Assignment& x) { return x.i("a") > 1; }}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("a > 1"), std::string::npos);
}

TEST(Space, EmptySpaceHasOneConfig) {
  Space s = Space::make({}).value();
  EXPECT_EQ(s.count(), 1u);
  auto e = s.enumerate();
  auto p = e.next();
  ASSERT_TRUE(p);
  EXPECT_TRUE(p->empty());
  EXPECT_FALSE(e.next());
}

}  // namespace
}  // namespace attune
