// The rope kernel family: RoPE (rotate-half) on the QKV GEMM's output with the optional per-head
// q/k RMSNorm, q written out and k, v into the KV caches (bf16, fp16; head 64, 128, 256). Knobs:
// the kernel (the chain baseline of a norm, a rotate and a copy kernel, or the fused kernel) and
// the fused kernel's pairs per lane, head groups per block and tokens per block.
#pragma once

#include <memory>

#include "backends/cuda/cuda_family.h"

namespace attune::kernels {

std::unique_ptr<cuda::CudaFamily> make_rope_family();

}  // namespace attune::kernels
