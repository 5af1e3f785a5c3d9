// The tensor-core GEMMs' epilogue (NVRTC header "attune_gemm_store.cuh", included by gemm_tiled.cu
// and gemm_wgmma.cu): SiLU, and the store of one thread's pair of adjacent outputs.
#pragma once

namespace {

__device__ __forceinline__ float silu(float g) {
  // __fdividef, not the IEEE division's dozen instructions: the epilogue runs after the main
  // loop. A denominator past 2^126 (g below about -87) gives 0, silu's value there in fp32.
  return __fdividef(g, 1.f + __expf(-g));
}

// Outputs (v0, v1) at (row, col) and (row, col + 1) of C [Rows x Cols], col even, plus bias[col]
// and bias[col + 1] when Bias, plus the same elements of r (a matrix of C's shape) when Residual;
// what lies past C's edges is not written. With Cols even the pair is 4-byte aligned and goes out
// as one store. r may be c itself: each element is read before the store that overwrites it.
template <int Rows, int Cols, bool Bias, typename E, bool Residual = false>
__device__ __forceinline__ void store_pair(E* c, int row, int col, float v0, float v1,
                                           const E* bias, const E* r = nullptr) {
  static_assert(sizeof(E) == 2, "16-bit outputs");
  if (row >= Rows || col >= Cols) return;
  if constexpr (Bias) {
    v0 += static_cast<float>(bias[col]);
    if (col + 1 < Cols) v1 += static_cast<float>(bias[col + 1]);
  }
  if constexpr (Residual) {
    const E* q = r + static_cast<size_t>(row) * Cols + col;
    v0 += static_cast<float>(q[0]);
    if (col + 1 < Cols) v1 += static_cast<float>(q[1]);
  }
  E* p = c + static_cast<size_t>(row) * Cols + col;
  if constexpr (Cols % 2 == 0) {
    E pair[2] = {static_cast<E>(v0), static_cast<E>(v1)};
    *reinterpret_cast<unsigned*>(p) = *reinterpret_cast<const unsigned*>(pair);
  } else {
    p[0] = static_cast<E>(v0);
    if (col + 1 < Cols) p[1] = static_cast<E>(v1);
  }
}

}  // namespace
