// SiLU * mul, the gated MLP's activation, compiled by NVRTC with the config as defines:
//   T               __nv_bfloat16 or __half (input and output; math in fp32)
//   INTER           the output's row length; an input row holds 2 * INTER values, gate then up
//   THREADS, VEC, UNROLL, ROWS_PER_BLOCK   the vector kernel's (absent for the naive one)
// y[row, c] = silu(x[row, c]) * x[row, INTER + c], silu(g) = g / (1 + exp(-g)).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "attune_launch.cuh"  // attune_grid_dependency

// The baseline: one thread per output element, scalar loads, as a user first writes it.
extern "C" __global__ void silu_mul_naive(T* __restrict__ y, const T* __restrict__ x, int rows) {
  attune_grid_dependency();
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= static_cast<long long>(rows) * INTER) return;
  const long long r = i / INTER, c = i % INTER;
  const float g = static_cast<float>(x[r * 2 * INTER + c]);
  const float u = static_cast<float>(x[r * 2 * INTER + INTER + c]);
  y[i] = static_cast<T>(g / (1.f + expf(-g)) * u);
}

#ifdef VEC
namespace {
template <int N>
struct alignas(2 * N) Pack {
  T v[N];
};
}  // namespace

// Block (blockIdx.x, blockIdx.y): rows [x * ROWS_PER_BLOCK, +ROWS_PER_BLOCK), columns
// [y * THREADS * VEC * UNROLL, +THREADS * VEC * UNROLL); each thread's UNROLL accesses are
// THREADS * VEC apart, so a warp's accesses are contiguous. VEC divides INTER (the space says
// so), so an access is wholly inside the row or wholly past it.
extern "C" __global__ void __launch_bounds__(THREADS)
    silu_mul_vector(T* __restrict__ y, const T* __restrict__ x, int rows) {
  attune_grid_dependency();
  using P = Pack<VEC>;
  const int col0 = (blockIdx.y * UNROLL * THREADS + threadIdx.x) * VEC;
#pragma unroll
  for (int rr = 0; rr < ROWS_PER_BLOCK; ++rr) {
    const int row = blockIdx.x * ROWS_PER_BLOCK + rr;
    if (row >= rows) return;
    const T* g = x + static_cast<size_t>(row) * 2 * INTER;
    const T* u = g + INTER;
    T* out = y + static_cast<size_t>(row) * INTER;
    P gv[UNROLL], uv[UNROLL];
    // Every load of the row issued before any math: UNROLL * 2 accesses in flight per thread.
#pragma unroll
    for (int k = 0; k < UNROLL; ++k) {
      const int col = col0 + k * THREADS * VEC;
      if (col < INTER) {
        gv[k] = *reinterpret_cast<const P*>(g + col);
        uv[k] = *reinterpret_cast<const P*>(u + col);
      }
    }
#pragma unroll
    for (int k = 0; k < UNROLL; ++k) {
      const int col = col0 + k * THREADS * VEC;
      if (col < INTER) {
        P o;
#pragma unroll
        for (int j = 0; j < VEC; ++j) {
          const float gf = static_cast<float>(gv[k].v[j]);
          o.v[j] = static_cast<T>(gf / (1.f + __expf(-gf)) * static_cast<float>(uv[k].v[j]));
        }
        *reinterpret_cast<P*>(out + col) = o;
      }
    }
  }
}
#endif
