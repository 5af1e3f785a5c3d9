// The attention_decode reference: float64 throughout, one block per (sequence, query head,
// token), written for clarity rather than speed and sharing no code with the flash kernel or the
// split baseline: every score into the caller's float64 scratch row, an exact two-pass softmax,
// then the weighted sum of value rows. FMT: 0 = bf16, 1 = fp16.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

// NVRTC has no <math.h>.
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif

__device__ __forceinline__ double load(const unsigned short* p, long i, int fmt) {
  return fmt == 0 ? static_cast<double>(__bfloat162float(__ushort_as_bfloat16(p[i])))
                  : static_cast<double>(__half2float(__ushort_as_half(p[i])));
}

// One block of 256 threads per output row (b, h, i), in o's row order; scores: kv doubles per
// row, reused by whichever rows run at once (one row per block, rows in flight <= the grid).
extern "C" __global__ void attention_decode_ref(double* out, double* scores,
                                                const unsigned short* q, const unsigned short* k,
                                                const unsigned short* v, int kv, int head,
                                                int q_heads, int kv_heads, int q_len, int fmt) {
  __shared__ double partial[256];
  const long row = blockIdx.x;  // ((b * q_heads) + h) * q_len + i
  const int i = static_cast<int>(row % q_len);
  const long bh = row / q_len;
  const int h = static_cast<int>(bh % q_heads);
  const long b = bh / q_heads;
  const int kvh = h / (q_heads / kv_heads);
  const long kv_base = (b * kv_heads + kvh) * static_cast<long>(kv) * head;
  const long q_base = row * head;
  double* s = scores + row * static_cast<long>(kv);
  const int last = kv - q_len + i;
  const double scale = 1.0 / sqrt(static_cast<double>(head));

  double mx = -INFINITY;
  for (int j = threadIdx.x; j <= last; j += blockDim.x) {
    double dot = 0;
    for (int d = 0; d < head; ++d)
      dot += load(q, q_base + d, fmt) * load(k, kv_base + static_cast<long>(j) * head + d, fmt);
    s[j] = dot * scale;
    mx = fmax(mx, s[j]);
  }
  partial[threadIdx.x] = mx;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w >>= 1) {
    if (threadIdx.x < w)
      partial[threadIdx.x] = fmax(partial[threadIdx.x], partial[threadIdx.x + w]);
    __syncthreads();
  }
  mx = partial[0];
  __syncthreads();
  double sum = 0;
  for (int j = threadIdx.x; j <= last; j += blockDim.x) {
    s[j] = exp(s[j] - mx);
    sum += s[j];
  }
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w >>= 1) {
    if (threadIdx.x < w) partial[threadIdx.x] += partial[threadIdx.x + w];
    __syncthreads();
  }
  sum = partial[0];
  for (int d = threadIdx.x; d < head; d += blockDim.x) {
    double acc = 0;
    for (int j = 0; j <= last; ++j)
      acc += s[j] * load(v, kv_base + static_cast<long>(j) * head + d, fmt);
    out[q_base + d] = acc / sum;
  }
}
