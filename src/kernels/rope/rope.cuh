// RoPE's shared device code (NVRTC header "attune_rope.cuh", included by rope.cu and, with
// ROPE_EPILOGUE defined, by the GEMMs under ROPE): the frequencies, where each head of a token
// goes, and a GEMM's epilogue of one head. Defines as rope.cu's: T, HEAD, Q_HEADS, KV_HEADS,
// LOG2_THETA, and LLAMA3_SCALING with its four values.
#pragma once

#ifndef QK_NORM
#define QK_NORM 0
#endif
#ifndef LLAMA3_SCALING
#define LLAMA3_SCALING 0
#endif

namespace {

constexpr int kHalf = HEAD / 2;
constexpr int kHeads = Q_HEADS + 2 * KV_HEADS;  // heads per qkv row
constexpr int kQk = Q_HEADS + KV_HEADS;         // the heads that are rotated

// theta^(-2i / HEAD) in fp32, as the models' reference code computes its frequencies; with
// LLAMA3_SCALING, Llama 3.1's rewrite of them (kLlama3RopeScaling in kernels/ops.h): wavelengths
// past LLAMA3_ORIGINAL / LLAMA3_LOW divided by LLAMA3_FACTOR, under LLAMA3_ORIGINAL / LLAMA3_HIGH
// kept, a linear mix between.
__device__ __forceinline__ float inv_freq(int i) {
  const float f = exp2f(-static_cast<float>(2 * i) / HEAD * LOG2_THETA);
#if LLAMA3_SCALING
  const float wavelen = 6.283185307f / f;
  if (wavelen < LLAMA3_ORIGINAL / LLAMA3_HIGH) return f;
  if (wavelen > LLAMA3_ORIGINAL / LLAMA3_LOW) return f / LLAMA3_FACTOR;
  const float a = (LLAMA3_ORIGINAL / wavelen - LLAMA3_LOW) / (LLAMA3_HIGH - LLAMA3_LOW);
  return (1.f - a) * f / LLAMA3_FACTOR + a * f;
#else
  return f;
#endif
}

// Where head h (q heads, then k, then v) of token s of sequence b goes: q [batch, Q_HEADS, seq,
// HEAD], k and v into the caches [batch, KV_HEADS, kv, HEAD] at row pos = kv - seq + s.
__device__ __forceinline__ T* head_dst(T* q, T* k, T* v, int b, int s, int pos, int h, int seq,
                                       int kv) {
  if (h < Q_HEADS) return q + ((static_cast<size_t>(b) * Q_HEADS + h) * seq + s) * HEAD;
  T* cache = h < kQk ? k : v;
  const int kv_head = h < kQk ? h - Q_HEADS : h - kQk;
  return cache + ((static_cast<size_t>(b) * KV_HEADS + kv_head) * kv + pos) * HEAD;
}

// sin and cos of a RoPE angle x (an fp32 position times a frequency, as the models compute it) for
// the GEMM epilogues, where the rotation runs after the main loop instead of behind memory: x
// less k 2 pi in three fp32 parts (exact for |k| < 2^16 and the first part's 8 bits), then the
// SFU's sin and cos of the rest in [-pi, pi] (absolute error about 2^-21), about a fifth of
// sincosf's instructions. Past |x| = 2^16 (positions past 65536 at frequency 1) the reduction runs
// in fp64 (x and k exact there, 2 pi's rounding about 2^-53 of k 2 pi), a few instructions where
// sincosf would inline its long-argument reduction (about 80 instructions and a local-memory
// table) at every call: with 16-32 calls per epilogue that code alone cost the fused GEMM its
// instruction cache (Nsight Compute, H100: "no instruction" stalls 25x the plain GEMM's).
__device__ __forceinline__ void rope_sincos(float x, float* sn, float* cs) {
  float r;
  if (fabsf(x) > 65536.f) {
    const double k = rint(static_cast<double>(x) * 0.15915494309189535);
    r = static_cast<float>(fma(-k, 6.283185307179586, static_cast<double>(x)));
  } else {
    const float k = rintf(x * 0.159154943091895336f);
    r = fmaf(-k, 6.28125f, x);
    r = fmaf(-k, 1.9353071693331003e-3f, r);
    r = fmaf(-k, 1.0253131677018246e-11f, r);
  }
  __sincosf(r, sn, cs);
}

#ifdef ROPE_EPILOGUE
// A GEMM's RoPE epilogue (gemm_rope's kernels, -DROPE=1): one warp takes head hd of qkv row
// `token` from src, the fp32 accumulators of the head's HEAD columns in shared memory, and writes
// it out: a v head as it is, a q or k head RMS-normalized with its weight first (QK_NORM), then
// rotated. Lane x holds pairs x, x + 32, ... (element i with i + HEAD / 2). All 32 lanes call it
// (the norm's shuffles).
__device__ __forceinline__ void rope_epilogue_head(const float* src, T* q, T* k, T* v,
                                                   const T* q_norm, const T* k_norm, int token,
                                                   int hd, int seq, int kv, float eps, int lane) {
  constexpr int kPairsPerLane = (kHalf + 31) / 32;
  float x1[kPairsPerLane], x2[kPairsPerLane];
#pragma unroll
  for (int j = 0; j < kPairsPerLane; ++j) {
    const int i = lane + 32 * j;
    x1[j] = i < kHalf ? src[i] : 0.f;
    x2[j] = i < kHalf ? src[kHalf + i] : 0.f;
  }
  const int b = token / seq, s = token - b * seq, pos = kv - seq + s;
  T* dst = head_dst(q, k, v, b, s, pos, hd, seq, kv);
  if (hd >= kQk) {  // a v head: stored as computed
#pragma unroll
    for (int j = 0; j < kPairsPerLane; ++j) {
      const int i = lane + 32 * j;
      if (i < kHalf) {
        dst[i] = static_cast<T>(x1[j]);
        dst[kHalf + i] = static_cast<T>(x2[j]);
      }
    }
    return;
  }
#if QK_NORM
  float ss = 0.f;
#pragma unroll
  for (int j = 0; j < kPairsPerLane; ++j) ss += x1[j] * x1[j] + x2[j] * x2[j];
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
  const float scale = rsqrtf(ss / HEAD + eps);
  const T* w = hd < Q_HEADS ? q_norm : k_norm;
#else
  (void)eps;
  (void)q_norm;
  (void)k_norm;
#endif
#pragma unroll
  for (int j = 0; j < kPairsPerLane; ++j) {
    const int i = lane + 32 * j;
    if (i >= kHalf) continue;
    float y1 = x1[j], y2 = x2[j];
#if QK_NORM
    y1 *= scale * static_cast<float>(w[i]);
    y2 *= scale * static_cast<float>(w[kHalf + i]);
#endif
    float sn, cs;
    rope_sincos(static_cast<float>(pos) * inv_freq(i), &sn, &cs);
    dst[i] = static_cast<T>(y1 * cs - y2 * sn);
    dst[kHalf + i] = static_cast<T>(y2 * cs + y1 * sn);
  }
}

// The epilogue of a GEMM's TileM x TileN tile of qkv parked in shared memory (row pitch Stride
// floats, tile origin (m0, n0), TileN a multiple of HEAD): unit u = (row u / (TileN / HEAD), head
// u % (TileN / HEAD)), each warp of `warps` taking units warp, warp + warps, ...; rows past qkv's
// Tokens rows and heads past its last are skipped.
template <int TileM, int TileN, int Stride, int Tokens>
__device__ __forceinline__ void rope_epilogue_tile(const float* tile, int m0, int n0, int warp,
                                                   int warps, T* q, T* k, T* v, const T* q_norm,
                                                   const T* k_norm, int seq, int kv, float eps,
                                                   int lane) {
  constexpr int kTileHeads = TileN / HEAD;
  for (int u = warp; u < TileM * kTileHeads; u += warps) {
    const int r = u / kTileHeads, th = u % kTileHeads;
    const int token = m0 + r, hd = n0 / HEAD + th;
    if (token >= Tokens || hd >= kHeads) continue;  // warp-uniform
    rope_epilogue_head(tile + r * Stride + th * HEAD, q, k, v, q_norm, k_norm, token, hd, seq, kv,
                       eps, lane);
  }
}
#endif

}  // namespace
