// Constant memory and fixed fills on a GPU (tests/gpu/cuda_test.cpp): y = x * coef[i % 16] + bias,
// with coef a __constant__ array attune fills (Kernel Tuner's cmem_args), x read from a .npy
// file and bias a constant. Mode 1 ignores coef: it must fail the check.
#ifndef MODE
#define MODE 0
#endif

__constant__ float coef[16];

extern "C" __global__ void weigh(float* y, const float* x, const float* bias, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float c = MODE == 1 ? 1.0f : coef[i % 16];
  y[i] = x[i] * c + bias[i];
}

extern "C" __global__ void weigh_ref(float* y, const float* x, const float* bias, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  y[i] = x[i] * coef[i % 16] + bias[i];
}
