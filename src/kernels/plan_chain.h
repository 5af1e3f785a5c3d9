// Enqueueing a ChainPlan (kernels/plan.h): its kernel steps through plan_launch's argument
// binding, its matmul steps through cuBLASLt with the heuristic's first algorithm, in order on one
// stream. What the attention_decode family runs its split baseline with; libattune-rt refuses
// chain plans for now. A ChainLaunch is used by one thread at a time; the handle is the caller's.
#pragma once

#include <cublasLt.h>
#include <cuda.h>

#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "kernels/gemm/gemm_lt.h"
#include "kernels/plan.h"
#include "kernels/plan_launch.h"

namespace attune::kernels {

// One matmul step described to cuBLASLt, with the algorithm it runs.
struct LtBatched {
  LtProblem problem;
  cublasLtMatmulAlgo_t algo{};
};

// Describes a batched matmul to cuBLASLt and picks the heuristic's first algorithm within its
// workspace; a refusal (no algorithm) comes back as *refusal with nothing returned.
Result<std::optional<LtBatched>> make_lt_batched(cublasLtHandle_t handle, const LtMatmul& mm,
                                                 std::string* refusal);

struct ChainLaunch {
  std::vector<CUfunction> fns;               // per step; nullptr for a matmul step
  std::vector<std::optional<LtBatched>> lt;  // per step; empty for a kernel step
};

// fns: the loaded function of each kernel step, in step order (matmul steps skipped).
// nullopt with *refusal set when cuBLASLt has no algorithm for a matmul.
Result<std::optional<ChainLaunch>> prepare_chain(cublasLtHandle_t handle, const ChainPlan& plan,
                                                 const std::vector<CUfunction>& kernel_fns,
                                                 std::string* refusal);

// The plan's steps enqueued in order; cuBLASLt's failure is returned as CUDA_ERROR_LAUNCH_FAILED.
CUresult enqueue(cublasLtHandle_t handle, const ChainPlan& plan, const ChainLaunch& launch,
                 PlanArgs& args, CUstream stream);

}  // namespace attune::kernels
