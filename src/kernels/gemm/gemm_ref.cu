// The GEMM reference for small problems: float64 accumulation, one thread per output, sharing
// no code with the tuned kernels. C[M,N] = A[M,K] . B[N,K]^T (+ bias), and the epilogues of
// gemm's flags applied to it below. FMT: 0 bf16, 1 fp16.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

__device__ __forceinline__ double ld(const unsigned short* p, long i, int fmt) {
  return fmt == 0 ? static_cast<double>(__bfloat162float(__ushort_as_bfloat16(p[i])))
                  : static_cast<double>(__half2float(__ushort_as_half(p[i])));
}

extern "C" __global__ void gemm_ref(double* c, const unsigned short* a, const unsigned short* b,
                                    const unsigned short* bias, int m_size, int n_size, int k_size,
                                    int fmt, int has_bias) {
  const long idx = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x;
  if (idx >= static_cast<long>(m_size) * n_size) return;
  const int m = static_cast<int>(idx / n_size), n = static_cast<int>(idx % n_size);
  double s = has_bias ? ld(bias, n, fmt) : 0.0;
  for (int k = 0; k < k_size; ++k)
    s += ld(a, static_cast<long>(m) * k_size + k, fmt) *
         ld(b, static_cast<long>(n) * k_size + k, fmt);
  c[idx] = s;
}

// Widens a float32 reference (cuBLASLt with fp32 output, used for large problems) to float64
// and adds the bias in float64.
extern "C" __global__ void widen_add_bias(double* out, const float* in, const unsigned short* bias,
                                          int n_size, unsigned long long count, int fmt,
                                          int has_bias) {
  for (unsigned long long i = blockIdx.x * 1ull * blockDim.x + threadIdx.x; i < count;
       i += 1ull * gridDim.x * blockDim.x)
    out[i] = static_cast<double>(in[i]) +
             (has_bias ? ld(bias, static_cast<long>(i % n_size), fmt) : 0.0);
}

// silu_mul=1: out[m, j] = silu(in[m, j]) * in[m, half + j] of the float64 product in[m, 2 * half].
extern "C" __global__ void silu_mul_ref(double* out, const double* in, int m_size, int half) {
  const unsigned long long count = static_cast<unsigned long long>(m_size) * half;
  for (unsigned long long i = blockIdx.x * 1ull * blockDim.x + threadIdx.x; i < count;
       i += 1ull * gridDim.x * blockDim.x) {
    const unsigned long long row = i / half, j = i % half;
    const double g = in[row * 2 * half + j], u = in[row * 2 * half + half + j];
    out[i] = g / (1.0 + exp(-g)) * u;
  }
}

// rms_norm=1: row i of the float64 product c[m, n] times 1 / sqrt(mean_k a[i, k]^2 + eps), the
// squares summed in float64 from A itself; one block of 256 threads a row.
extern "C" __global__ void row_rms_scale_ref(double* c, const unsigned short* a, int n_size,
                                             int k_size, int fmt, double eps) {
  __shared__ double partial[256];
  const long row = blockIdx.x;
  double ss = 0.0;
  for (int k = threadIdx.x; k < k_size; k += blockDim.x) {
    const double v = ld(a, row * k_size + k, fmt);
    ss += v * v;
  }
  partial[threadIdx.x] = ss;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (static_cast<int>(threadIdx.x) < s) partial[threadIdx.x] += partial[threadIdx.x + s];
    __syncthreads();
  }
  const double scale = 1.0 / sqrt(partial[0] / k_size + eps);
  for (int j = threadIdx.x; j < n_size; j += blockDim.x) c[row * n_size + j] *= scale;
}

// residual=1: out[i] += r[i] (16-bit) over the float64 result.
extern "C" __global__ void add_residual_ref(double* out, const unsigned short* r,
                                            unsigned long long count, int fmt) {
  for (unsigned long long i = blockIdx.x * 1ull * blockDim.x + threadIdx.x; i < count;
       i += 1ull * gridDim.x * blockDim.x)
    out[i] += ld(r, static_cast<long>(i), fmt);
}
