// The rmsnorm kernel family: y = norm(x [+ r]) * w over rows of `hidden` 16-bit values, with
// the optional fused residual add writing h = x + r. Knobs: threads per row, rows per block,
// vector width, unroll. Baseline: one row per block, 256 threads, scalar accesses.
#pragma once

#include <memory>

#include "backends/cuda/cuda_family.h"

namespace attune::kernels {

std::unique_ptr<cuda::CudaFamily> make_rmsnorm_family();

}  // namespace attune::kernels
