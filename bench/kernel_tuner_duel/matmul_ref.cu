// The duel's reference for Kernel Tuner's matmul example (C = A x B, WIDTH x WIDTH fp32,
// row-major): one output per thread, summed in float64, so every candidate's float32 sum is
// checked against a more precise one. WIDTH comes from the spec (reference defines).
extern "C" __global__ void matmul_ref(float* C, const float* A, const float* B) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= WIDTH || y >= WIDTH) return;
  double sum = 0;
  for (int k = 0; k < WIDTH; ++k)
    sum += static_cast<double>(A[static_cast<long long>(y) * WIDTH + k]) *
           static_cast<double>(B[static_cast<long long>(k) * WIDTH + x]);
  C[static_cast<long long>(y) * WIDTH + x] = static_cast<float>(sum);
}
