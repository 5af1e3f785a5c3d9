#include "search/harness.h"

#include <limits>

#include "search/walk.h"

namespace attune::search {

Result<Trace> run_strategy(Strategy& strategy, const Space& space, const Evaluate& evaluate,
                           std::size_t budget, const std::vector<Point>& first) {
  Trace trace;
  PointSet seen, given;
  double best = std::numeric_limits<double>::infinity();
  auto evaluate_one = [&](const Point& p) {
    Evaluation e = evaluate(p);
    if (e.verdict == Verdict::kOk && e.time_us && *e.time_us < best) best = *e.time_us;
    strategy.observe(p, e.verdict, e.verdict == Verdict::kOk ? e.time_us : std::nullopt);
    trace.proposed.push_back(p);
    trace.best_us.push_back(best);
  };
  while (trace.proposed.size() < budget) {
    auto p = strategy.propose();
    if (!p) {
      trace.exhausted = true;
      break;
    }
    if (!legal(space, *p))
      return Error::internal(strategy.name() + " proposed an illegal point after " +
                             std::to_string(trace.proposed.size()) + " evaluations");
    if (given.count(*p) && seen.insert(*p).second) continue;  // a first point, measured already
    if (!seen.insert(*p).second)
      return Error::internal(strategy.name() + " proposed '" + space.config(*p).text() + "' twice");
    evaluate_one(*p);
    if (trace.proposed.size() != 1) continue;
    // Right after the baseline: the first points.
    for (const Point& f : first) {
      if (trace.proposed.size() >= budget) break;
      if (!legal(space, f) || f == trace.proposed.front() || !given.insert(f).second) continue;
      evaluate_one(f);
    }
  }
  return trace;
}

std::optional<std::size_t> evaluations_to_within(const Trace& trace, double optimum_us,
                                                 double fraction) {
  for (std::size_t i = 0; i < trace.best_us.size(); ++i)
    if (trace.best_us[i] <= optimum_us * (1.0 + fraction)) return i + 1;
  return std::nullopt;
}

}  // namespace attune::search
