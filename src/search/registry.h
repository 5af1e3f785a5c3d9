// Every strategy attune offers, in one table: its name, what it documents about itself (options,
// sharding, whether a prior steers it) and how it is made. make_strategy (strategy.h) looks names
// up here. A constant table; thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "search/strategy.h"

namespace attune::search {

struct Registration {
  StrategyInfo info;
  // Checks settings against info.options without making the strategy.
  std::function<Status(const StrategySettings&)> check;
  std::function<Result<std::unique_ptr<Strategy>>(const Space&, const StrategyOptions&,
                                                  const StrategyContext&)>
      make;
};

// grid, random, mcts, annealing, genetic.
const std::vector<Registration>& registrations();
// nullptr for a name not in registrations().
const Registration* find_registration(const std::string& name);

// The strategies beyond grid and random (what the contract tests of tests/search run on every
// strategy: baseline first, legal, never repeated). nullptr when the name is not one of
// search_strategy_names() or options.settings are refused.
std::unique_ptr<Strategy> make_search_strategy(const std::string& name, const Space& space,
                                               const StrategyOptions& options);
std::vector<std::string> search_strategy_names();

}  // namespace attune::search
