// The attention_prefill reference: float64 throughout, one block of 128 threads per output row
// (b, h, i), written for clarity rather than speed and sharing no code with the wgmma kernel or
// the split baseline. Pass 1 finds the row's largest score; pass 2 walks the keys [0, i] in chunks
// of 128, each thread one key's weight exp(s - max) into shared memory, then each thread sums its
// head elements' weighted values over the chunk. Beside each output it writes the output's scale,
// the root sum of squares of the weighted values it sums over the weights' sum: the magnitude the
// rounding of 16-bit weights and values acts on, which the gate measures errors against where it
// exceeds the output (a row of few keys sums terms far larger than the outputs' RMS, and its
// output can cancel to near zero). FMT: 0 = bf16, 1 = fp16.
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

__device__ double block_reduce(double v, bool is_max, double* part) {
  part[threadIdx.x] = v;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w >>= 1) {
    if (threadIdx.x < w)
      part[threadIdx.x] = is_max ? fmax(part[threadIdx.x], part[threadIdx.x + w])
                                 : part[threadIdx.x] + part[threadIdx.x + w];
    __syncthreads();
  }
  const double r = part[0];
  __syncthreads();
  return r;
}

// Blocks of 128 threads; grid.x = batch * q_heads * seq rows in o's row order.
extern "C" __global__ void attention_prefill_ref(double* out, double* scale,
                                                 const unsigned short* q, const unsigned short* k,
                                                 const unsigned short* v, int seq, int head,
                                                 int q_heads, int kv_heads, int fmt) {
  __shared__ double qrow[128], weight[128], part[128];
  const long row = blockIdx.x;  // ((b * q_heads) + h) * seq + i
  const int i = static_cast<int>(row % seq);
  const long bh = row / seq;
  const int h = static_cast<int>(bh % q_heads);
  const long b = bh / q_heads;
  const int kvh = h / (q_heads / kv_heads);
  const long kv_base = (b * kv_heads + kvh) * static_cast<long>(seq) * head;
  const double inv_sqrt_head = 1.0 / sqrt(static_cast<double>(head));
  for (int d = threadIdx.x; d < head; d += blockDim.x) qrow[d] = load(q, row * head + d, fmt);
  __syncthreads();
  auto score = [&](int j) {
    double dot = 0;
    for (int d = 0; d < head; ++d)
      dot += qrow[d] * load(k, kv_base + static_cast<long>(j) * head + d, fmt);
    return dot * inv_sqrt_head;
  };
  double mx = -INFINITY;
  for (int j = threadIdx.x; j <= i; j += blockDim.x) mx = fmax(mx, score(j));
  mx = block_reduce(mx, true, part);
  double sum = 0, acc = 0, sq = 0;  // acc, sq: head element threadIdx.x (head <= 128)
  for (int j0 = 0; j0 <= i; j0 += blockDim.x) {
    const int j = j0 + threadIdx.x;
    const double w = j <= i ? exp(score(j) - mx) : 0.0;
    weight[threadIdx.x] = w;
    sum += w;
    __syncthreads();
    if (threadIdx.x < head)
      for (int n = 0; n < blockDim.x && j0 + n <= i; ++n) {
        const double term =
            weight[n] * load(v, kv_base + static_cast<long>(j0 + n) * head + threadIdx.x, fmt);
        acc += term;
        sq += term * term;
      }
    __syncthreads();
  }
  sum = block_reduce(sum, false, part);
  if (threadIdx.x < head) {
    out[row * head + threadIdx.x] = acc / sum;
    scale[row * head + threadIdx.x] = sqrt(sq) / sum;
  }
}
