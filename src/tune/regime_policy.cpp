#include "tune/regime_policy.h"

#include <algorithm>

namespace attune {

Result<RegimePolicy> RegimePolicy::make(const std::vector<Regime>& offered, double deploy_band) {
  auto has = [&](Regime r) {
    return std::find(offered.begin(), offered.end(), r) != offered.end();
  };
  if (!has(Regime::kDeploy))
    return Error::invalid_argument(
        "the backend measures in no deploy regime, which reports and tables are built from");
  if (deploy_band < 0)
    return Error::invalid_argument("the deploy band must be >= 0 (a fraction: 0.5 is 50%)");
  return RegimePolicy(has(Regime::kRank) ? Regime::kRank : Regime::kDeploy, deploy_band);
}

bool RegimePolicy::deploys(bool is_baseline, double ranking_us,
                           std::optional<double> best_ranking_us) const {
  if (ranking_ == Regime::kDeploy) return false;
  return is_baseline || !best_ranking_us || ranking_us <= *best_ranking_us * (1 + band_);
}

}  // namespace attune
