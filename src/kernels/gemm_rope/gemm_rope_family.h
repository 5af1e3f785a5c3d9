// The gemm_rope kernel family: the QKV projection with RoPE (and the q/k RMSNorm) in its
// epilogue, q written out and k, v into the KV caches (bf16, fp16; head 64, 128, 256). Knobs: the
// kernel (the split baseline of cuBLASLt's matmul and a RoPE kernel, or attune's tiled GEMM with
// the RoPE epilogue) and the tiled kernel's block tile, warps, pipeline and rasterization.
#pragma once

#include <memory>

#include "backends/cuda/cuda_family.h"

namespace attune::kernels {

std::unique_ptr<cuda::CudaFamily> make_gemm_rope_family();

}  // namespace attune::kernels
