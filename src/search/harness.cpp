#include "search/harness.h"

#include <limits>

#include "search/walk.h"

namespace attune::search {

Result<Trace> run_strategy(Strategy& strategy, const Space& space, const Evaluate& evaluate,
                           std::size_t budget) {
  Trace trace;
  PointSet seen;
  double best = std::numeric_limits<double>::infinity();
  while (trace.proposed.size() < budget) {
    auto p = strategy.propose();
    if (!p) {
      trace.exhausted = true;
      break;
    }
    if (!legal(space, *p))
      return Error::internal(strategy.name() + " proposed an illegal point after " +
                             std::to_string(trace.proposed.size()) + " evaluations");
    if (!seen.insert(*p).second)
      return Error::internal(strategy.name() + " proposed '" + space.config(*p).text() + "' twice");
    Evaluation e = evaluate(*p);
    if (e.verdict == Verdict::kOk && e.time_us && *e.time_us < best) best = *e.time_us;
    strategy.observe(*p, e.verdict, e.verdict == Verdict::kOk ? e.time_us : std::nullopt);
    trace.proposed.push_back(std::move(*p));
    trace.best_us.push_back(best);
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
