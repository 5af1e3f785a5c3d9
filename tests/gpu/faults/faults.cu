// A user kernel with a fault planted per value of the knob MODE, for the GPU fault tests:
//   0: correct   1: writes far out of bounds   2: never ends   3: asks for too much shared memory
// (the spec gives mode 3 a dynamic shared memory size past any GPU's per-block limit).
extern "C" __global__ void scale(float* __restrict__ y, const float* __restrict__ x, int n) {
  extern __shared__ float scratch[];
  const int i = blockIdx.x * BLOCK_SIZE + threadIdx.x;
  if (MODE == 2) {
    // Waits for a value nobody writes: y holds the gate's NaN poison. A loop on a local flag is
    // not enough (the compiler removed one: seen on the H200, the kernel finished).
    volatile float* flag = y;
    while (flag[0] != 12345.f) {
    }
  }
  if (MODE == 3 && threadIdx.x == 0) scratch[0] = 1.f;
  if (i < n) {
    if (MODE == 1) y[i + (1ll << 36)] = 2.f * x[i];  // 256 GiB past the buffer: an illegal address
    else y[i] = 2.f * x[i];
  }
}

extern "C" __global__ void scale_ref(float* y, const float* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.f * x[i];
}
