// The replay harness: runs a Strategy over a Space against an evaluation function (a recorded
// space, a synthetic landscape), counting evaluations, with no store and no backend. Used by the
// benchmark and the strategy tests. It checks the strategy's contract as it goes: every proposal
// is a legal point of the space and none is proposed twice. One thread.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <vector>

#include "core/error.h"
#include "core/space.h"
#include "core/verdict.h"
#include "search/strategy.h"

namespace attune::search {

struct Evaluation {
  Verdict verdict = Verdict::kOk;
  std::optional<double> time_us;  // when ok
};
using Evaluate = std::function<Evaluation(const Point&)>;

struct Trace {
  std::vector<Point> proposed;  // in order
  std::vector<double> best_us;  // best ok time after each evaluation; +inf while none
  bool exhausted = false;       // the strategy stopped proposing before the budget
  std::size_t evaluations() const { return proposed.size(); }
};

// Up to `budget` evaluations. A proposal that is illegal or repeated is an internal error naming
// the strategy and the point: it would cost a real run a GPU evaluation for nothing.
// `first`: points a real run evaluates right after the baseline (the strategy's first proposal)
// and before the strategy's second, as the tuner does with an op's first guesses: each is
// evaluated, counted and observed by the strategy; later proposals of them are passed over
// without an evaluation, as the tuner passes over a point it has measured. Points illegal in the
// space, or the baseline, are left out.
Result<Trace> run_strategy(Strategy& strategy, const Space& space, const Evaluate& evaluate,
                           std::size_t budget, const std::vector<Point>& first = {});

// The first evaluation count (1-based) at which `best_us` is within `fraction` of `optimum_us`
// (best <= optimum * (1 + fraction)); nullopt if never.
std::optional<std::size_t> evaluations_to_within(const Trace& trace, double optimum_us,
                                                 double fraction);

}  // namespace attune::search
