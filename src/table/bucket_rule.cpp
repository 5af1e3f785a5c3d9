#include "table/bucket_rule.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

namespace attune::table {

std::map<std::pair<std::int64_t, std::int64_t>, std::vector<std::int64_t>> assign_buckets(
    const std::vector<std::int64_t>& unsorted, const std::vector<std::int64_t>& explicit_edges) {
  std::map<std::pair<std::int64_t, std::int64_t>, std::vector<std::int64_t>> out;
  if (unsorted.empty()) return out;
  std::vector<std::int64_t> points = unsorted;
  std::sort(points.begin(), points.end());
  std::vector<std::int64_t> edges = explicit_edges;
  if (edges.empty())
    for (int i = 0; i <= 62; ++i) edges.push_back(std::int64_t{1} << i);
  // No real shape has a value below 1; should one come, the first bucket reaches down to it.
  const std::int64_t floor = std::min<std::int64_t>(1, points.front());
  std::vector<std::int64_t> past_last;
  for (std::int64_t v : points) {
    auto it = std::lower_bound(edges.begin(), edges.end(), v);
    if (it == edges.end())
      past_last.push_back(v);
    else
      out[{it == edges.begin() ? floor : *std::prev(it) + 1, *it}].push_back(v);
  }
  if (!past_last.empty()) out[{edges.back() + 1, past_last.back()}] = past_last;
  return out;
}

std::string bucket_edges_text(const std::vector<std::int64_t>& edges) {
  if (edges.empty()) return "powers of two ([1, 1], [2, 2], [3, 4], [5, 8], ...)";
  std::string s;
  for (auto e : edges) s += (s.empty() ? "" : ",") + std::to_string(e);
  return "upper edges " + s +
         " (bucket i covers (edge[i-1], edge[i]]; points past the last edge share one bucket)";
}

BucketDecision least_max_regret(const std::vector<PointTimes>& points,
                                const std::vector<std::string>& candidates,
                                const NoHarmRule& rule) {
  BucketDecision d;
  std::set<std::string> seen;
  for (const std::string& config : candidates) {
    if (!seen.insert(config).second) continue;
    BucketChoice c{config, -1, 0, points.front().point};
    std::optional<Refusal> refused;
    bool wins = false;
    for (const PointTimes& p : points) {
      auto t = p.us.find(config);
      if (t == p.us.end()) {
        refused = Refusal{config, p.point, "no deploy-regime time that passed the gate here"};
        break;
      }
      // No-harm: no slower than this point's baseline, beyond the tolerance.
      if (t->second > p.baseline_us * (1 + rule.tolerance)) {
        refused = Refusal{
            config, p.point,
            fmt::format("{:.4g} us is slower than the baseline's {:.4g} us ({:+.1f}%, past the "
                        "{:.1f}% tolerance)",
                        t->second, p.baseline_us, 100 * (t->second / p.baseline_us - 1),
                        100 * rule.tolerance)};
        break;
      }
      if (rule.min_win_pct)
        wins = wins || (t->second < p.baseline_us &&
                        100 * (1 - t->second / p.baseline_us) >= *rule.min_win_pct);
      const double regret = t->second / p.best_us - 1;
      if (regret > c.max_regret) {
        c.max_regret = regret;
        c.worst = p.point;
      }
      c.relative_sum += t->second / p.baseline_us;
    }
    if (!refused && rule.min_win_pct && !wins)
      refused = Refusal{config, 0,
                        fmt::format("saves under {:g}% of the baseline's time at every point",
                                    *rule.min_win_pct)};
    if (refused) {
      d.refused.push_back(std::move(*refused));
      continue;
    }
    const auto& best = d.chosen;
    if (!best || c.max_regret < best->max_regret ||
        (c.max_regret == best->max_regret &&
         (c.relative_sum < best->relative_sum ||
          (c.relative_sum == best->relative_sum && c.config < best->config))))
      d.chosen = c;
  }
  return d;
}

}  // namespace attune::table
