// The user-kernel gate on a GPU: one correct kernel and planted faults, one per mode, over
// outputs of several element types and an inout. Mode 5 also overwrites its input after reading
// it: it passes, and the candidates after it must still see the input set intact.
#include <cuda_fp16.h>

#ifndef MODE
#define MODE 0
#endif

extern "C" __global__ void gate(float* y32, double* y64, __half* y16, int* yi, float* io,
                                float* x, const int* xi, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float v = x[i];
  y32[i] = 2.0f * v + 1.0f;
  if (!(MODE == 2 && i >= n - 10)) y64[i] = static_cast<double>(v) * 3.0;
  y16[i] = __float2half(v);
  yi[i] = xi[i] * 3;
  io[i] = io[i] * 2.0f + v;
  if (MODE == 1 && i == 7) y32[i] += 1.0f;
  if (MODE == 3 && i == 0) yi[n] = 1;
  if (MODE == 4 && i == 3) y32[i] = __int_as_float(0x7fc00000);
  if (MODE == 5) x[i] = 0.0f;
}

extern "C" __global__ void gate_ref(float* y32, double* y64, __half* y16, int* yi, float* io,
                                    float* x, const int* xi, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float v = x[i];
  y32[i] = 2.0f * v + 1.0f;
  y64[i] = static_cast<double>(v) * 3.0;
  y16[i] = __float2half(v);
  yi[i] = xi[i] * 3;
  io[i] = io[i] * 2.0f + v;
}
