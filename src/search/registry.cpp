#include "search/registry.h"

#include <algorithm>

#include "search/annealing.h"
#include "search/genetic.h"
#include "search/grid.h"
#include "search/mcts.h"
#include "search/portfolio.h"
#include "search/random.h"
#include "search/surrogate.h"

namespace attune::search {

namespace {

// A strategy whose options struct O is set from its option list, then made by make(space,
// options, O, context).
template <typename O, typename Make>
Registration registration(std::string name, bool shardable, bool takes_prior,
                          const OptionList<O>& list, Make make) {
  Registration r;
  r.info = {name, shardable, takes_prior, list.info()};
  r.check = [name, &list](const StrategySettings& settings) {
    O o;
    return list.apply(name, settings, o);
  };
  r.make = [name, &list, make](
               const Space& space, const StrategyOptions& options,
               const StrategyContext& context) -> Result<std::unique_ptr<Strategy>> {
    O o;
    ATTUNE_TRY(list.apply(name, options.settings, o));
    return make(space, options, std::move(o), context);
  };
  return r;
}

// A strategy without options: any setting is refused.
template <typename Make>
Registration without_options(std::string name, bool shardable, Make make) {
  Registration r;
  r.info = {name, shardable, false, {}};
  r.check = [name](const StrategySettings& settings) -> Status {
    if (settings.empty()) return Status::success();
    return unknown_option(name, settings.begin()->first, {});
  };
  r.make = [check = r.check, make](const Space& space, const StrategyOptions& options,
                                   const StrategyContext&) -> Result<std::unique_ptr<Strategy>> {
    ATTUNE_TRY(check(options.settings));
    return make(space, options);
  };
  return r;
}

}  // namespace

const std::vector<Registration>& registrations() {
  static const std::vector<Registration> table = {
      without_options("grid", true,
                      [](const Space& s, const StrategyOptions& o) {
                        return std::unique_ptr<Strategy>(
                            new GridStrategy(s, o.shard_index, o.shard_count));
                      }),
      without_options("random", false,
                      [](const Space& s, const StrategyOptions& o) {
                        return std::unique_ptr<Strategy>(new RandomStrategy(s, o.seed));
                      }),
      // mcts is the one a prior steers (the store's newest usable one, see tune/tuner.cpp).
      registration(
          "mcts", false, true, mcts_option_list(),
          [](const Space& s, const StrategyOptions& o, MctsOptions m, const StrategyContext& c) {
            m.prior = c.prior;
            m.prior_generation = c.prior_generation;
            m.predict = c.predict;
            return std::unique_ptr<Strategy>(new Mcts(s, o, std::move(m)));
          }),
      // mcts with swap points repaired across structural forks (MctsOptions::repair_swaps).
      registration("mcts_repair", false, true, mcts_repair_option_list(),
                   [](const Space& s, const StrategyOptions& o, MctsRepairOptions m,
                      const StrategyContext& c) {
                     m.prior = c.prior;
                     m.prior_generation = c.prior_generation;
                     m.predict = c.predict;
                     return std::unique_ptr<Strategy>(
                         new Mcts(s, o, static_cast<MctsOptions>(std::move(m)), "mcts_repair"));
                   }),
      registration("portfolio", false, true, portfolio_option_list(),
                   [](const Space& s, const StrategyOptions& o, PortfolioOptions p,
                      const StrategyContext& c) {
                     MctsOptions m;
                     m.prior = c.prior;
                     m.prior_generation = c.prior_generation;
                     m.predict = c.predict;
                     return make_portfolio(s, o, p, std::move(m));
                   }),
      // The surrogate takes the prior's predictions of full configs (SurrogateOptions::prior).
      registration("surrogate", false, true, surrogate_option_list(),
                   [](const Space& s, const StrategyOptions& o, SurrogateOptions g,
                      const StrategyContext& c) -> Result<std::unique_ptr<Strategy>> {
                     g.prior = c.predict;
                     return std::unique_ptr<Strategy>(new Surrogate(s, o.seed, g));
                   }),
      registration("annealing", false, false, annealing_option_list(),
                   [](const Space& s, const StrategyOptions& o, AnnealingOptions a,
                      const StrategyContext&) { return make_annealing(s, o, a); }),
      registration("genetic", false, false, genetic_option_list(),
                   [](const Space& s, const StrategyOptions& o, GeneticOptions g,
                      const StrategyContext&) { return make_genetic(s, o, g); }),
  };
  return table;
}

const Registration* find_registration(const std::string& name) {
  for (const auto& r : registrations())
    if (r.info.name == name) return &r;
  return nullptr;
}

std::vector<std::string> search_strategy_names() {
  return {"portfolio", "mcts", "mcts_repair", "surrogate", "annealing", "genetic"};
}

std::unique_ptr<Strategy> make_search_strategy(const std::string& name, const Space& space,
                                               const StrategyOptions& options) {
  const auto names = search_strategy_names();
  if (std::find(names.begin(), names.end(), name) == names.end()) return nullptr;
  auto s = find_registration(name)->make(space, options, {});
  return s ? std::move(*s) : nullptr;
}

}  // namespace attune::search
