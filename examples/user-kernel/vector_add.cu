// vector_add.cu: c = a + b, tunable with attune (see vector_add.yaml).
//
// attune compiles this file once per configuration with NVRTC and passes the knobs as macros:
//   -DBLOCK_SIZE=<block_size>  -DITEMS_PER_THREAD=<items_per_thread>
// By hand: nvcc -arch=sm_90 -c -DBLOCK_SIZE=256 -DITEMS_PER_THREAD=4 vector_add.cu
// No #include: NVRTC compiles it without the host's headers.

// Refuse to build without the knobs rather than silently tuning a default.
#ifndef BLOCK_SIZE
#error "compile with -DBLOCK_SIZE=<threads per block> (attune passes knob block_size)"
#endif
#ifndef ITEMS_PER_THREAD
#error "compile with -DITEMS_PER_THREAD=<elements per thread> (attune passes knob items_per_thread)"
#endif

// The tuned kernel. Each block covers BLOCK_SIZE * ITEMS_PER_THREAD consecutive elements; item i
// of thread t is at block_start + i * BLOCK_SIZE + t, so every load and store is coalesced.
extern "C" __global__ void __launch_bounds__(BLOCK_SIZE)
vector_add(float* __restrict__ c, const float* __restrict__ a, const float* __restrict__ b, int n) {
  const long long base =
      static_cast<long long>(blockIdx.x) * (BLOCK_SIZE * ITEMS_PER_THREAD) + threadIdx.x;
#pragma unroll
  for (int i = 0; i < ITEMS_PER_THREAD; ++i) {
    const long long idx = base + static_cast<long long>(i) * BLOCK_SIZE;
    if (idx < n) c[idx] = a[idx] + b[idx];
  }
}

// The reference: one element per thread, nothing to get wrong. Same parameters as the tuned
// kernel; attune runs it once per problem and compares every candidate's c with its c.
extern "C" __global__ void vector_add_ref(float* c, const float* a, const float* b, int n) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
