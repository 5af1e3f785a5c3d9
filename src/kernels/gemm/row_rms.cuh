// gemm_row_rms, the RMSNorm a user runs before a projection, without its weight (folded into the
// projection's): y[row] = x[row] / sqrt(mean(x[row]^2) + eps), one block of 128 threads a row,
// 16-bit in and out, math in fp32. The split forms of gemm's and gemm_rope's rms_norm=1 run it
// before cuBLASLt's matmul. Included by gemm_split.cu and, under ROW_RMS_K, by rope.cu, both
// compiled by NVRTC with:
//   T          __nv_bfloat16 or __half
//   ROW_RMS_K  the row length; each load takes the widest vector (8, 4, 2 or 1) that divides it
// attune_launch.cuh (attune_grid_dependency) comes first.
#pragma once

namespace row_rms {

constexpr int kThreads = 128;
constexpr int kVec = (ROW_RMS_K % 8 == 0)   ? 8
                     : (ROW_RMS_K % 4 == 0) ? 4
                     : (ROW_RMS_K % 2 == 0) ? 2
                                            : 1;

struct alignas(2 * kVec) Pack {
  T v[kVec];
};

}  // namespace row_rms

extern "C" __global__ void __launch_bounds__(row_rms::kThreads)
    gemm_row_rms(T* __restrict__ y, const T* __restrict__ x, int rows, float eps) {
  using row_rms::kThreads;
  using row_rms::kVec;
  using P = row_rms::Pack;
  attune_grid_dependency();
  const int row = blockIdx.x;
  if (row >= rows) return;
  const T* in = x + static_cast<size_t>(row) * ROW_RMS_K;
  T* out = y + static_cast<size_t>(row) * ROW_RMS_K;
  float ss = 0.f;
  for (int col = threadIdx.x * kVec; col < ROW_RMS_K; col += kThreads * kVec) {
    const P v = *reinterpret_cast<const P*>(in + col);
#pragma unroll
    for (int j = 0; j < kVec; ++j)
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
  const float scale = rsqrtf(total / ROW_RMS_K + eps);
  for (int col = threadIdx.x * kVec; col < ROW_RMS_K; col += kThreads * kVec) {
    const P v = *reinterpret_cast<const P*>(in + col);
    P o;
#pragma unroll
    for (int j = 0; j < kVec; ++j) o.v[j] = static_cast<T>(static_cast<float>(v.v[j]) * scale);
    *reinterpret_cast<P*>(out + col) = o;
  }
}
