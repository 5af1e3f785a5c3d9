#include "search/strategy.h"

#include "search/registry.h"

namespace attune {

namespace {
Result<const search::Registration*> find(const std::string& name) {
  if (const auto* r = search::find_registration(name)) return r;
  std::string known;
  for (const auto& n : strategy_names()) known += (known.empty() ? "" : ", ") + n;
  return Error::invalid_argument("unknown strategy '" + name + "' (known: " + known + ")");
}
}  // namespace

std::vector<std::string> strategy_names() {
  std::vector<std::string> names;
  for (const auto& r : search::registrations()) names.push_back(r.info.name);
  return names;
}

Result<StrategyInfo> strategy_info(const std::string& name) {
  ATTUNE_ASSIGN(const auto* r, find(name));
  return r->info;
}

Status check_strategy_settings(const std::string& name, const StrategySettings& settings) {
  ATTUNE_ASSIGN(const auto* r, find(name));
  return r->check(settings);
}

Result<std::unique_ptr<Strategy>> make_strategy(const std::string& name, const Space& space,
                                                const StrategyOptions& o,
                                                const StrategyContext& context) {
  if (o.shard_count == 0 || o.shard_index >= o.shard_count)
    return Error::invalid_argument("shard " + std::to_string(o.shard_index) + "/" +
                                   std::to_string(o.shard_count) +
                                   " is out of range; use i/n with 0 <= i < n");
  ATTUNE_ASSIGN(const auto* r, find(name));
  if (o.shard_count > 1 && !r->info.shardable)
    return Error::invalid_argument("--shard splits the grid; use --strategy grid with it");
  return r->make(space, o, context);
}

}  // namespace attune
