// Strategy: proposes the next Config of a Space and learns from results. Strategies work on
// Points (option indices) and are deterministic for a seed. Each documents its options
// (--strategy-option), may be steered by a prior, and may keep state between runs, which the
// tuner stores by the strategy's name. One thread at a time; the factory functions are pure.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/measurement.h"
#include "core/space.h"

namespace attune {

// NAME=VALUE settings of a strategy's documented options (--strategy-option), as text.
using StrategySettings = std::map<std::string, std::string>;

struct StrategyOptions {
  std::uint64_t seed = 0;
  // Grid sharding: this process takes the configs whose enumeration index is shard_index modulo
  // shard_count. Shards are disjoint and deterministic, and their union is the whole grid.
  std::uint32_t shard_index = 0;
  std::uint32_t shard_count = 1;
  // Values for the strategy's options (StrategyInfo::options); an unknown name or a value of the
  // wrong type or out of range makes make_strategy fail. Empty: every option at its default.
  StrategySettings settings = {};
};

// What steers a strategy besides its options. Only a strategy whose StrategyInfo says takes_prior
// reads it; the tuner fills it from the store's prior for such a strategy only.
struct StrategyContext {
  // Scores (any non-negative scale) for the legal options of the knob after a prefix; empty: a
  // cold (uniform) prior.
  std::function<std::vector<double>(const Point& prefix, const std::vector<std::uint32_t>& options)>
      prior;
  // Changes whenever the prior's scores may have changed (a refit).
  std::function<std::uint64_t()> prior_generation;
  // The same prior's predicted log latency of each full point (any offset: only differences
  // matter); empty function or an empty result: no prediction. The surrogate ranks a small
  // space's configs by it before its own model has results (search/surrogate.h).
  std::function<std::vector<double>(const std::vector<Point>& points)> predict;
};

// One row of a strategy's state as the store keeps it between runs (store.h SearchNode): for mcts
// a node of its tree, `path` the canonical text of the decided knobs ("" for the root), best_us 0
// when no ok result lies below, payload the strategy's JSON.
struct StateNode {
  std::string path;
  std::int64_t visits = 0;
  double best_us = 0;
  std::string payload;
  bool operator==(const StateNode&) const = default;
};

class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual std::string name() const = 0;
  // The next point to evaluate; nullopt when the strategy has nothing more to propose.
  virtual std::optional<Point> propose() = 0;
  // The result of a proposed point (measured or answered from the store). `time_us` is the
  // candidate's time when its verdict is ok, else nullopt.
  virtual void observe(const Point& point, Verdict verdict, std::optional<double> time_us) = 0;

  // What a later run over the same space continues from (kept per device and problem under
  // name()); empty for a strategy that keeps no state, the default.
  virtual std::vector<StateNode> save_state() const { return {}; }
  // Continues from an earlier run's save_state(). Rows that do not fit the space are an
  // invalid_argument and nothing is loaded. Once loaded, the results of the earlier runs are
  // known to the strategy: they are not observed again.
  virtual Status load_state(const std::vector<StateNode>& nodes) {
    if (nodes.empty()) return Status::success();
    return Error::invalid_argument(name() + " keeps no state between runs");
  }
};

// One option a strategy documents for --strategy-option.
struct StrategyOptionInfo {
  std::string name;
  std::string type;           // "integer" or "real"
  std::string range;          // the values it takes: ">= 0", "> 0", "0..1"
  std::string default_value;  // as text
  std::string help;           // one line
};

struct StrategyInfo {
  std::string name;
  bool shardable = false;    // takes --shard
  bool takes_prior = false;  // steered by StrategyContext::prior
  std::vector<StrategyOptionInfo> options;
};

// grid, random, mcts, annealing, genetic. Unknown names, settings the strategy does not document
// and values out of their range are an invalid_argument naming what is known or allowed.
Result<std::unique_ptr<Strategy>> make_strategy(const std::string& name, const Space& space,
                                                const StrategyOptions& options,
                                                const StrategyContext& context = {});
// Names make_strategy accepts, for help texts and error messages.
std::vector<std::string> strategy_names();
// What a strategy documents about itself; invalid_argument for an unknown name.
Result<StrategyInfo> strategy_info(const std::string& name);
// Checks settings against the strategy's options without making it (no space needed).
Status check_strategy_settings(const std::string& name, const StrategySettings& settings);

}  // namespace attune
