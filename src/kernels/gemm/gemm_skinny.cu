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
//   SILU_MUL    1: B is the gate's N/2 rows then the up's; C[M, N/2] = silu(gate) * up. A block
//               computes NB outputs from NB gate rows and the NB up rows N/2 below them
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "attune_launch.cuh"  // attune_grid_dependency

#ifndef BIAS
#define BIAS 0
#endif
#ifndef SILU_MUL
#define SILU_MUL 0
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
constexpr int kOutN = SILU_MUL ? N / 2 : N;    // C's columns
constexpr int kRows = SILU_MUL ? 2 * NB : NB;  // rows of B per block (accumulator columns)

// Row of B behind accumulator column j of the block whose first output is n0: under SILU_MUL the
// first NB are gate rows, the next NB the up rows of the same outputs.
__device__ __forceinline__ int b_row(int n0, int j) {
  return SILU_MUL && j >= NB ? kOutN + n0 + (j - NB) : n0 + j;
}

__device__ __forceinline__ float silu(float g) {
  return g / (1.f + __expf(-g));
}

}  // namespace

extern "C" __global__ void __launch_bounds__(WARPS * 32) CLUSTER_DIMS
    gemm_skinny(T* __restrict__ c, const T* __restrict__ a, const T* __restrict__ b,
                const T* __restrict__ bias) {
  attune_grid_dependency();
  // Consecutive blocks split one group of rows' K: with a cluster of KSPLIT along x, a block's
  // rank in its cluster is its split.
  const int split = blockIdx.x % KSPLIT;
  const int n0 = blockIdx.x / KSPLIT * NB;
  const int chunk_end = min(kChunks, (split + 1) * kSplitChunks);
  const int tid = threadIdx.x;
  float acc[M][kRows];
#pragma unroll
  for (int m = 0; m < M; ++m)
#pragma unroll
    for (int j = 0; j < kRows; ++j) acc[m][j] = 0.f;

#pragma unroll kUnroll
  for (int chunk = split * kSplitChunks + tid; chunk < chunk_end; chunk += kThreads) {
    const int k = chunk * VEC;
    Vec<VEC> bv[kRows];
#pragma unroll
    for (int j = 0; j < kRows; ++j) {
      if (n0 + (j % NB) < kOutN)
        bv[j] = *reinterpret_cast<const Vec<VEC>*>(b + static_cast<size_t>(b_row(n0, j)) * K + k);
      else
#pragma unroll
        for (int e = 0; e < VEC; ++e) bv[j].v[e] = static_cast<T>(0.f);
    }
#pragma unroll
    for (int m = 0; m < M; ++m) {
      const Vec<VEC> av = *reinterpret_cast<const Vec<VEC>*>(a + static_cast<size_t>(m) * K + k);
#pragma unroll
      for (int j = 0; j < kRows; ++j)
#pragma unroll
        for (int e = 0; e < VEC; ++e)
          acc[m][j] += static_cast<float>(av.v[e]) * static_cast<float>(bv[j].v[e]);
    }
  }

  // Reduce across the warp, then across warps.
  __shared__ float partial[WARPS][M * kRows];
  const int lane = tid % 32, warp = tid / 32;
#pragma unroll
  for (int m = 0; m < M; ++m)
#pragma unroll
    for (int j = 0; j < kRows; ++j) {
      float v = acc[m][j];
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
      if (lane == 0) partial[warp][m * kRows + j] = v;
    }
  __syncthreads();
#if KSPLIT > 1
  // The warps' sums go to partial[0]; then block r of the cluster adds the cluster's blocks'
  // sums for every KSPLIT-th output, starting at r, through distributed shared memory. No thread
  // leaves before the last cluster barrier, which keeps every block's shared memory readable.
  for (int i = tid; i < M * kRows; i += kThreads) {
    float s = 0.f;
#pragma unroll
    for (int w = 0; w < WARPS; ++w) s += partial[w][i];
    partial[0][i] = s;
  }
  cluster_sync();
#endif
  // Output i is (row m, column n0 + j); under SILU_MUL its up value sits NB columns on.
  auto sum = [&](int e) {
    float s = 0.f;
#if KSPLIT == 1
#pragma unroll
    for (int w = 0; w < WARPS; ++w) s += partial[w][e];
#else
#pragma unroll
    for (int r = 0; r < KSPLIT; ++r) s += cluster_load(&partial[0][e], r);
#endif
    return s;
  };
  for (int i = split + tid * KSPLIT; i < M * NB; i += kThreads * KSPLIT) {
    const int m = i / NB, j = i % NB, n = n0 + j;
    if (n >= kOutN) continue;
    float s = sum(m * kRows + j);
#if SILU_MUL
    s = silu(s) * sum(m * kRows + NB + j);
#endif
#if BIAS
    s += static_cast<float>(bias[n]);
#endif
    c[static_cast<size_t>(m) * kOutN + n] = static_cast<T>(s);
  }
#if KSPLIT > 1
  cluster_sync();
#endif
}
