// The kernels of gemm rms_norm=1's split form (the cuBLASLt baseline, gemm_plan.cpp), compiled by
// NVRTC with the shape as defines:
//   T          __nv_bfloat16 or __half (math in fp32)
//   ROW_RMS_K  A's row length (gemm_row_rms, attune_row_rms.cuh)
//   INTER      under SILU_MUL, the activation's row length (a product row holds 2 * INTER)
// gemm_row_rms (attune_row_rms.cuh): the RMSNorm a user runs before the GEMM, its weight folded
// into the GEMM's. gemm_split_silu_mul: y[row, c] = silu(x[row, c]) * x[row, INTER + c], the
// widest vector dividing INTER a thread.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "attune_launch.cuh"   // attune_grid_dependency
#include "attune_row_rms.cuh"  // gemm_row_rms

namespace {

constexpr int kThreads = 128;

template <int N>
struct alignas(2 * N) Pack {
  T v[N];
};

}  // namespace

#ifdef INTER
extern "C" __global__ void __launch_bounds__(kThreads)
    gemm_split_silu_mul(T* __restrict__ y, const T* __restrict__ x, int rows) {
  attune_grid_dependency();
  constexpr int kVec = (INTER % 8 == 0) ? 8 : (INTER % 4 == 0) ? 4 : (INTER % 2 == 0) ? 2 : 1;
  using P = Pack<kVec>;
  const long long i = (static_cast<long long>(blockIdx.x) * kThreads + threadIdx.x) * kVec;
  if (i >= static_cast<long long>(rows) * INTER) return;
  const long long row = i / INTER, col = i % INTER;
  const P g = *reinterpret_cast<const P*>(x + row * 2 * INTER + col);
  const P u = *reinterpret_cast<const P*>(x + row * 2 * INTER + INTER + col);
  P o;
#pragma unroll
  for (int j = 0; j < kVec; ++j) {
    const float gf = static_cast<float>(g.v[j]);
    o.v[j] = static_cast<T>(gf / (1.f + __expf(-gf)) * static_cast<float>(u.v[j]));
  }
  *reinterpret_cast<P*>(y + i) = o;
}
#endif
