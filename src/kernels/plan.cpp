#include "kernels/plan.h"

#include "kernels/ops.h"

namespace attune::kernels {

extern const char* const kLaunchHeader;

std::pair<std::string, std::string> launch_header() {
  return {"attune_launch.cuh", kLaunchHeader};
}

Result<Plan> plan(const Problem& problem, const Config& config) {
#define ATTUNE_PLAN_OP(NAME)              \
  if (problem.op() == NAME##_op().name) { \
    return plan_##NAME(problem, config);  \
  }
  ATTUNE_KERNEL_OPS(ATTUNE_PLAN_OP)
#undef ATTUNE_PLAN_OP
  return Error::invalid_argument("no kernel plan for op '" + problem.op() + "'");
}

}  // namespace attune::kernels
