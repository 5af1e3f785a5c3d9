// Simulated annealing over a Space's points: a walk of one-knob moves, accepting a worse config
// with probability exp(-(log t_new - log t_cur) / T) as the temperature T cools. Proposes only
// legal, never-proposed points. Deterministic for a seed. One thread at a time.
#pragma once

#include <memory>

#include "search/options.h"
#include "search/strategy.h"

namespace attune::search {

struct AnnealingOptions {
  double start_temperature = 0.3;  // in log-time units: a 30% slower move is taken ~37% of the time
  double end_temperature = 0.005;
  double cooling = 0.99;       // per evaluation
  std::uint32_t max_step = 2;  // option positions one move may jump (0 = any)
  int restart_after = 60;      // evaluations without a new best before restarting from the best
};

// The AnnealingOptions --strategy-option sets.
const OptionList<AnnealingOptions>& annealing_option_list();

std::unique_ptr<Strategy> make_annealing(const Space& space, const StrategyOptions& options,
                                         const AnnealingOptions& annealing = {});

}  // namespace attune::search
