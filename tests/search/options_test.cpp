// What strategies document about themselves, their --strategy-option settings, the context that
// carries a prior, and the state they keep between runs.
#include <algorithm>
#include <fstream>
#include <iterator>

#include <gtest/gtest.h>

#include "search/harness.h"
#include "search/mcts.h"
#include "search/options.h"
#include "search/registry.h"
#include "search/strategy.h"

namespace attune {
namespace {

Space cube() {
  std::vector<Knob> knobs = {{"a", {0, 1, 2, 3, 4, 5, 6, 7}, 0},
                             {"b", {0, 1, 2, 3, 4, 5, 6, 7}, 0},
                             {"c", {0, 1, 2, 3, 4, 5, 6, 7}, 0}};
  return Space::make(std::move(knobs)).value();
}
search::Evaluation slope(const Point& p) {
  return {Verdict::kOk, 10.0 + p[0] + p[1] + p[2]};
}

std::vector<Point> trace(Strategy& s, const Space& space, std::size_t budget) {
  auto t = search::run_strategy(s, space, slope, budget);
  EXPECT_TRUE(t.ok()) << t.error().message();
  return t.ok() ? t->proposed : std::vector<Point>{};
}

std::vector<Point> trace(const std::string& name, const StrategySettings& settings,
                         std::size_t budget = 30, const StrategyContext& context = {}) {
  Space space = cube();
  StrategyOptions o;
  o.seed = 3;
  o.settings = settings;
  auto s = make_strategy(name, space, o, context);
  EXPECT_TRUE(s.ok()) << s.error().message();
  return s.ok() ? trace(**s, space, budget) : std::vector<Point>{};
}

const StrategyOptionInfo* option(const StrategyInfo& info, const std::string& name) {
  for (const auto& o : info.options)
    if (o.name == name) return &o;
  return nullptr;
}

TEST(StrategyInfo, EachStrategyDocumentsItsOptionsWithTheDefaultsInForce) {
  auto mcts = strategy_info("mcts");
  ASSERT_TRUE(mcts.ok());
  EXPECT_TRUE(mcts->takes_prior);
  EXPECT_FALSE(mcts->shardable);
  const search::MctsOptions defaults;
  const auto* e = option(*mcts, "exploration");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->type, "real");
  EXPECT_EQ(e->default_value, "0.25");
  EXPECT_DOUBLE_EQ(defaults.exploration, 0.25);
  EXPECT_EQ(e->range, ">= 0");
  EXPECT_FALSE(e->help.empty());
  const auto* n = option(*mcts, "initial_samples");
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->type, "integer");
  EXPECT_EQ(n->default_value, std::to_string(defaults.initial_samples));
  EXPECT_EQ(option(*mcts, "value_power")->range, "> 0");
  EXPECT_EQ(option(*mcts, "incumbent_bias")->range, "0..1");

  for (const char* name : {"annealing", "genetic"}) {
    auto info = strategy_info(name);
    ASSERT_TRUE(info.ok()) << name;
    EXPECT_FALSE(info->takes_prior) << name;
    EXPECT_FALSE(info->options.empty()) << name;
    for (const auto& o : info->options) EXPECT_FALSE(o.help.empty()) << name << " " << o.name;
  }
  EXPECT_EQ(option(*strategy_info("genetic"), "population")->default_value, "20");
  EXPECT_EQ(option(*strategy_info("annealing"), "cooling")->range, "> 0 and <= 1");
  auto grid = strategy_info("grid");
  ASSERT_TRUE(grid.ok());
  EXPECT_TRUE(grid->shardable);
  EXPECT_TRUE(grid->options.empty());
  EXPECT_FALSE(strategy_info("luck").ok());
}

TEST(StrategyOptions, ASettingChangesWhatTheStrategyDoes) {
  // Without initial samples mcts stays under the baseline's first option for its first points.
  auto plain = trace("mcts", {}, 9);
  auto none = trace("mcts", {{"initial_samples", "0"}}, 9);
  EXPECT_NE(plain, none);
  EXPECT_TRUE(std::all_of(none.begin(), none.end(), [](const Point& p) { return p[0] == 0; }));
  EXPECT_EQ(none, trace("mcts", {{"initial_samples", "0"}}, 9));
  EXPECT_NE(trace("genetic", {}), trace("genetic", {{"population", "4"}}));
  EXPECT_NE(trace("annealing", {}),
            trace("annealing", {{"max_step", "0"}, {"start_temperature", "2.5"}}));
  // The explicit default is the default.
  EXPECT_EQ(plain, trace("mcts", {{"initial_samples", "8"}, {"exploration", "0.25"}}, 9));
}

TEST(StrategyOptions, UnknownNamesBadNumbersAndValuesOutOfRangeAreRefusedInOneLine) {
  auto unknown = check_strategy_settings("mcts", {{"explore", "1"}});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().kind(), Error::Kind::kInvalidArgument);
  EXPECT_NE(unknown.error().message().find("'explore'"), std::string::npos);
  EXPECT_NE(unknown.error().message().find(
                "known: exploration, value_power, incumbent_bias, incumbent_tail, "
                "neighbour_bias, initial_samples, first_play"),
            std::string::npos)
      << unknown.error().message();
  auto none = check_strategy_settings("random", {{"seed", "1"}});
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message().find("known: none"), std::string::npos)
      << none.error().message();

  for (const auto& [name, value] : std::vector<std::pair<std::string, std::string>>{
           {"exploration", "abc"},
           {"exploration", "-1"},
           {"exploration", ""},
           {"exploration", "1e999"},
           {"exploration", "nan"},
           {"value_power", "0"},
           {"incumbent_bias", "1.5"},
           {"initial_samples", "2.5"},
           {"initial_samples", "-1"},
           {"initial_samples", "99999999999999999999999"}}) {
    auto st = check_strategy_settings("mcts", {{name, value}});
    ASSERT_FALSE(st.ok()) << name << "=" << value;
    EXPECT_EQ(st.error().message().find('\n'), std::string::npos);
    EXPECT_NE(st.error().message().find(name), std::string::npos) << st.error().message();
  }
  auto big =
      check_strategy_settings("annealing", {{"restart_after", "3000000000"}});  // past an int
  EXPECT_FALSE(big.ok());
  EXPECT_TRUE(
      check_strategy_settings("mcts", {{"exploration", "0.5"}, {"initial_samples", "0"}}).ok());
  EXPECT_TRUE(check_strategy_settings("annealing", {{"cooling", "1"}}).ok());
  EXPECT_FALSE(check_strategy_settings("annealing", {{"cooling", "0"}}).ok());
  // make_strategy refuses the same settings.
  Space space = cube();
  StrategyOptions o;
  o.settings = {{"population", "1"}};
  EXPECT_FALSE(make_strategy("genetic", space, o).ok());
}

// The prior reaches mcts through the context: one that rules out every first option but 5.
TEST(StrategyContext, CarriesThePriorToAStrategyThatTakesOne) {
  StrategyContext c;
  c.prior = [](const Point& prefix, const std::vector<std::uint32_t>& opts) {
    std::vector<double> w;
    for (auto x : opts) w.push_back(prefix.empty() ? (x == 5 ? 1.0 : 0.0) : 1.0);
    return w;
  };
  auto steered = trace("mcts", {}, 9, c);
  for (std::size_t i = 1; i < steered.size(); ++i) EXPECT_EQ(steered[i][0], 5u) << i;
  EXPECT_NE(steered, trace("mcts", {}, 9));
}

TEST(StrategyState, MctsSavesItsTreeAndAStatelessStrategyNeitherSavesNorLoads) {
  Space space = cube();
  auto first = make_strategy("mcts", space, StrategyOptions{4});
  ASSERT_TRUE(first.ok());
  auto t1 = trace(**first, space, 25);
  std::vector<StateNode> state = (*first)->save_state();
  ASSERT_FALSE(state.empty());
  EXPECT_EQ(state.front().path, "");
  EXPECT_EQ(state.front().visits, 25);

  auto second = make_strategy("mcts", space, StrategyOptions{4});
  ASSERT_TRUE((*second)->load_state(state).ok());
  auto t2 = trace(**second, space, 25);
  for (const auto& p : t2)
    EXPECT_EQ(std::count(t1.begin(), t1.end(), p), 0) << space.config(p).text();
  EXPECT_FALSE((*second)->load_state({{"a=9", 1, 10, "{}"}}).ok());

  for (const char* name : {"grid", "random", "annealing", "genetic"}) {
    auto s = make_strategy(name, space, StrategyOptions{1});
    ASSERT_TRUE(s.ok());
    trace(**s, space, 5);
    EXPECT_TRUE((*s)->save_state().empty()) << name;
    EXPECT_TRUE((*s)->load_state({}).ok()) << name;
    EXPECT_FALSE((*s)->load_state(state).ok()) << name;
  }
}

// The README's table of strategy options is the one the strategies document.
TEST(StrategyInfo, TheReadmeTableListsEveryOptionAsDocumented) {
  std::ifstream in(std::string(ATTUNE_SOURCE_DIR) + "/README.md");
  ASSERT_TRUE(in) << "README.md not found";
  const std::string readme((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const auto& name : strategy_names()) {
    auto info = strategy_info(name);
    ASSERT_TRUE(info.ok()) << name;
    for (const auto& o : info->options) {
      const std::string row = "| " + name + " | `" + o.name + "` | " + o.type + " | " + o.range +
                              " | " + o.default_value + " | ";
      EXPECT_NE(readme.find(row), std::string::npos) << "README.md lacks the row " << row;
    }
  }
}

}  // namespace
}  // namespace attune
