// Split-KV flash decoding, compiled by NVRTC with the problem and config as defines:
//   T         __nv_bfloat16 or __half (q, k, v, o; softmax and accumulation in fp32)
//   HEAD      head size (64, 128, 256)
//   GROUP     query heads per KV head; Q_LEN new tokens per sequence
//   SPLITS    KV splits per (sequence, KV head): blocks that each walk a range of the cache
//   KV_TILE   keys a block loads per step; WARPS warps per block; VEC elements per load
//   Q_ROWS    query rows per block: rows are (query head of the group, token) pairs, the
//             group's GROUP * Q_LEN rows contiguous in q, so a block of all of them reads each
//             key and value once
// One block per (split, row group, sequence x KV head). A warp's lanes split the head: HEAD / VEC
// lanes (at most 32) hold one key, so a warp loads 32 / that many keys at once, each load VEC
// elements wide (16 bytes at VEC 8). Each lane group keeps its own online softmax (max, sum,
// output) over its keys in fp32; groups, warps and then (SPLITS > 1) splits are merged at the end.
// The layout: q, o [batch, q_heads, q_len, HEAD]; k, v [batch, kv_heads, kv, HEAD]. Query token i
// of Q_LEN sees cache positions [0, kv - Q_LEN + i].
#include <cuda_bf16.h>
#include <cuda_fp16.h>

// NVRTC has no <math.h>.
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif

namespace {

constexpr int kLanesPerKey = HEAD / VEC < 32 ? HEAD / VEC : 32;
constexpr int kKeysPerWarp = 32 / kLanesPerKey;
constexpr int kChunks = HEAD / (kLanesPerKey * VEC);  // VEC-wide loads per lane per key
constexpr int kElems = kChunks * VEC;                 // head elements a lane holds
constexpr int kKeysPerLane = KV_TILE / (WARPS * kKeysPerWarp);
constexpr int kRows = GROUP * Q_LEN;
static_assert(HEAD % (kLanesPerKey * VEC) == 0, "VEC must divide HEAD / 32 lanes");
static_assert(kKeysPerLane >= 1 && KV_TILE % (WARPS * kKeysPerWarp) == 0,
              "KV_TILE must be a multiple of the keys a block loads at once");

template <int N>
struct alignas(2 * N) Pack {
  T v[N];
};
using P = Pack<VEC>;

__device__ __forceinline__ P load(const T* p) {
  return *reinterpret_cast<const P*>(p);
}

// Merges (m2, l2, acc2) into (m, l, acc): both are partial softmaxes (log2 domain) of disjoint
// keys.
__device__ __forceinline__ void merge(float& m, float& l, float* acc, float m2, float l2,
                                      const float* acc2) {
  const float mn = fmaxf(m, m2);
  if (mn == -INFINITY) return;  // neither saw a key
  const float a = exp2f(m - mn), b = exp2f(m2 - mn);
  l = l * a + l2 * b;
#pragma unroll
  for (int e = 0; e < kElems; ++e) acc[e] = acc[e] * a + acc2[e] * b;
  m = mn;
}

}  // namespace

extern "C" __global__ void __launch_bounds__(WARPS * 32)
    attn_decode_flash(T* __restrict__ o, float* __restrict__ workspace, const T* __restrict__ q,
                      const T* __restrict__ k, const T* __restrict__ v, int kv) {
  const int split = blockIdx.x, row0 = blockIdx.y * Q_ROWS, bh = blockIdx.z;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int grp = lane / kLanesPerKey, t = lane % kLanesPerKey;
  const int per_split = (kv + SPLITS - 1) / SPLITS;
  const int begin = split * per_split;
  const int end = min(kv, begin + per_split);

  // This lane's slice of each query row, pre-scaled by 1/sqrt(HEAD) and log2(e) (exp2 below).
  const float qscale = rsqrtf(static_cast<float>(HEAD)) * 1.4426950408889634f;
  float qr[Q_ROWS][kElems];
  int last[Q_ROWS];  // the last cache position each row sees; -1: a padding row
#pragma unroll
  for (int r = 0; r < Q_ROWS; ++r) {
    const int row = row0 + r;
    const bool valid = row < kRows;
    last[r] = valid ? kv - Q_LEN + row % Q_LEN : -1;
    const T* qp = q + (static_cast<size_t>(bh) * kRows + (valid ? row : 0)) * HEAD;
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      const P x = load(qp + (c * kLanesPerKey + t) * VEC);
#pragma unroll
      for (int j = 0; j < VEC; ++j)
        qr[r][c * VEC + j] = valid ? static_cast<float>(x.v[j]) * qscale : 0.f;
    }
  }

  float m[Q_ROWS], l[Q_ROWS], acc[Q_ROWS][kElems];
#pragma unroll
  for (int r = 0; r < Q_ROWS; ++r) {
    m[r] = -INFINITY;
    l[r] = 0.f;
#pragma unroll
    for (int e = 0; e < kElems; ++e) acc[r][e] = 0.f;
  }

  const size_t base = static_cast<size_t>(bh) * kv * HEAD;
  const T* kb = k + base;
  const T* vb = v + base;
  for (int tile = begin; tile < end; tile += KV_TILE) {
    // Every load of the tile first: K and V of kKeysPerLane keys in flight per lane.
    P kr[kKeysPerLane][kChunks], vr[kKeysPerLane][kChunks];
    int pos[kKeysPerLane];
#pragma unroll
    for (int n = 0; n < kKeysPerLane; ++n) {
      // A warp's keys are adjacent: each warp-wide load is 32 * VEC contiguous elements.
      pos[n] = tile + (n * WARPS + warp) * kKeysPerWarp + grp;
      const bool in = pos[n] < end;
      const size_t at = static_cast<size_t>(in ? pos[n] : begin) * HEAD;
#pragma unroll
      for (int c = 0; c < kChunks; ++c) {
        const int col = (c * kLanesPerKey + t) * VEC;
        kr[n][c] = load(kb + at + col);
        vr[n][c] = load(vb + at + col);
      }
    }
    float s[Q_ROWS][kKeysPerLane];
#pragma unroll
    for (int n = 0; n < kKeysPerLane; ++n) {
      float kf[kElems];
#pragma unroll
      for (int c = 0; c < kChunks; ++c)
#pragma unroll
        for (int j = 0; j < VEC; ++j) kf[c * VEC + j] = static_cast<float>(kr[n][c].v[j]);
#pragma unroll
      for (int r = 0; r < Q_ROWS; ++r) {
        float d = 0.f;
#pragma unroll
        for (int e = 0; e < kElems; ++e) d = fmaf(qr[r][e], kf[e], d);
#pragma unroll
        for (int off = kLanesPerKey / 2; off > 0; off >>= 1)
          d += __shfl_xor_sync(0xffffffffu, d, off);
        s[r][n] = pos[n] < end && pos[n] <= last[r] ? d : -INFINITY;
      }
    }
#pragma unroll
    for (int r = 0; r < Q_ROWS; ++r) {
      float mx = m[r];
#pragma unroll
      for (int n = 0; n < kKeysPerLane; ++n) mx = fmaxf(mx, s[r][n]);
      if (mx == -INFINITY) continue;  // no key of this tile for this row yet
      const float corr = exp2f(m[r] - mx);
      l[r] *= corr;
#pragma unroll
      for (int e = 0; e < kElems; ++e) acc[r][e] *= corr;
#pragma unroll
      for (int n = 0; n < kKeysPerLane; ++n) {
        const float p = exp2f(s[r][n] - mx);
        l[r] += p;
#pragma unroll
        for (int c = 0; c < kChunks; ++c)
#pragma unroll
          for (int j = 0; j < VEC; ++j)
            acc[r][c * VEC + j] = fmaf(p, static_cast<float>(vr[n][c].v[j]), acc[r][c * VEC + j]);
      }
      m[r] = mx;
    }
  }

  // The lane groups of a warp hold the same head slice of different keys: merge them.
#pragma unroll
  for (int off = kLanesPerKey; off < 32; off <<= 1) {
#pragma unroll
    for (int r = 0; r < Q_ROWS; ++r) {
      float acc2[kElems];
#pragma unroll
      for (int e = 0; e < kElems; ++e) acc2[e] = __shfl_xor_sync(0xffffffffu, acc[r][e], off);
      const float m2 = __shfl_xor_sync(0xffffffffu, m[r], off);
      const float l2 = __shfl_xor_sync(0xffffffffu, l[r], off);
      merge(m[r], l[r], acc[r], m2, l2, acc2);
    }
  }

  // Then the warps: each scales its output to the block's max and adds it into shared memory.
  __shared__ float wm[WARPS][Q_ROWS], wl[WARPS][Q_ROWS];
  __shared__ float bm[Q_ROWS], bl[Q_ROWS];
  __shared__ float out[Q_ROWS][HEAD];
  for (int i = threadIdx.x; i < Q_ROWS * HEAD; i += WARPS * 32) (&out[0][0])[i] = 0.f;
  if (lane == 0) {
#pragma unroll
    for (int r = 0; r < Q_ROWS; ++r) {
      wm[warp][r] = m[r];
      wl[warp][r] = l[r];
    }
  }
  __syncthreads();
  if (threadIdx.x < Q_ROWS) {
    const int r = threadIdx.x;
    float mx = -INFINITY, sum = 0.f;
    for (int w = 0; w < WARPS; ++w) mx = fmaxf(mx, wm[w][r]);
    if (mx != -INFINITY)
      for (int w = 0; w < WARPS; ++w) sum += wl[w][r] * exp2f(wm[w][r] - mx);
    bm[r] = mx;
    bl[r] = sum;
  }
  __syncthreads();
  if (grp == 0) {
#pragma unroll
    for (int r = 0; r < Q_ROWS; ++r) {
      if (m[r] == -INFINITY) continue;
      const float scale = exp2f(m[r] - bm[r]);
#pragma unroll
      for (int c = 0; c < kChunks; ++c)
#pragma unroll
        for (int j = 0; j < VEC; ++j)
          atomicAdd(&out[r][(c * kLanesPerKey + t) * VEC + j], acc[r][c * VEC + j] * scale);
    }
  }
  __syncthreads();

  const size_t orow0 = static_cast<size_t>(bh) * kRows + row0;
  const int rows_here = min(Q_ROWS, kRows - row0);
  for (int i = threadIdx.x; i < rows_here * HEAD; i += WARPS * 32) {
    const int r = i / HEAD, d = i % HEAD;
#if SPLITS == 1
    o[(orow0 + r) * HEAD + d] = static_cast<T>(out[r][d] / bl[r]);
#else
    // The split's unnormalized rows, then its (max, sum) per row: attn_decode_combine's input.
    const size_t rows = static_cast<size_t>(gridDim.z) * kRows;
    workspace[(split * rows + orow0 + r) * HEAD + d] = out[r][d];
    if (d == 0) {
      float* ml = workspace + SPLITS * rows * HEAD;
      ml[(split * rows + orow0 + r) * 2] = bm[r];
      ml[(split * rows + orow0 + r) * 2 + 1] = bl[r];
    }
#endif
  }
}

// The splits of each output row merged: o = sum_s 2^(m_s - M) acc_s / sum_s 2^(m_s - M) l_s.
// COMBINE_ROWS warps per block, a warp per row, the lanes over the head.
extern "C" __global__ void __launch_bounds__(COMBINE_ROWS * 32)
    attn_decode_combine(T* __restrict__ o, const float* __restrict__ workspace, int rows) {
  const int row = blockIdx.x * COMBINE_ROWS + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (row >= rows) return;
  const float* ml = workspace + static_cast<size_t>(SPLITS) * rows * HEAD;
  float mx = -INFINITY;
#pragma unroll
  for (int s = 0; s < SPLITS; ++s) mx = fmaxf(mx, ml[(static_cast<size_t>(s) * rows + row) * 2]);
  float sum = 0.f, acc[HEAD / 32] = {};
#pragma unroll
  for (int s = 0; s < SPLITS; ++s) {
    const size_t at = static_cast<size_t>(s) * rows + row;
    const float ms = ml[at * 2];
    if (ms == -INFINITY) continue;  // a split past the keys this row sees
    const float w = exp2f(ms - mx);
    sum += ml[at * 2 + 1] * w;
#pragma unroll
    for (int e = 0; e < HEAD / 32; ++e) acc[e] += workspace[at * HEAD + e * 32 + lane] * w;
  }
  const float inv = 1.f / sum;
#pragma unroll
  for (int e = 0; e < HEAD / 32; ++e)
    o[static_cast<size_t>(row) * HEAD + e * 32 + lane] = static_cast<T>(acc[e] * inv);
}
