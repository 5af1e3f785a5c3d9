#include "runtime/row_plan.h"

#include "core/op.h"
#include "kernels/plan.h"

namespace attune::runtime {

Status check_row_plan(const Problem& problem, const Config& config) {
  const OpSignature* op = find_op(problem.op());
  if (!op || !op->runtime_key)
    return Error::invalid_argument("libattune-rt has no entry point for op '" + problem.op() + "'");
  ATTUNE_TRY(kernels::plan(problem, config));
  return Status::success();
}

}  // namespace attune::runtime
