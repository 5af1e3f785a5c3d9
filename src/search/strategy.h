// Strategy: proposes the next Config of a Space and learns from results. Strategies work on
// Points (option indices) and are deterministic for a seed. One thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "core/error.h"
#include "core/measurement.h"
#include "core/space.h"

namespace attune {

struct StrategyOptions {
  std::uint64_t seed = 0;
  // Grid sharding: this process takes the configs whose enumeration index is shard_index modulo
  // shard_count. Shards are disjoint and deterministic, and their union is the whole grid.
  std::uint32_t shard_index = 0;
  std::uint32_t shard_count = 1;
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
};

// grid, random (and the strategies later issues add). Unknown names are an invalid_argument.
Result<std::unique_ptr<Strategy>> make_strategy(const std::string& name, const Space& space,
                                                const StrategyOptions& options);
// Names make_strategy accepts, for help texts and error messages.
std::vector<std::string> strategy_names();

}  // namespace attune
