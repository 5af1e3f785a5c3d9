// A genetic algorithm over a Space's points: a population bred by tournament selection, uniform
// crossover and per-knob mutation, keeping an elite. Children that are illegal or already
// proposed are re-drawn (a random legal unvisited point as the last resort), so only legal,
// never-proposed points are proposed. Deterministic for a seed. One thread at a time.
#pragma once

#include <memory>

#include "search/options.h"
#include "search/strategy.h"

namespace attune::search {

struct GeneticOptions {
  std::size_t population = 20;
  std::size_t elite = 2;  // survivors copied into the next generation's parents
  std::size_t tournament = 3;
  double mutation = 0.0;  // per-knob probability; 0: 1 / number of knobs
};

// The GeneticOptions --strategy-option sets.
const OptionList<GeneticOptions>& genetic_option_list();

std::unique_ptr<Strategy> make_genetic(const Space& space, const StrategyOptions& options,
                                       const GeneticOptions& genetic = {});

}  // namespace attune::search
