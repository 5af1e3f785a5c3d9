// cuBLASLt for attune's row-major GEMM: the problem descriptors, the heuristic's algorithms, and
// the variant an LtPlan names (heuristic rank, split-K and tile overrides). Shared by the tuner's
// gemm family and libattune-rt so both run the same algorithm for the same config. One thread at
// a time per LtProblem; the handle is the caller's.
#pragma once

#include <cublasLt.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "kernels/plan.h"

namespace attune::kernels {

// The workspace attune offers cuBLASLt (the heuristic is asked for algorithms within it).
inline constexpr size_t kLtWorkspaceBytes = 64ull << 20;
// How many algorithms the heuristic is asked for (the lt_algo knob's range).
inline constexpr int kLtHeuristicAlgos = 8;

struct LtDestroy {
  void operator()(cublasLtMatmulDescOpaque_t* d) const { cublasLtMatmulDescDestroy(d); }
  void operator()(cublasLtMatrixLayoutOpaque_t* l) const { cublasLtMatrixLayoutDestroy(l); }
  void operator()(cublasLtMatmulPreferenceOpaque_t* p) const { cublasLtMatmulPreferenceDestroy(p); }
};

// One cuBLASLt problem: row-major C = A . B^T is column-major C^T = B . A^T, so cuBLASLt's
// "A" is our B (transposed), its "B" our A, m = N, n = M.
struct LtProblem {
  std::unique_ptr<cublasLtMatmulDescOpaque_t, LtDestroy> desc;
  std::unique_ptr<cublasLtMatrixLayoutOpaque_t, LtDestroy> a, b, c;
  std::vector<cublasLtMatmulHeuristicResult_t> heuristics;
};

// out_type: the output's type (the problem's 16-bit type, or CUDA_R_32F for a reference).
// bias_ptr: the device bias vector when `bias`.
Result<LtProblem> make_lt(cublasLtHandle_t handle, const GemmShape& s, cudaDataType_t out_type,
                          bool bias, void* bias_ptr);

// The algorithm for an LtPlan, or why cuBLASLt has none (a refusal, not an error).
struct LtChoice {
  std::optional<cublasLtMatmulAlgo_t> algo;
  std::string refusal;
};
LtChoice choose_lt_algo(cublasLtHandle_t handle, const LtProblem& lt, const LtPlan& plan);

// Enqueues C = A . B^T (+ bias) (+ residual, a matrix of C's shape, where not null) with `algo`.
cublasStatus_t lt_matmul(cublasLtHandle_t handle, const LtProblem& lt,
                         const cublasLtMatmulAlgo_t& algo, const void* a, const void* b, void* c,
                         void* workspace, cudaStream_t stream, const void* residual = nullptr);

cudaDataType_t lt_type(bool bf16);

// cuBLASLt's own names for an algorithm: its id and the configuration that makes it one variant
// (tile, stages, split-K, reduction scheme, CTA swizzling, custom option, cluster shape), as the
// tuner records a cuBLASLt candidate's outcome and libattune-rt's dispatch record shows what ran:
// the same text in both means the row binds to the variant that was measured.
std::string lt_description(const cublasLtMatmulAlgo_t& algo);

}  // namespace attune::kernels
