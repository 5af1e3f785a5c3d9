// Skinny GEMM for small M (decode): C[M,N] = A[M,K] . B[N,K]^T (+ bias[N]), 16-bit inputs and
// output, fp32 accumulation. The weights B dominate the bytes, so each block streams whole rows of
// B with 16-byte loads while A (M x K, small) comes from L1/L2. Defines:
//   T           __nv_bfloat16 or __half
//   M, N, K     the shape (compile-time loop bounds)
//   WARPS       warps per block; they split K and reduce through shared memory
//   NB          output columns (rows of B) per block
//   VEC         elements per load (8 = 16 bytes)
//   UNROLL      K-loop unroll: independent loads in flight per thread
//   KSPLIT      blocks splitting K (1 = none): a thread block cluster of KSPLIT blocks (sm_90+),
//               the partial sums added through distributed shared memory in the same launch
//   BIAS        1: add bias[n]
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#ifndef BIAS
#define BIAS 0
#endif
#include "attune_cluster.cuh"  // KSPLIT, CLUSTER_DIMS, cluster_sync, cluster_load

namespace {

template <int V>
struct alignas(2 * V) Vec {
  T v[V];
};

constexpr int kThreads = WARPS * 32;
constexpr int kChunks = K / VEC;  // K % VEC == 0 (checked before build)
constexpr int kSplitChunks = (kChunks + KSPLIT - 1) / KSPLIT;
constexpr int kUnroll = UNROLL;  // #pragma unroll takes a constant expression, not a macro

}  // namespace

extern "C" __global__ void __launch_bounds__(WARPS * 32) CLUSTER_DIMS
    gemm_skinny(T* __restrict__ c, const T* __restrict__ a, const T* __restrict__ b,
                const T* __restrict__ bias) {
  // Consecutive blocks split one group of rows' K: with a cluster of KSPLIT along x, a block's
  // rank in its cluster is its split.
  const int split = blockIdx.x % KSPLIT;
  const int n0 = blockIdx.x / KSPLIT * NB;
  const int chunk_end = min(kChunks, (split + 1) * kSplitChunks);
  const int tid = threadIdx.x;
  float acc[M][NB];
#pragma unroll
  for (int m = 0; m < M; ++m)
#pragma unroll
    for (int j = 0; j < NB; ++j) acc[m][j] = 0.f;

#pragma unroll kUnroll
  for (int chunk = split * kSplitChunks + tid; chunk < chunk_end; chunk += kThreads) {
    const int k = chunk * VEC;
    Vec<VEC> bv[NB];
#pragma unroll
    for (int j = 0; j < NB; ++j) {
      const int n = n0 + j;
      if (n < N)
        bv[j] = *reinterpret_cast<const Vec<VEC>*>(b + static_cast<size_t>(n) * K + k);
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
        for (int e = 0; e < VEC; ++e)
          acc[m][j] += static_cast<float>(av.v[e]) * static_cast<float>(bv[j].v[e]);
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
#if KSPLIT > 1
  // The warps' sums go to partial[0]; then block r of the cluster adds the cluster's blocks'
  // sums for every KSPLIT-th output, starting at r, through distributed shared memory. No thread
  // leaves before the last cluster barrier, which keeps every block's shared memory readable.
  for (int i = tid; i < M * NB; i += kThreads) {
    float s = 0.f;
#pragma unroll
    for (int w = 0; w < WARPS; ++w) s += partial[w][i];
    partial[0][i] = s;
  }
  cluster_sync();
#endif
  for (int i = split + tid * KSPLIT; i < M * NB; i += kThreads * KSPLIT) {
    float s = 0.f;
#if KSPLIT == 1
#pragma unroll
    for (int w = 0; w < WARPS; ++w) s += partial[w][i];
#else
#pragma unroll
    for (int r = 0; r < KSPLIT; ++r) s += cluster_load(&partial[0][i], r);
#endif
    const int m = i / NB, j = i % NB, n = n0 + j;
    if (n >= N) continue;
#if BIAS
    s += static_cast<float>(bias[n]);
#endif
    c[static_cast<size_t>(m) * N + n] = static_cast<T>(s);
  }
#if KSPLIT > 1
  cluster_sync();
#endif
}
