// The split baseline's softmax, between its two cuBLASLt GEMMs, compiled by NVRTC with:
//   T        __nv_bfloat16 or __half (P's type, the value GEMM's input)
//   HEAD     head size (the scale is 1 / sqrt(HEAD)); Q_LEN new tokens per sequence
//   THREADS  threads per block, one block per score row
// The workspace holds the scores S [rows, kv] in fp32 from offset 0 and P [rows, kv] in T from
// the next 256-byte boundary, as plan_attention_decode lays them out. Row r is token r % Q_LEN
// of its query head, which sees cache positions [0, kv - Q_LEN + r % Q_LEN]; later ones get 0.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "attune_launch.cuh"  // attune_grid_dependency

// NVRTC has no <math.h>.
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif

namespace {

__device__ float block_reduce(float v, bool is_max) {
  __shared__ float part[THREADS / 32];
  __shared__ float result;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float w = __shfl_xor_sync(0xffffffffu, v, o);
    v = is_max ? fmaxf(v, w) : v + w;
  }
  if (threadIdx.x % 32 == 0) part[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    float r = part[0];
    for (int i = 1; i < THREADS / 32; ++i) r = is_max ? fmaxf(r, part[i]) : r + part[i];
    result = r;
  }
  __syncthreads();
  return result;
}

}  // namespace

extern "C" __global__ void __launch_bounds__(THREADS)
    attn_decode_softmax(float* workspace, int kv, int rows) {
  attune_grid_dependency();
  const size_t row = blockIdx.x;
  const float* s = workspace + row * kv;
  const size_t p_offset = (static_cast<size_t>(rows) * kv * sizeof(float) + 255) / 256 * 256;
  T* p = reinterpret_cast<T*>(reinterpret_cast<char*>(workspace) + p_offset) + row * kv;
  const int last = kv - Q_LEN + static_cast<int>(row % Q_LEN);
  const float scale = rsqrtf(static_cast<float>(HEAD));
  float mx = -INFINITY;
  for (int j = threadIdx.x; j <= last; j += THREADS) mx = fmaxf(mx, s[j] * scale);
  mx = block_reduce(mx, true);
  float sum = 0.f;
  for (int j = threadIdx.x; j <= last; j += THREADS) sum += __expf(s[j] * scale - mx);
  sum = block_reduce(sum, false);
  const float inv = 1.f / sum;
  for (int j = threadIdx.x; j < kv; j += THREADS)
    p[j] = static_cast<T>(j <= last ? __expf(s[j] * scale - mx) * inv : 0.f);
}
