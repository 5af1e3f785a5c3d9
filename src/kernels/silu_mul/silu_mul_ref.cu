// The silu_mul reference: float64 throughout, a grid-stride loop written for clarity rather than
// speed, sharing no code with the tuned kernels. FMT: 0 = bf16, 1 = fp16.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

__device__ __forceinline__ double load(const unsigned short* p, long long i, int fmt) {
  return fmt == 0 ? static_cast<double>(__bfloat162float(__ushort_as_bfloat16(p[i])))
                  : static_cast<double>(__half2float(__ushort_as_half(p[i])));
}

extern "C" __global__ void silu_mul_ref(double* y, const unsigned short* x, long long rows,
                                        int inter, int fmt) {
  const long long n = rows * inter;
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long r = i / inter, c = i % inter;
    const double g = load(x, r * 2 * inter + c, fmt), u = load(x, r * 2 * inter + inter + c, fmt);
    y[i] = g / (1.0 + exp(-g)) * u;
  }
}
