// The rope kernel family: RoPE (rotate-half) on the QKV GEMM's output with the optional per-head
// q/k RMSNorm, q written out and k, v into the KV caches (bf16, fp16; head 64, 128, 256). Knobs:
// the kernel (the chain baseline of a norm, a rotate and a copy kernel, or the fused kernel) and
// the fused kernel's pairs per lane, head groups per block and tokens per block.
#pragma once

#include <memory>

#include "backends/cuda/cuda_family.h"
#include "kernels/common/gate.h"
#include "kernels/plan.h"
#include "kernels/plan_launch.h"

namespace attune::kernels {

std::unique_ptr<cuda::CudaFamily> make_rope_family();

// What a family whose kernels write rope's outputs checks them with (rope's, gemm_rope's): the
// norm weights, q and the two caches (with guard elements) and their float64 references, for one
// shape. Used by one thread at a time.
class RopeOutputs {
 public:
  Status alloc(const RopeShape& s);
  // Binds the norm weights, q, the caches and rope's scalars (rows, seq, kv, eps).
  void bind(const RopeShape& s, PlanArgs& args) const;
  // Fresh random norm weights (around 1) and caches' old rows, the outputs poisoned.
  Status fill(cuda::CudaEnv& env, DeviceGate& gate, const RopeShape& s);
  // Enqueues the reference of rope's function of qkv (16-bit, or float64 with qkv_f64: gemm_rope's
  // projection reference): the caches' old rows copied into their references and their new rows
  // poisoned in the caches (a row the kernel does not write is caught), then every new token's q,
  // k and v. After fill(), before the kernel runs.
  Status reference(cuda::CudaEnv& env, const RopeShape& s, CUdeviceptr qkv, bool qkv_f64);
  // q, then the k and v caches against their references under tol: the first that fails, else
  // the largest error (no measurement).
  Result<Outcome> check(cuda::CudaEnv& env, DeviceGate& gate, const RopeShape& s,
                        const Tolerance& tol) const;

 private:
  cuda::DeviceBuffer q_norm_, k_norm_, q_, k_, v_, ref_q_, ref_k_, ref_v_;
};

}  // namespace attune::kernels
