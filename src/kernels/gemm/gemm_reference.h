// The float64 reference of a GEMM's product, C[m, n] = A[m, k] . B[n, k]^T (+ bias[n]), shared by
// the families that check a projection (gemm, gemm_rope): a float64 kernel where the product is
// small enough to run per check, cuBLASLt with fp32 output (a trusted library path in higher
// precision) widened to float64 above. One thread at a time; the cuBLASLt handle is the caller's.
#pragma once

#include <cublasLt.h>

#include <optional>
#include <string>

#include "backends/cuda/cuda_family.h"
#include "cuda/cuda_check.h"
#include "kernels/gemm/gemm_lt.h"
#include "kernels/plan.h"

namespace attune::kernels {

class GemmReference {
 public:
  // Buffers (and cuBLASLt's descriptors, above the float64 kernel's size) for shape s; `op` names
  // the family in errors.
  Status prepare(cublasLtHandle_t lt, const GemmShape& s, std::string op);
  // Enqueues the product of a, b (and bias, when s.bias) into ref(); under s.rms_norm each row
  // of it then scaled by 1 / sqrt(mean(a's row^2) + kRmsnormEps).
  Status run(cuda::CudaEnv& env, const GemmShape& s, CUdeviceptr a, CUdeviceptr b,
             CUdeviceptr bias);
  // [m, n] float64.
  CUdeviceptr ref() const { return ref_.ptr(); }

 private:
  Status run_product(cuda::CudaEnv& env, const GemmShape& s, CUdeviceptr a, CUdeviceptr b,
                     CUdeviceptr bias);

  cublasLtHandle_t lt_ = nullptr;
  std::string op_;
  cuda::DeviceBuffer ref_, ref32_, workspace_;
  std::optional<LtProblem> lt_ref_;
};

}  // namespace attune::kernels
