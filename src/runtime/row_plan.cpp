#include "runtime/row_plan.h"

#include "core/op.h"
#include "core/space.h"
#include "kernels/plan.h"

namespace attune::runtime {

Status check_row_plan(const Problem& problem, const Config& config) {
  const OpSignature* op = find_op(problem.op());
  if (!op || !op->runtime_key)
    return Error::invalid_argument("libattune-rt has no entry point for op '" + problem.op() + "'");
  // Where the op says its space (a pure function of the sizes), the config must be one of its
  // legal points: a knob value the family never tunes (threads=100000, vec=3) plans, but may not
  // build or run, and would only fall back to the baseline at its first call.
  if (op->space) {
    ATTUNE_ASSIGN(Space space, op->space(problem));
    ATTUNE_ASSIGN(Point point, space.point(config));
    if (!space.prefix_legal(point))
      return Error::invalid_argument("it is not a legal config of the op's space at this shape");
  }
  ATTUNE_TRY(kernels::plan(problem, config));
  return Status::success();
}

}  // namespace attune::runtime
