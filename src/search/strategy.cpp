#include "search/strategy.h"

#include "search/grid.h"
#include "search/random.h"
#include "search/registry.h"

namespace attune {

std::vector<std::string> strategy_names() {
  std::vector<std::string> names = {"grid", "random"};
  for (auto& n : search::search_strategy_names()) names.push_back(n);
  return names;
}

Result<std::unique_ptr<Strategy>> make_strategy(const std::string& name, const Space& space,
                                                const StrategyOptions& o) {
  if (o.shard_count == 0 || o.shard_index >= o.shard_count)
    return Error::invalid_argument("shard " + std::to_string(o.shard_index) + "/" +
                                   std::to_string(o.shard_count) +
                                   " is out of range; use i/n with 0 <= i < n");
  if (o.shard_count > 1 && name != "grid")
    return Error::invalid_argument("--shard splits the grid; use --strategy grid with it");
  if (name == "grid")
    return std::unique_ptr<Strategy>(new GridStrategy(space, o.shard_index, o.shard_count));
  if (name == "random") return std::unique_ptr<Strategy>(new RandomStrategy(space, o.seed));
  if (auto s = search::make_search_strategy(name, space, o)) return s;
  std::string known;
  for (const auto& n : strategy_names()) known += (known.empty() ? "" : ", ") + n;
  return Error::invalid_argument("unknown strategy '" + name + "' (known: " + known + ")");
}

}  // namespace attune
