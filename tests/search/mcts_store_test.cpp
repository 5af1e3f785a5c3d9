// The mcts tree through the Store and back: what the orchestrator does between two runs.
#include <set>

#include <gtest/gtest.h>

#include "search/harness.h"
#include "search/mcts.h"
#include "store/store.h"
#include "support/temp_dir.h"

namespace attune::search {
namespace {

TEST(MctsStore, TreeSurvivesTheDatabaseAndTheNextRunContinues) {
  std::vector<Knob> knobs = {{"block", {32, 64, 128, 256}, 0},
                             {"mode", {"fast", "safe"}, 0},
                             {"ratio", {0.5, 1.5, 2.5}, 0}};
  Space s = Space::make(knobs).value();
  auto eval = [&](const Point& p) {
    if (p[0] == 3 && p[1] == 0) return Evaluation{Verdict::kCrashed, std::nullopt};
    return Evaluation{Verdict::kOk, 10.0 + p[0] + 2.0 * p[1] + 0.5 * p[2]};
  };
  testing::TempDir dir;
  auto store = open_store(dir.file("t.db"));
  ASSERT_TRUE(store) << store.error().message();
  Problem problem("gemm", {{"m", "64"}});
  ASSERT_TRUE((*store)->put_problem(problem).ok());
  const std::string key = problem.structural_key();

  Mcts first(s, StrategyOptions{3});
  auto t1 = run_strategy(first, s, eval, 9);
  ASSERT_TRUE(t1);
  std::vector<SearchNode> rows;
  for (const auto& n : first.export_nodes())
    rows.push_back({n.path, n.visits, n.best_us, n.payload});
  auto put = (*store)->put_search_nodes("dev", key, "mcts", rows);
  ASSERT_TRUE(put.ok()) << put.error().message();

  auto back = (*store)->search_nodes("dev", key, "mcts");
  ASSERT_TRUE(back) << back.error().message();
  ASSERT_EQ(back->size(), rows.size());
  std::vector<TreeNode> nodes;
  for (const auto& r : *back) nodes.push_back({r.path, r.visits, r.best_us, r.payload});
  Mcts second(s, StrategyOptions{3});
  ASSERT_TRUE(second.import_nodes(nodes).ok());
  auto t2 = run_strategy(second, s, eval, 100);
  ASSERT_TRUE(t2) << t2.error().message();
  std::set<Point> all(t1->proposed.begin(), t1->proposed.end());
  for (const auto& p : t2->proposed) EXPECT_TRUE(all.insert(p).second) << s.config(p).text();
  EXPECT_EQ(all.size(), s.count());
}

}  // namespace
}  // namespace attune::search
