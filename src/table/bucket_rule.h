// The rules a bucketed table's rows are chosen by (DESIGN.md "Tables and runtime"), as pure
// functions over deploy-regime times: which points a bucket of the axis covers, no-harm at every
// point of a bucket, and the least maximum regret. `attune export` (table/export.h) and `attune
// sweep` (table/sweep.h) both choose their bucket rows with these, so the two cannot disagree.
// Pure functions of value types; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace attune::table {

// The buckets of a group's points (any order, no duplicates): (lo, hi) -> the points inside,
// ascending. edges: inclusive upper edges, strictly ascending; bucket i covers (edge[i-1],
// edge[i]], the first one [1, edge[0]]; points past the last edge share one bucket up to the
// largest of them. Empty: powers of two, so buckets [1,1] [2,2] [3,4] [5,8] ...
std::map<std::pair<std::int64_t, std::int64_t>, std::vector<std::int64_t>> assign_buckets(
    const std::vector<std::int64_t>& points, const std::vector<std::int64_t>& edges);

// The edges in words, as a table's bucket rule names them.
std::string bucket_edges_text(const std::vector<std::int64_t>& edges);

// One point of a bucket: the deploy-regime times measured there.
struct PointTimes {
  std::int64_t point = 0;  // the axis value
  double baseline_us = 0;
  double best_us = 0;                // the fastest passing config here: regret's reference
  std::map<std::string, double> us;  // by config text: the configs that passed here
};

struct NoHarmRule {
  // A config is refused at a point where it is slower than the baseline by more than this
  // fraction of the baseline's time (0: slower at all).
  double tolerance = 0;
  // Set: a config is refused unless, at one point or more, it is faster than the baseline and
  // saves at least this percentage of its time (export's --min-improvement-pct). Unset: no such
  // requirement (a sweep gates a bucket's aggregate gain instead).
  std::optional<double> min_win_pct;
};

// A config the rule refused, and the point that refused it (0: no single point, e.g. no win).
struct Refusal {
  std::string config;
  std::int64_t point = 0;
  std::string why;
};

struct BucketChoice {
  std::string config;
  double max_regret = 0;    // max over the points of time / best time there - 1
  double relative_sum = 0;  // sum over the points of time / baseline time
  std::int64_t worst = 0;   // the first point of the max regret
};

struct BucketDecision {
  std::optional<BucketChoice> chosen;  // nullopt: no candidate passed
  std::vector<Refusal> refused;        // in candidate order
};

// Of `candidates` (config texts, duplicates ignored), those passing the rule at every point
// (measured there, no-harm, and the win when asked for); the least max regret wins, ties to the
// least relative sum, then the lower config text. `points` must not be empty.
BucketDecision least_max_regret(const std::vector<PointTimes>& points,
                                const std::vector<std::string>& candidates, const NoHarmRule& rule);

}  // namespace attune::table
