// Which regimes a candidate is measured in. It is ranked (and counted for patience) by its time in
// the ranking regime: rank (warm, cheap) when the backend offers it, else deploy. It is then
// measured in deploy too, the regime tables use, when it is the baseline (what every tuned row
// must beat) or within the deploy band of the best ranking time so far. Immutable; thread-safe.
#pragma once

#include <optional>
#include <vector>

#include "core/error.h"
#include "core/measurement.h"

namespace attune {

class RegimePolicy {
 public:
  // offered: the backend's regimes(); it must include deploy. deploy_band >= 0 (TuneOptions).
  static Result<RegimePolicy> make(const std::vector<Regime>& offered, double deploy_band);

  Regime ranking() const { return ranking_; }
  // Whether a passing candidate ranked at ranking_us is measured in deploy as well (never when
  // the ranking regime is deploy: it already was).
  bool deploys(bool is_baseline, double ranking_us, std::optional<double> best_ranking_us) const;
  // A candidate's ranking time from its two regimes' times.
  std::optional<double> ranking_us(std::optional<double> rank_us,
                                   std::optional<double> deploy_us) const {
    return ranking_ == Regime::kRank ? rank_us : deploy_us;
  }

 private:
  RegimePolicy(Regime ranking, double band) : ranking_(ranking), band_(band) {}
  Regime ranking_;
  double band_;
};

}  // namespace attune
