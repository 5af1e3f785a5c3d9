// Tensor-core GEMM for small M (decode): C[M,N] = A[M,K] . B[N,K]^T (+ bias), M <= 16, with the
// operands swapped so the weights fill the mma's 16-row side: each warp computes C^T tiles of
// 16 weight rows x 8 tokens with mma.sync.m16n8k16 (fp32 accumulation). The dot product's order
// over k is free, so each thread's fragment slots are mapped to 8 contiguous k: one 16-byte load
// per weight row feeds two mmas. Defines:
//   T, TNAME    __nv_bfloat16 / bf16 or __half / f16
//   M, N, K     the shape (K % 8 == 0)
//   WARPS       warps per block, splitting K; partial tiles reduced through shared memory
//   NT          16-row weight tiles per warp (the tokens' fragments are reused across them)
//   UNROLL      K-loop unroll: independent 16-byte loads in flight per thread
//   KSPLIT      blocks splitting K (1 = none): a thread block cluster of KSPLIT blocks (sm_90+),
//               the partial tiles summed through distributed shared memory in the same launch
//   BIAS        1: add bias[n]
//   SILU_MUL    1: B is the gate's N/2 rows then the up's; C[M, N/2] = silu(gate) * up. A block
//               computes NT tiles of gate rows and the NT tiles of up rows N/2 below them; a
//               thread holds a gate value and its up value in the same fragment slot
// With few weight rows (N / 16 tiles under the SM count) a split puts every SM to work.
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

constexpr int kTokenTiles = (M + 7) / 8;  // n8 tiles of tokens: 1 or 2
constexpr int kUnroll = UNROLL;
constexpr int kChunks = (K + 31) / 32;  // 32 k per chunk per warp
constexpr int kSplitChunks = (kChunks + KSPLIT - 1) / KSPLIT;
constexpr int kOutN = SILU_MUL ? N / 2 : N;        // C's columns
constexpr int kTiles = SILU_MUL ? 2 * NT : NT;     // 16-row weight tiles per block
constexpr int kOutValues = NT * kTokenTiles * 4;   // outputs per thread
constexpr int kValues = kTiles * kTokenTiles * 4;  // accumulators per thread

// First weight row of tile nt of the block whose first output is n_base: under SILU_MUL tiles
// NT.. are the up rows of tiles 0...
__device__ __forceinline__ int tile_row(int n_base, int nt) {
  return SILU_MUL && nt >= NT ? kOutN + n_base + (nt - NT) * 16 : n_base + nt * 16;
}

__device__ __forceinline__ uint4 load16(const T* p, bool ok) {
  if (!ok) return make_uint4(0, 0, 0, 0);
  return __ldg(reinterpret_cast<const uint4*>(p));
}

__device__ __forceinline__ void mma(float (&d)[4], unsigned a0, unsigned a1, unsigned a2,
                                    unsigned a3, unsigned b0, unsigned b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." TNAME "." TNAME
               ".f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
               "{%0,%1,%2,%3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

}  // namespace

// Writes output `v` of lane `lane` (acc[NT][kTokenTiles][4] flattened, the gate half under
// SILU_MUL, whose up value is `up`) to C, adding the bias.
__device__ __forceinline__ void store_c(T* __restrict__ c, const T* __restrict__ bias, int n_base,
                                        int v, int lane, float x, float up) {
  const int g = lane / 4, q = lane % 4;
  const int nt = v / (kTokenTiles * 4), t = v / 4 % kTokenTiles, i = v % 4;
  // d0, d1: weight row g, tokens 2q, 2q+1; d2, d3: weight row g + 8.
  const int n = n_base + nt * 16 + g + (i >= 2 ? 8 : 0);
  const int m = t * 8 + 2 * q + (i & 1);
  if (n < kOutN && m < M) {
#if SILU_MUL
    x = x / (1.f + __expf(-x)) * up;
#else
    (void)up;
#endif
#if BIAS
    x += static_cast<float>(bias[n]);
#endif
    c[static_cast<size_t>(m) * kOutN + n] = static_cast<T>(x);
  }
}

extern "C" __global__ void __launch_bounds__(WARPS * 32) CLUSTER_DIMS
    gemm_skinny_tc(T* __restrict__ c, const T* __restrict__ a, const T* __restrict__ b,
                   const T* __restrict__ bias) {
  attune_grid_dependency();
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int g = lane / 4, q = lane % 4;
  // Consecutive blocks split one tile's K: with a cluster of KSPLIT along x, a block's rank in
  // its cluster is its split.
  const int split = blockIdx.x % KSPLIT;
  const int n_base = blockIdx.x / KSPLIT * (16 * NT);
  const int chunk_end = min(kChunks, (split + 1) * kSplitChunks);
  float acc[kTiles][kTokenTiles][4] = {};

#pragma unroll kUnroll
  for (int chunk = split * kSplitChunks + warp; chunk < chunk_end; chunk += WARPS) {
    const int k = chunk * 32 + q * 8;
    const bool k_ok = k < K;
    uint4 tok[kTokenTiles];
#pragma unroll
    for (int t = 0; t < kTokenTiles; ++t) {
      const int m = t * 8 + g;
      tok[t] = load16(a + static_cast<size_t>(m < M ? m : 0) * K + k, k_ok && m < M);
    }
#pragma unroll
    for (int nt = 0; nt < kTiles; ++nt) {
      // A row is in range when its output column is (under SILU_MUL the up tile's too).
      const int o0 = n_base + (nt % NT) * 16 + g, o1 = o0 + 8;
      const int r0 = tile_row(n_base, nt) + g, r1 = r0 + 8;
      const uint4 w0 =
          load16(b + static_cast<size_t>(o0 < kOutN ? r0 : 0) * K + k, k_ok && o0 < kOutN);
      const uint4 w1 =
          load16(b + static_cast<size_t>(o1 < kOutN ? r1 : 0) * K + k, k_ok && o1 < kOutN);
#pragma unroll
      for (int t = 0; t < kTokenTiles; ++t) {
        mma(acc[nt][t], w0.x, w1.x, w0.y, w1.y, tok[t].x, tok[t].y);
        mma(acc[nt][t], w0.z, w1.z, w0.w, w1.w, tok[t].z, tok[t].w);
      }
    }
  }

#if KSPLIT == 1
  // Reduce the warps' partial tiles, then write C (row-major, tokens x weights).
  __shared__ float partial[WARPS][kTiles][kTokenTiles][4][32];
  if (WARPS > 1) {
#pragma unroll
    for (int nt = 0; nt < kTiles; ++nt)
#pragma unroll
      for (int t = 0; t < kTokenTiles; ++t)
#pragma unroll
        for (int i = 0; i < 4; ++i) partial[warp][nt][t][i][lane] = acc[nt][t][i];
    __syncthreads();
    if (warp != 0) return;
#pragma unroll
    for (int nt = 0; nt < kTiles; ++nt)
#pragma unroll
      for (int t = 0; t < kTokenTiles; ++t)
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          float s = 0.f;
#pragma unroll
          for (int w = 0; w < WARPS; ++w) s += partial[w][nt][t][i][lane];
          acc[nt][t][i] = s;
        }
  }
#pragma unroll
  for (int nt = 0; nt < NT; ++nt)
#pragma unroll
    for (int t = 0; t < kTokenTiles; ++t)
#pragma unroll
      for (int i = 0; i < 4; ++i)
        store_c(c, bias, n_base, (nt * kTokenTiles + t) * 4 + i, lane, acc[nt][t][i],
                acc[SILU_MUL ? nt + NT : nt][t][i]);
#else
  // Sum the warps into partial[0], then the cluster's blocks through distributed shared memory:
  // block r of the cluster sums and writes every KSPLIT-th accumulator, starting at r. No thread
  // leaves before the last cluster barrier, which keeps every block's shared memory readable.
  __shared__ float partial[WARPS][kValues][32];
#pragma unroll
  for (int nt = 0; nt < kTiles; ++nt)
#pragma unroll
    for (int t = 0; t < kTokenTiles; ++t)
#pragma unroll
      for (int i = 0; i < 4; ++i)
        partial[warp][(nt * kTokenTiles + t) * 4 + i][lane] = acc[nt][t][i];
  __syncthreads();
  for (int e = threadIdx.x; e < kValues * 32; e += WARPS * 32) {
    float s = 0.f;
#pragma unroll
    for (int w = 0; w < WARPS; ++w) s += (&partial[w][0][0])[e];
    (&partial[0][0][0])[e] = s;
  }
  cluster_sync();
  // Output v's up value (SILU_MUL) is accumulator v + kOutValues.
  for (int e = threadIdx.x; e < kOutValues * 32; e += WARPS * 32) {
    const int v = e / 32;
    if (v % KSPLIT != split) continue;
    float s = 0.f, up = 0.f;
#pragma unroll
    for (int r = 0; r < KSPLIT; ++r) {
      s += cluster_load(&partial[0][0][0] + e, r);
      if (SILU_MUL) up += cluster_load(&partial[0][0][0] + e + kOutValues * 32, r);
    }
    store_c(c, bias, n_base, v, e % 32, s, up);
  }
  cluster_sync();
#endif
}
