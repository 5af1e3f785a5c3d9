// The rope reference: float64 throughout (the norm, the frequencies theta^(-2i / head) and, with
// llama3, Llama 3.1's rewrite of them, the angles and their sines), one block per (token, head),
// written for clarity rather than speed and sharing no code with the tuned kernels. FMT: 0 = bf16,
// 1 = fp16.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

__device__ __forceinline__ double load(const unsigned short* p, long long i, int fmt) {
  return fmt == 0 ? static_cast<double>(__bfloat162float(__ushort_as_bfloat16(p[i])))
                  : static_cast<double>(__half2float(__ushort_as_half(p[i])));
}

__device__ __forceinline__ double load(const double* p, long long i, int) {
  return p[i];
}

// Block (token, h) of blockDim.x threads: head h of qkv row `token`, written to the reference of
// its output (q [batch, q_heads, seq, head]; k and v [batch, kv_heads, kv, head] at row
// kv - seq + s). qkv is 16-bit (rope: the projection's rounded output), or float64 (gemm_rope:
// the projection's reference, never rounded, as the fused kernel rotates its accumulators).
template <typename In>
__device__ void rope_ref_head(double* q, double* k, double* v, const In* qkv,
                              const unsigned short* q_norm, const unsigned short* k_norm, int seq,
                              int kv, int q_heads, int kv_heads, int head, double theta,
                              int qk_norm, double eps, int fmt, int llama3, double factor,
                              double low, double high, double original) {
  __shared__ double partial[256];
  const long long token = blockIdx.x;
  const int h = blockIdx.y, heads = q_heads + 2 * kv_heads, half = head / 2;
  const long long b = token / seq, s = token % seq, pos = kv - seq + s;
  const long long src = (token * heads + h) * head;
  double* dst;
  if (h < q_heads)
    dst = q + ((b * q_heads + h) * seq + s) * head;
  else if (h < q_heads + kv_heads)
    dst = k + ((b * kv_heads + (h - q_heads)) * kv + pos) * head;
  else
    dst = v + ((b * kv_heads + (h - q_heads - kv_heads)) * kv + pos) * head;
  if (h >= q_heads + kv_heads) {
    for (int d = threadIdx.x; d < head; d += blockDim.x) dst[d] = load(qkv, src + d, fmt);
    return;
  }
  double scale = 1.0;
  if (qk_norm) {
    double ss = 0;
    for (int d = threadIdx.x; d < head; d += blockDim.x) {
      const double x = load(qkv, src + d, fmt);
      ss += x * x;
    }
    partial[threadIdx.x] = ss;
    __syncthreads();
    for (int o = blockDim.x / 2; o > 0; o >>= 1) {
      if (threadIdx.x < o) partial[threadIdx.x] += partial[threadIdx.x + o];
      __syncthreads();
    }
    scale = 1.0 / sqrt(partial[0] / head + eps);
  }
  const unsigned short* w = h < q_heads ? q_norm : k_norm;
  for (int i = threadIdx.x; i < half; i += blockDim.x) {
    double x1 = load(qkv, src + i, fmt) * scale, x2 = load(qkv, src + half + i, fmt) * scale;
    if (qk_norm) {
      x1 *= load(w, i, fmt);
      x2 *= load(w, half + i, fmt);
    }
    double freq = pow(theta, -2.0 * i / head);
    if (llama3) {  // Llama 3.1's rope_scaling, as its reference code writes it
      const double pi = 3.14159265358979323846, wavelen = 2 * pi / freq;
      const double low_wavelen = original / low, high_wavelen = original / high;
      if (wavelen > low_wavelen) {
        freq /= factor;
      } else if (wavelen >= high_wavelen) {
        const double smooth = (original / wavelen - low) / (high - low);
        freq = (1 - smooth) * freq / factor + smooth * freq;
      }
    }
    const double angle = static_cast<double>(pos) * freq;
    const double c = cos(angle), sn = sin(angle);
    dst[i] = x1 * c - x2 * sn;
    dst[half + i] = x2 * c + x1 * sn;
  }
}

extern "C" __global__ void rope_ref(double* q, double* k, double* v, const unsigned short* qkv,
                                    const unsigned short* q_norm, const unsigned short* k_norm,
                                    int seq, int kv, int q_heads, int kv_heads, int head,
                                    double theta, int qk_norm, double eps, int fmt, int llama3,
                                    double factor, double low, double high, double original) {
  rope_ref_head(q, k, v, qkv, q_norm, k_norm, seq, kv, q_heads, kv_heads, head, theta, qk_norm, eps,
                fmt, llama3, factor, low, high, original);
}

extern "C" __global__ void rope_ref_f64(double* q, double* k, double* v, const double* qkv,
                                        const unsigned short* q_norm, const unsigned short* k_norm,
                                        int seq, int kv, int q_heads, int kv_heads, int head,
                                        double theta, int qk_norm, double eps, int fmt, int llama3,
                                        double factor, double low, double high, double original) {
  rope_ref_head(q, k, v, qkv, q_norm, k_norm, seq, kv, q_heads, kv_heads, head, theta, qk_norm, eps,
                fmt, llama3, factor, low, high, original);
}

// A cache of n elements [batch, kv_heads, kv, head] before the call: rows older than the new
// tokens (kv - seq of them) are what the call must leave alone, so the reference holds them as
// they are; the new rows are poisoned, so a row the kernel does not write is caught.
extern "C" __global__ void rope_ref_cache(double* ref, unsigned short* cache, long long n, int head,
                                          int kv, int seq, unsigned short poison, int fmt) {
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long pos = (i / head) % kv;
    if (pos < kv - seq)
      ref[i] = load(cache, i, fmt);
    else
      cache[i] = poison;
  }
}
