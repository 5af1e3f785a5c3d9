// The silu_mul kernel family: y = silu(gate) * up over rows of the fused gate/up GEMM's output
// (bf16, fp16). Knobs: the kernel (the naive one-thread-per-element baseline, or the vector
// kernel) and the vector kernel's width, threads, unroll and rows per block.
#pragma once

#include <memory>

#include "backends/cuda/cuda_family.h"

namespace attune::kernels {

std::unique_ptr<cuda::CudaFamily> make_silu_mul_family();

}  // namespace attune::kernels
