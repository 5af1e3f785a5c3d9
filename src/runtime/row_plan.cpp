#include "runtime/row_plan.h"

#include "kernels/plan.h"

namespace attune::runtime {

Status check_row_plan(const Problem& problem, const Config& config) {
  if (problem.op() == "gemm") {
    ATTUNE_TRY(kernels::plan_gemm(problem, config));
  } else if (problem.op() == "rmsnorm") {
    ATTUNE_TRY(kernels::plan_rmsnorm(problem, config));
  } else {
    return Error::invalid_argument("libattune-rt has no entry point for op '" + problem.op() + "'");
  }
  return Status::success();
}

}  // namespace attune::runtime
