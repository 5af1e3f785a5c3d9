#include "search/registry.h"

#include "search/annealing.h"
#include "search/genetic.h"
#include "search/mcts.h"

namespace attune::search {

std::unique_ptr<Strategy> make_search_strategy(const std::string& name, const Space& space,
                                               const StrategyOptions& options) {
  if (name == "mcts") return std::make_unique<Mcts>(space, options);
  if (name == "annealing") return make_annealing(space, options);
  if (name == "genetic") return make_genetic(space, options);
  return nullptr;
}

std::vector<std::string> search_strategy_names() { return {"mcts", "annealing", "genetic"}; }

}  // namespace attune::search
