// The strategies of src/search beyond grid and random: annealing, genetic and mcts (cold prior).
// make_strategy (strategy.h) consults this for the names it does not know itself. Pure factory.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "search/strategy.h"

namespace attune::search {

// nullptr when the name is not one of search_strategy_names().
std::unique_ptr<Strategy> make_search_strategy(const std::string& name, const Space& space,
                                               const StrategyOptions& options);
std::vector<std::string> search_strategy_names();

}  // namespace attune::search
