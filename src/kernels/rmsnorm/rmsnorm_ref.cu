// The rmsnorm reference: float64 throughout, one block per row, written for clarity rather
// than speed and sharing no code with the tuned kernel. FMT: 0 = bf16, 1 = fp16.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

__device__ __forceinline__ double load(const unsigned short* p, long i, int fmt) {
  return fmt == 0 ? static_cast<double>(__bfloat162float(__ushort_as_bfloat16(p[i])))
                  : static_cast<double>(__half2float(__ushort_as_half(p[i])));
}

extern "C" __global__ void rmsnorm_ref(double* y, double* h, const unsigned short* x,
                                       const unsigned short* r, const unsigned short* w, int hidden,
                                       int fmt, int residual, double eps) {
  __shared__ double partial[256];
  const long base = static_cast<long>(blockIdx.x) * hidden;
  double ss = 0;
  for (int c = threadIdx.x; c < hidden; c += blockDim.x) {
    double v = load(x, base + c, fmt);
    if (residual) v += load(r, base + c, fmt);
    ss += v * v;
  }
  partial[threadIdx.x] = ss;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
    __syncthreads();
  }
  const double scale = 1.0 / sqrt(partial[0] / hidden + eps);
  for (int c = threadIdx.x; c < hidden; c += blockDim.x) {
    double v = load(x, base + c, fmt);
    if (residual) {
      v += load(r, base + c, fmt);
      h[base + c] = v;
    }
    y[base + c] = v * scale * load(w, c, fmt);
  }
}
