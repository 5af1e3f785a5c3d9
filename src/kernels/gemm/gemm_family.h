// The gemm kernel family: C[M,N] = A[M,K] . B[N,K]^T (+ bias[N]), row-major, bf16 or fp16 inputs
// and output, fp32 accumulation (B is stored as a linear layer's weight, [out, in]). Candidates:
// cuBLASLt's heuristic algorithms and their split-K and tile variants race attune's own NVRTC
// kernels (a skinny kernel for small M). Baseline: cuBLASLt's first heuristic choice.
#pragma once

#include <memory>

#include "backends/cuda/cuda_family.h"

namespace attune::kernels {

std::unique_ptr<cuda::CudaFamily> make_gemm_family();

}  // namespace attune::kernels
