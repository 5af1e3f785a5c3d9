// RoPE (rotate-half, NeoX form) on the QKV GEMM's output, with the optional per-head q/k RMSNorm
// first, compiled by NVRTC with the problem and config as defines:
//   T                 __nv_bfloat16 or __half (inputs, weights and outputs; math in fp32)
//   HEAD              head size (64, 128, 256)
//   Q_HEADS, KV_HEADS heads per qkv row: Q_HEADS query heads, then KV_HEADS keys, KV_HEADS values
//   QK_NORM           1: q and k heads RMS-normalized over HEAD with q_norm / k_norm first
//   LOG2_THETA        log2 of the RoPE base
//   LLAMA3_SCALING    1: Llama 3.1's frequency rewrite, with LLAMA3_FACTOR, LLAMA3_LOW,
//                     LLAMA3_HIGH and LLAMA3_ORIGINAL (rope_scaling's four values)
//   VEC, HEAD_GROUPS, TOKENS   the fused kernel's (absent for the chain's kernels); its head
//                              blocks are the grid's y
//   ROW_RMS_K         gemm_rope rms_norm=1's split form: gemm_row_rms (attune_row_rms.cuh) too
// Token `token` = b * seq + s sits at position pos = kv - seq + s; pair (i, i + HEAD / 2) of a q or
// k head is rotated by pos * theta^(-2i / HEAD). q goes to [batch, Q_HEADS, seq, HEAD], k and v
// to the caches [batch, KV_HEADS, kv, HEAD] at row pos; no other cache row is touched.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "attune_launch.cuh"  // attune_grid_dependency

#include "attune_rope.cuh"  // kHalf, kHeads, kQk, inv_freq, head_dst
#ifdef ROW_RMS_K
// gemm_rope rms_norm=1's split form: the RMSNorm of x before cuBLASLt's matmul.
#include "attune_row_rms.cuh"  // gemm_row_rms
#endif

#ifdef VEC

namespace {

// Lanes holding one head: lane x holds pairs [x * VEC, x * VEC + VEC), i.e. VEC elements of each
// half. The space keeps kLanes <= 32, a power of two, so a head is one aligned run of a warp.
constexpr int kLanes = kHalf / VEC;

template <int N>
struct alignas(2 * N) Pack {
  T v[N];
};

}  // namespace

// Block (x, y): tokens [x * TOKENS, +TOKENS); row r of the block: heads y * HEAD_GROUPS + r, then
// HEAD_GROUPS * gridDim.y further on, ... of each token. A lane computes its pairs' angles once
// per token and applies them to every head it walks; v heads are copied through.
extern "C" __global__ void __launch_bounds__(kLanes* HEAD_GROUPS)
    rope_fused(T* __restrict__ q, T* __restrict__ k, T* __restrict__ v, const T* __restrict__ qkv,
               const T* __restrict__ q_norm, const T* __restrict__ k_norm, int rows, int seq,
               int kv, float eps) {
  attune_grid_dependency();
  using P = Pack<VEC>;
  const int i0 = threadIdx.x * VEC;
  float inv[VEC];
#pragma unroll
  for (int j = 0; j < VEC; ++j) inv[j] = inv_freq(i0 + j);
#if QK_NORM
  // The lanes of this head (one aligned run of kLanes lanes of the warp) reduce together.
  const unsigned warp_lane = (threadIdx.y * kLanes + threadIdx.x) & 31u;
  const unsigned mask =
      kLanes == 32 ? 0xffffffffu : ((1u << kLanes) - 1u) << (warp_lane & ~(kLanes - 1u));
  float wq[2 * VEC], wk[2 * VEC];
  {
    const P ql = *reinterpret_cast<const P*>(q_norm + i0);
    const P qh = *reinterpret_cast<const P*>(q_norm + kHalf + i0);
    const P kl = *reinterpret_cast<const P*>(k_norm + i0);
    const P kh = *reinterpret_cast<const P*>(k_norm + kHalf + i0);
#pragma unroll
    for (int j = 0; j < VEC; ++j) {
      wq[j] = static_cast<float>(ql.v[j]);
      wq[VEC + j] = static_cast<float>(qh.v[j]);
      wk[j] = static_cast<float>(kl.v[j]);
      wk[VEC + j] = static_cast<float>(kh.v[j]);
    }
  }
#endif
  for (int t = 0; t < TOKENS; ++t) {
    const int token = blockIdx.x * TOKENS + t;
    if (token >= rows) return;
    const int b = token / seq, s = token - b * seq, pos = kv - seq + s;
    float cs[VEC], sn[VEC];
#pragma unroll
    for (int j = 0; j < VEC; ++j) sincosf(static_cast<float>(pos) * inv[j], &sn[j], &cs[j]);
    const T* row = qkv + static_cast<size_t>(token) * kHeads * HEAD;
    for (int h = blockIdx.y * HEAD_GROUPS + threadIdx.y; h < kHeads; h += HEAD_GROUPS * gridDim.y) {
      const T* src = row + h * HEAD;
      const P lo = *reinterpret_cast<const P*>(src + i0);
      const P hi = *reinterpret_cast<const P*>(src + kHalf + i0);
      T* dst = head_dst(q, k, v, b, s, pos, h, seq, kv);
      if (h >= kQk) {
        *reinterpret_cast<P*>(dst + i0) = lo;
        *reinterpret_cast<P*>(dst + kHalf + i0) = hi;
        continue;
      }
      const bool is_q = h < Q_HEADS;
      float x1[VEC], x2[VEC];
#pragma unroll
      for (int j = 0; j < VEC; ++j) {
        x1[j] = static_cast<float>(lo.v[j]);
        x2[j] = static_cast<float>(hi.v[j]);
      }
#if QK_NORM
      float ss = 0.f;
#pragma unroll
      for (int j = 0; j < VEC; ++j) ss += x1[j] * x1[j] + x2[j] * x2[j];
#pragma unroll
      for (int o = kLanes / 2; o > 0; o >>= 1) ss += __shfl_xor_sync(mask, ss, o);
      const float scale = rsqrtf(ss / HEAD + eps);
#pragma unroll
      for (int j = 0; j < VEC; ++j) {
        x1[j] *= scale * (is_q ? wq[j] : wk[j]);
        x2[j] *= scale * (is_q ? wq[VEC + j] : wk[VEC + j]);
      }
#endif
      P o1, o2;
#pragma unroll
      for (int j = 0; j < VEC; ++j) {
        o1.v[j] = static_cast<T>(x1[j] * cs[j] - x2[j] * sn[j]);
        o2.v[j] = static_cast<T>(x2[j] * cs[j] + x1[j] * sn[j]);
      }
      *reinterpret_cast<P*>(dst + i0) = o1;
      *reinterpret_cast<P*>(dst + kHalf + i0) = o2;
    }
  }
}

#else  // the chain: the unfused form, three launches as a user strings simple kernels together

// Step 1 (QK_NORM): one block of HEAD threads per (token, q or k head), the head RMS-normalized
// into the workspace [token, q_heads + kv_heads, HEAD], rounded to T as a separate op's output is.
extern "C" __global__ void __launch_bounds__(HEAD)
    rope_chain_norm(T* __restrict__ ws, const T* __restrict__ qkv, const T* __restrict__ q_norm,
                    const T* __restrict__ k_norm, float eps) {
  attune_grid_dependency();
  const long long row = blockIdx.x;  // token * kQk + h
  const long long token = row / kQk;
  const int h = static_cast<int>(row % kQk);
  const float x = static_cast<float>(qkv[(token * kHeads + h) * HEAD + threadIdx.x]);
  __shared__ float partial[HEAD / 32];
  float ss = x * x;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = ss;
  __syncthreads();
  float total = 0.f;
#pragma unroll
  for (int i = 0; i < HEAD / 32; ++i) total += partial[i];
  const float w = static_cast<float>((h < Q_HEADS ? q_norm : k_norm)[threadIdx.x]);
  ws[row * HEAD + threadIdx.x] = static_cast<T>(x * rsqrtf(total / HEAD + eps) * w);
}

// Step 2: one thread per element of the q and k heads, each computing its own angle: q written
// to [batch, Q_HEADS, seq, HEAD], k into the cache.
extern "C" __global__ void rope_chain_rotate(T* __restrict__ q, T* __restrict__ k,
                                             const T* __restrict__ qkv, const T* __restrict__ ws,
                                             int rows, int seq, int kv) {
  attune_grid_dependency();
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= static_cast<long long>(rows) * kQk * HEAD) return;
  const int d = static_cast<int>(i % HEAD);
  const long long r = i / HEAD;
  const int h = static_cast<int>(r % kQk);
  const int token = static_cast<int>(r / kQk);
#if QK_NORM
  const T* src = ws + r * HEAD;
#else
  const T* src = qkv + (static_cast<long long>(token) * kHeads + h) * HEAD;
  (void)ws;
#endif
  const float x = static_cast<float>(src[d]);
  const float other = static_cast<float>(src[d < kHalf ? d + kHalf : d - kHalf]);
  const int b = token / seq, s = token - b * seq, pos = kv - seq + s;
  float sn, cs;
  sincosf(static_cast<float>(pos) * inv_freq(d % kHalf), &sn, &cs);
  const float out = d < kHalf ? x * cs - other * sn : x * cs + other * sn;
  head_dst(q, k, nullptr, b, s, pos, h, seq, kv)[d] = static_cast<T>(out);
}

// Step 3: one thread per element of the v heads, copied into the cache.
extern "C" __global__ void rope_chain_copy_v(T* __restrict__ v, const T* __restrict__ qkv, int rows,
                                             int seq, int kv) {
  attune_grid_dependency();
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= static_cast<long long>(rows) * KV_HEADS * HEAD) return;
  const int d = static_cast<int>(i % HEAD);
  const long long r = i / HEAD;
  const int h = static_cast<int>(r % KV_HEADS);
  const int token = static_cast<int>(r / KV_HEADS);
  const int b = token / seq, s = token - b * seq, pos = kv - seq + s;
  head_dst(nullptr, nullptr, v, b, s, pos, kQk + h, seq, kv)[d] =
      qkv[(static_cast<long long>(token) * kHeads + kQk + h) * HEAD + d];
}

#endif
