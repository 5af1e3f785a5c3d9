// A plan (a KernelPlan of the op's own kernels, or a ChainPlan of kernels and cuBLASLt matmuls)
// made ready to run in a family's worker: its kernels compiled (or from the cache), loaded and
// checked against their launches, a chain's matmuls given their algorithms. What the attention
// families run every candidate through. A PreparedPlan is used by one thread at a time; the
// cuBLASLt handle is the caller's.
#pragma once

#include <cublasLt.h>

#include <functional>
#include <optional>
#include <vector>

#include "backends/cuda/cuda_family.h"
#include "kernels/plan.h"
#include "kernels/plan_chain.h"
#include "kernels/plan_launch.h"

namespace attune::kernels {

struct PreparedPlan {
  std::vector<CUfunction> fns;       // the kernels' functions, in step order
  std::optional<ChainLaunch> chain;  // a ChainPlan's launch
  std::size_t workspace_bytes = 0;   // what the plan's workspace argument must hold
};

// Prepares `plan` (a KernelPlan or a ChainPlan: an LtPlan is gemm's own) into *out; a kernel that
// does not build or cannot launch as planned, or a matmul cuBLASLt has no algorithm for, gives the
// refusing outcome instead.
Result<std::optional<Outcome>> prepare_plan(cuda::CudaEnv& env, cublasLtHandle_t lt,
                                            const Plan& plan, PreparedPlan* out);

// Grows `workspace` to hold at least `bytes` (and at least 256, so a plan's workspace argument is
// never a null pointer), keeping it when it already does: a family's workspace across candidates.
Status grow_workspace(cuda::DeviceBuffer& workspace, std::size_t bytes);

// One enqueue of the prepared plan with `args`: plan, prepared and args must outlive it.
std::function<CUresult(CUstream)> plan_launcher(cublasLtHandle_t lt, const Plan& plan,
                                                const PreparedPlan& prepared, PlanArgs& args);

// A plan as a family's candidate runs it: prepared, the family's workspace grown to what it asks
// (args.workspace set to it) and its launcher, which keeps references to `prepared`: filled in
// place, it is not moved.
struct ReadyPlan {
  PreparedPlan prepared;
  std::function<CUresult(CUstream)> launch;
};
// Fills *out for `plan` with `args` (plan and args outlive it), or gives prepare_plan's refusing
// outcome.
Result<std::optional<Outcome>> ready_plan(cuda::CudaEnv& env, cublasLtHandle_t lt, const Plan& plan,
                                          cuda::DeviceBuffer& workspace, PlanArgs& args,
                                          ReadyPlan* out);

}  // namespace attune::kernels
