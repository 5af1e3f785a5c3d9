#include "runtime/row_plan.h"

#include <fmt/format.h>

#include "core/op.h"
#include "core/space.h"
#include "kernels/plan.h"

namespace attune::runtime {

Status check_row_plan(const Problem& problem, const Config& config) {
  const OpSignature* op = find_op(problem.op());
  if (!op || !op->runtime_key)
    return Error::invalid_argument("libattune-rt has no entry point for op '" + problem.op() + "'");
  ATTUNE_TRY(kernels::plan(problem, config));
  // Where the op says its space (a pure function of the sizes), the config must be one of its
  // legal points: a knob value the family never tunes (threads=100000, vec=3) may plan, but not
  // build or run, and would only fall back to the baseline at its first call.
  if (op->space) {
    ATTUNE_ASSIGN(Space space, op->space(problem));
    // A knob the row leaves out takes the space's baseline value: the plan, checked first,
    // accepted the row without it, so it is a knob added after the table was written (gemm's
    // sk_split, tc_split and wg_*) or one the row's kernel does not read, and the baseline's value
    // is the one such a knob is pinned at (kernels/plan_knobs.h knob_or).
    ATTUNE_ASSIGN(Point point, space.point_over_baseline(config));
    const Assignment assigned(space, point);
    for (const Constraint& c : space.constraints())
      if (!c.allows(assigned))
        return Error::invalid_argument(fmt::format(
            "it is not a legal config of the op's space at this shape: it breaks '{}'", c.text));
  }
  return Status::success();
}

}  // namespace attune::runtime
