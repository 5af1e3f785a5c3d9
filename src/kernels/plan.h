// KernelPlan: how one config of a kernel family is compiled and launched, as a pure function of
// (problem, config). The tuner's families and libattune-rt both launch through these functions, so
// the kernel a tuned table's row names is the kernel the runtime runs: the same source, options and
// launch geometry, hence the same cubin (the compile cache key is a hash of them). Host code only,
// no CUDA headers; pure functions, thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "core/config.h"
#include "core/error.h"
#include "core/problem.h"
#include "cuda/nvrtc_build.h"
#include "kernels/ops.h"

namespace attune::kernels {

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

// One kernel launch of a plan. `args` names the kernel's parameters in order; a launcher binds
// each name to a device pointer or a scalar:
//   gemm:    c, a, b, bias (device pointers), workspace (device pointer, plan.workspace_bytes)
//   rmsnorm: y, h, x, r, w (device pointers), rows (int), eps (float)
struct LaunchStep {
  std::string kernel;  // a name expression of the plan's build
  Dim3 grid, block;
  unsigned shared_bytes = 0;  // dynamic shared memory
  std::vector<std::string> args;
};

struct KernelPlan {
  cuda::BuildRequest build;
  std::vector<LaunchStep> steps;  // enqueued in order on one stream
  std::size_t workspace_bytes = 0;
};

// A cuBLASLt variant: the heuristic's algorithm at `algo_rank` (0 = cuBLASLt's own first choice,
// the baseline), with split-K and tile overrides (0 = the algorithm's own).
struct LtPlan {
  int algo_rank = 0;
  int split_k = 0;
  int tile = 0;
};

struct GemmShape {
  std::int64_t m = 0, n = 0, k = 0;
  bool bf16 = true;
  bool bias = false;
};
Result<GemmShape> gemm_shape(const Problem& problem);

struct RmsnormShape {
  std::int64_t rows = 0, hidden = 0;
  bool bf16 = true;
  bool residual = false;
};
Result<RmsnormShape> rmsnorm_shape(const Problem& problem);

// rmsnorm's epsilon, shared by the kernel launches and the reference.
inline constexpr double kRmsnormEps = 1e-6;

// A plan: kernels to compile and launch, or (gemm) a cuBLASLt variant.
using Plan = std::variant<KernelPlan, LtPlan>;
using GemmPlan = Plan;

// Each registered op's plan, plan_NAME (kernels/ops.h), defined in its folder
// (kernels/NAME/NAME_plan.cpp).
#define ATTUNE_DECLARE_PLAN(NAME) \
  Result<Plan> plan_##NAME(const Problem& problem, const Config& config);
ATTUNE_KERNEL_OPS(ATTUNE_DECLARE_PLAN)
#undef ATTUNE_DECLARE_PLAN

// Any registered op's plan: what libattune-rt checks a table's rows with and launches. An op
// with no plan is refused, never planned as another op.
Result<Plan> plan(const Problem& problem, const Config& config);

}  // namespace attune::kernels
