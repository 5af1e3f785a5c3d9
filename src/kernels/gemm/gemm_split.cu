// The kernels of gemm rms_norm=1's split form (the cuBLASLt baseline, gemm_plan.cpp), compiled by
// NVRTC with the shape as defines:
//   T      __nv_bfloat16 or __half (math in fp32)
//   K      A's row length; VEC (8, 4, 2 or 1 16-bit values a load) divides it
//   INTER  under SILU_MUL, the activation's row length (a product row holds 2 * INTER)
// gemm_row_rms: y[row] = x[row] / sqrt(mean(x[row]^2) + eps), one block of 128 threads a row (the
// RMSNorm a user runs before the GEMM, its weight folded into the GEMM's). gemm_split_silu_mul:
// y[row, c] = silu(x[row, c]) * x[row, INTER + c], VEC outputs a thread.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "attune_launch.cuh"  // attune_grid_dependency

namespace {

constexpr int kThreads = 128;

template <int N>
struct alignas(2 * N) Pack {
  T v[N];
};

}  // namespace

extern "C" __global__ void __launch_bounds__(kThreads)
    gemm_row_rms(T* __restrict__ y, const T* __restrict__ x, int rows, float eps) {
  attune_grid_dependency();
  using P = Pack<VEC>;
  const int row = blockIdx.x;
  if (row >= rows) return;
  const T* in = x + static_cast<size_t>(row) * K;
  T* out = y + static_cast<size_t>(row) * K;
  float ss = 0.f;
  for (int col = threadIdx.x * VEC; col < K; col += kThreads * VEC) {
    const P v = *reinterpret_cast<const P*>(in + col);
#pragma unroll
    for (int j = 0; j < VEC; ++j)
      ss = fmaf(static_cast<float>(v.v[j]), static_cast<float>(v.v[j]), ss);
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
  __shared__ float partial[kThreads / 32];
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = ss;
  __syncthreads();
  float total = 0.f;
#pragma unroll
  for (int i = 0; i < kThreads / 32; ++i) total += partial[i];
  const float scale = rsqrtf(total / K + eps);
  for (int col = threadIdx.x * VEC; col < K; col += kThreads * VEC) {
    const P v = *reinterpret_cast<const P*>(in + col);
    P o;
#pragma unroll
    for (int j = 0; j < VEC; ++j) o.v[j] = static_cast<T>(static_cast<float>(v.v[j]) * scale);
    *reinterpret_cast<P*>(out + col) = o;
  }
}

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
