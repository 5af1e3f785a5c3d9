// portfolio: mcts, a genetic algorithm and (optionally) a cost model over one space, sharing every
// result. mcts proposes alone until it stalls (PortfolioOptions::stall evaluations without a new
// best); from then on the next proposal's arm is drawn by how good each arm's recent proposals were
// (adaptive operator selection by probability matching, with a floor so no arm starves).
//
// Why: mcts descends a tree with knob 0 at the root and commits early to one option of the top
// knobs, then enumerates most of that subtree; when the committed option is the wrong one it stops
// improving. A genetic algorithm changes several knobs at once and is not bound to the knob order,
// but is slower where the tree's commitment is right. The cost model (search/surrogate.h: ridge
// regression of log time on each knob's options, refitted to every result) ranks every config of
// the space at once, so where the landscape is close to additive in the knobs (bigger tiles help,
// one kernel variant is slow everywhere) it proposes the configs the results point to, which
// neither the tree's order nor the genetic algorithm's mutations reach soon. Each arm sees every
// result: the tree backs up the other arms' finds (so a good config found elsewhere moves its
// incumbent and reopens that branch), the genetic algorithm breeds from them, the model fits them.
// Deterministic for a seed. One thread at a time.
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
  // 1: a third arm, the cost model, joins the other two at the stall; only on spaces of at
  // most model_limit configs, as it enumerates the space and refits itself at each of its
  // proposals, and holds 8 bytes per config per knob option plus two (at most 32 MiB: a space
  // whose table would be larger is left to the other arms). Cold, over seeds 100..149, it cut
  // the median evaluations to within 2% on four of the six convolution spaces (by 12-52%), left
  // one alone and cost one 13%; the other kernels' spaces moved a few evaluations either way
  // (bench/results/search_replay-2026-12-08.md).
  std::size_t model = 0;
  std::size_t model_limit = 100000;
  // The model fits log time capped at the best so far plus this (SurrogateOptions::log_cap).
  double model_log_cap = 0.2;
};

const OptionList<PortfolioOptions>& portfolio_option_list();

std::unique_ptr<Strategy> make_portfolio(const Space& space, const StrategyOptions& options,
                                         const PortfolioOptions& portfolio, MctsOptions mcts);

}  // namespace attune::search
