// Skinny GEMM for small M (decode): C[M,N] = A[M,K] . B[N,K]^T (+ bias[N]), 16-bit inputs and
// output, fp32 accumulation. The weights B dominate the bytes, so each block streams whole rows of
// B with 16-byte loads while A (M x K, small) comes from L1/L2. Defines:
//   T           __nv_bfloat16 or __half
//   M, N, K     the shape (compile-time loop bounds)
//   WARPS       warps per block; they split K and reduce through shared memory
//   NB          output columns (rows of B) per block
//   VEC         elements per load (8 = 16 bytes)
//   UNROLL      K-loop unroll: independent loads in flight per thread
//   BIAS        1: add bias[n]
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#ifndef BIAS
#define BIAS 0
#endif

namespace {

template <int V>
struct alignas(2 * V) Vec {
  T v[V];
};

constexpr int kThreads = WARPS * 32;
constexpr int kChunks = K / VEC;  // K % VEC == 0 (checked before build)
constexpr int kUnroll = UNROLL;  // #pragma unroll takes a constant expression, not a macro

}  // namespace

extern "C" __global__ void __launch_bounds__(WARPS * 32)
gemm_skinny(T* __restrict__ c, const T* __restrict__ a, const T* __restrict__ b, const T* __restrict__ bias) {
  const int n0 = blockIdx.x * NB;
  const int tid = threadIdx.x;
  float acc[M][NB];
#pragma unroll
  for (int m = 0; m < M; ++m)
#pragma unroll
    for (int j = 0; j < NB; ++j) acc[m][j] = 0.f;

#pragma unroll kUnroll
  for (int chunk = tid; chunk < kChunks; chunk += kThreads) {
    const int k = chunk * VEC;
    Vec<VEC> bv[NB];
#pragma unroll
    for (int j = 0; j < NB; ++j) {
      const int n = n0 + j;
      if (n < N) bv[j] = *reinterpret_cast<const Vec<VEC>*>(b + static_cast<size_t>(n) * K + k);
      else
#pragma unroll
        for (int e = 0; e < VEC; ++e) bv[j].v[e] = static_cast<T>(0.f);
    }
#pragma unroll
    for (int m = 0; m < M; ++m) {
      const Vec<VEC> av = *reinterpret_cast<const Vec<VEC>*>(a + static_cast<size_t>(m) * K + k);
#pragma unroll
      for (int j = 0; j < NB; ++j)
#pragma unroll
        for (int e = 0; e < VEC; ++e) acc[m][j] += static_cast<float>(av.v[e]) * static_cast<float>(bv[j].v[e]);
    }
  }

  // Reduce across the warp, then across warps.
  __shared__ float partial[WARPS][M * NB];
  const int lane = tid % 32, warp = tid / 32;
#pragma unroll
  for (int m = 0; m < M; ++m)
#pragma unroll
    for (int j = 0; j < NB; ++j) {
      float v = acc[m][j];
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
      if (lane == 0) partial[warp][m * NB + j] = v;
    }
  __syncthreads();
  for (int i = tid; i < M * NB; i += kThreads) {
    const int m = i / NB, j = i % NB, n = n0 + j;
    if (n >= N) continue;
    float s = 0.f;
#pragma unroll
    for (int w = 0; w < WARPS; ++w) s += partial[w][i];
#if BIAS
    s += static_cast<float>(bias[n]);
#endif
    c[static_cast<size_t>(m) * N + n] = static_cast<T>(s);
  }
}
