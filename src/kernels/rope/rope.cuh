// RoPE's shared device code (NVRTC header "attune_rope.cuh", included by rope.cu and by
// gemm_tiled.cu under ROPE): the frequencies and where each head of a token goes. Defines as
// rope.cu's: T, HEAD, Q_HEADS, KV_HEADS, LOG2_THETA, and LLAMA3_SCALING with its four values.
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

}  // namespace
