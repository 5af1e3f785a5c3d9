// transpose.cu: out = transpose(in) for a rows x cols row-major float matrix, tiled through
// shared memory; tunable with attune (see transpose.yaml).
//
// The knobs are template arguments (pass_knobs_as: template): attune asks NVRTC for
// transpose_tiled<TILE, BLOCK_ROWS, PAD> and launches it with block (TILE, BLOCK_ROWS) and
// TILE * (TILE + PAD) floats of dynamic shared memory. No macros are needed, so by hand:
//   nvcc -arch=sm_90 -c transpose.cu   (instantiate a variant to compile its code)

// Each block moves one TILE x TILE tile: it reads rows of `in` (coalesced), then writes rows of
// `out` (coalesced) from the tile's columns. PAD extra floats per shared-memory row move the
// column reads off a single bank.
template <int TILE, int BLOCK_ROWS, int PAD>
__global__ void __launch_bounds__(TILE * BLOCK_ROWS)
transpose_tiled(float* __restrict__ out, const float* __restrict__ in, int rows, int cols) {
  extern __shared__ float tile[];  // TILE rows of TILE + PAD floats
  constexpr int kStride = TILE + PAD;
  const int tx = threadIdx.x;
  const int ty = threadIdx.y;

  int x = blockIdx.x * TILE + tx;  // column of `in`
  int y = blockIdx.y * TILE + ty;  // row of `in`
  for (int j = 0; j < TILE; j += BLOCK_ROWS)
    if (x < cols && y + j < rows)
      tile[(ty + j) * kStride + tx] = in[static_cast<long long>(y + j) * cols + x];
  __syncthreads();

  x = blockIdx.y * TILE + tx;  // column of `out` (a row of `in`)
  y = blockIdx.x * TILE + ty;  // row of `out` (a column of `in`)
  for (int j = 0; j < TILE; j += BLOCK_ROWS)
    if (x < rows && y + j < cols)
      out[static_cast<long long>(y + j) * rows + x] = tile[tx * kStride + ty + j];
}

// The reference: one element per thread, straight from global memory.
extern "C" __global__ void transpose_ref(float* out, const float* in, int rows, int cols) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  const int r = blockIdx.y * blockDim.y + threadIdx.y;
  if (r < rows && c < cols) out[static_cast<long long>(c) * rows + r] = in[static_cast<long long>(r) * cols + c];
}
