// Measurement and Outcome: what running one candidate produced. Value types.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/error.h"
#include "core/verdict.h"

namespace attune {

// rank: warm cache, fast, used to order candidates. deploy: cold cache, production launch path,
// noise-based stopping; only deploy numbers feed tables and the prior.
enum class Regime { kRank, kDeploy };
enum class CacheState { kWarm, kCold };

std::string_view to_string(Regime r);
std::optional<Regime> regime_from_string(std::string_view s);
std::string_view to_string(CacheState c);
std::optional<CacheState> cache_state_from_string(std::string_view s);

struct Measurement {
  Regime regime = Regime::kRank;
  CacheState cache = CacheState::kWarm;
  int samples = 0;
  double median_us = 0;
  double min_us = 0;
  double max_us = 0;
  double noise = 0;      // relative standard error of the median
  int sm_clock_mhz = 0;  // 0: not known
  std::string throttle;  // throttle reasons seen while measuring; "" none or not known
  // A chain of kernels (the assembled layer) in the deploy regime: each step's time behind its
  // predecessor in one CUDA graph, and the cost of launching a graph at all, from the chain's
  // prefixes timed as graphs (cuda::time_prefixes). Empty otherwise; not stored (a replay has
  // none).
  std::vector<double> parts_us;
  double parts_floor_us = 0;
};

// The correctness gate's finding for one candidate.
struct ErrorCheck {
  std::string metric;  // e.g. "max_rel_err"
  double value = 0;
  double tolerance = 0;
};

struct Outcome {
  Verdict verdict = Verdict::kOk;
  std::optional<Measurement> measurement;  // present when verdict is ok
  std::optional<ErrorCheck> check;         // present when the output was compared
  std::string message;                     // compiler log, crash reason, error summary

  // An outcome without a measurement: a refusal or a failure, and why.
  static Outcome failed(Verdict verdict, std::string message) {
    Outcome o;
    o.verdict = verdict;
    o.message = std::move(message);
    return o;
  }
};

void to_json(nlohmann::json& j, const Measurement& m);
void to_json(nlohmann::json& j, const Outcome& o);
Result<Outcome> outcome_from_json(const nlohmann::json& j);

}  // namespace attune
