// portfolio: mcts and a genetic algorithm over one space, sharing every result. mcts proposes
// alone until it stalls (PortfolioOptions::stall evaluations without a new best); from then on the
// next proposal's arm is drawn by how good each arm's recent proposals were (adaptive operator
// selection by probability matching, with a floor so neither arm starves).
//
// Why: mcts descends a tree with knob 0 at the root and commits early to one option of the top
// knobs, then enumerates most of that subtree; when the committed option is the wrong one it stops
// improving. A genetic algorithm changes several knobs at once and is not bound to the knob order,
// but is slower where the tree's commitment is right. Each arm sees every result: the tree backs up
// the genetic algorithm's finds (so a good config found elsewhere moves its incumbent and reopens
// that branch), and the genetic algorithm breeds from mcts's. Deterministic for a seed. One thread
// at a time.
#pragma once

#include <memory>

#include "search/mcts.h"
#include "search/options.h"
#include "search/strategy.h"

namespace attune::search {

struct PortfolioOptions {
  // Each arm's share of proposals never falls below this.
  double floor = 0.2;
  // How many of an arm's most recent results its quality is judged on.
  std::size_t window = 16;
  // Evaluations after the baseline given to mcts alone before the genetic arm starts (its
  // initial samples and first descents).
  std::size_t warmup = 16;
  // After the warmup, mcts goes on alone until this many evaluations in a row found no new best;
  // from then on both arms share the proposals.
  std::size_t stall = 12;
  // The genetic arm's population.
  std::size_t population = 20;
};

const OptionList<PortfolioOptions>& portfolio_option_list();

std::unique_ptr<Strategy> make_portfolio(const Space& space, const StrategyOptions& options,
                                         const PortfolioOptions& portfolio, MctsOptions mcts);

}  // namespace attune::search
