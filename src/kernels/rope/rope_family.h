// The rope kernel family: RoPE (rotate-half) on the QKV GEMM's output with the optional per-head
// q/k RMSNorm, q written out and k, v into the KV caches (bf16, fp16; head 64, 128, 256). Knobs:
// the kernel (the chain baseline of a norm, a rotate and a copy kernel, or the fused kernel) and
// the fused kernel's pairs per lane, head groups per block and tokens per block.
#pragma once

#include <memory>

#include "backends/cuda/cuda_family.h"
#include "kernels/plan.h"

namespace attune::kernels {

std::unique_ptr<cuda::CudaFamily> make_rope_family();

// What rope's float64 reference reads and writes: the references of q and of the two caches
// (float64), the caches themselves, qkv, and the norm weights.
struct RopeRefBuffers {
  CUdeviceptr ref_q, ref_k, ref_v, k_cache, v_cache, qkv, q_norm, k_norm;
};
// Enqueues the reference of rope's function of qkv (16-bit, or float64 with qkv_f64: gemm_rope's
// projection reference): the caches' old rows copied into their references and their new rows
// poisoned in the caches (a row the kernel does not write is caught), then every new token's q,
// k and v.
Status rope_reference(cuda::CudaEnv& env, const RopeShape& s, const RopeRefBuffers& b,
                      bool qkv_f64);

}  // namespace attune::kernels
