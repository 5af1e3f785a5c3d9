// convolution.cu: out = the 2-D correlation of a float image with a FILTER_H x FILTER_W filter,
// "valid" only: the image is (h + FILTER_H - 1) x (w + FILTER_W - 1), out is h x w,
//   out[y][x] = sum over fy, fx of in[y + fy][x + fx] * filter[fy][fx].
// Tunable with attune (see convolution.yaml): a block computes a tile of
// (BLOCK_SIZE_Y * TILE_SIZE_Y) x (BLOCK_SIZE_X * TILE_SIZE_X) outputs from the input tile it
// stages in shared memory; each thread computes TILE_SIZE_Y x TILE_SIZE_X outputs, BLOCK_SIZE_X
// (BLOCK_SIZE_Y) apart so a warp's lanes read adjacent shared-memory words. The filter lives in
// constant memory (attune fills `d_filter` before each run: the spec's `memory: constant`).
//
// The knobs, as macros:
//   BLOCK_SIZE_X, BLOCK_SIZE_Y  threads per block in x and y
//   TILE_SIZE_X, TILE_SIZE_Y    outputs per thread in x and y
//   USE_PADDING                 1: one extra word per shared-memory row (other banks per row)
//   FILTER_SMEM                 1: copy the filter into shared memory and read it from there
//   UNROLL_FY                   filter rows per iteration of the row loop, 1 or 2 (the columns
//                               are always unrolled)
// FILTER_W and FILTER_H come from the problem (the spec's `defines`). By hand:
//   nvcc -arch=sm_90 -c -DBLOCK_SIZE_X=32 -DBLOCK_SIZE_Y=8 -DTILE_SIZE_X=1 -DTILE_SIZE_Y=1 \
//        -DUSE_PADDING=0 -DFILTER_SMEM=0 -DUNROLL_FY=1 -DFILTER_W=17 -DFILTER_H=17 convolution.cu
#if !defined(BLOCK_SIZE_X) || !defined(BLOCK_SIZE_Y) || !defined(TILE_SIZE_X) || \
    !defined(TILE_SIZE_Y) || !defined(USE_PADDING) || !defined(FILTER_SMEM) || !defined(UNROLL_FY)
#error "compile with the knobs as macros (see the comment above)"
#endif
#if !defined(FILTER_W) || !defined(FILTER_H)
#error "compile with -DFILTER_W=<filter columns> -DFILTER_H=<filter rows>"
#endif

__constant__ float d_filter[FILTER_H * FILTER_W];

namespace {

constexpr int kOutW = BLOCK_SIZE_X * TILE_SIZE_X;  // output columns per block
constexpr int kOutH = BLOCK_SIZE_Y * TILE_SIZE_Y;  // output rows per block
constexpr int kInW = kOutW + FILTER_W - 1;         // the input tile those need
constexpr int kInH = kOutH + FILTER_H - 1;
constexpr int kStride = kInW + USE_PADDING;        // words per shared-memory row
constexpr int kUnrollFy = UNROLL_FY;               // (a pragma sees no macros)

}  // namespace

extern "C" __global__ void __launch_bounds__(BLOCK_SIZE_X * BLOCK_SIZE_Y)
    convolution(float* __restrict__ out, const float* __restrict__ in, int w, int h) {
  extern __shared__ float tile[];  // kInH rows of kStride words, then (FILTER_SMEM) the filter
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int x0 = blockIdx.x * kOutW, y0 = blockIdx.y * kOutH;
  const int in_w = w + FILTER_W - 1, in_h = h + FILTER_H - 1;

  for (int i = ty; i < kInH; i += BLOCK_SIZE_Y)
    for (int j = tx; j < kInW; j += BLOCK_SIZE_X) {
      const int y = y0 + i, x = x0 + j;
      tile[i * kStride + j] =
          y < in_h && x < in_w ? in[static_cast<long long>(y) * in_w + x] : 0.f;
    }
#if FILTER_SMEM
  float* filter = tile + kInH * kStride;
  for (int i = ty * BLOCK_SIZE_X + tx; i < FILTER_H * FILTER_W; i += BLOCK_SIZE_X * BLOCK_SIZE_Y)
    filter[i] = d_filter[i];
#else
  const float* filter = d_filter;
#endif
  __syncthreads();

  float sum[TILE_SIZE_Y][TILE_SIZE_X];
#pragma unroll
  for (int a = 0; a < TILE_SIZE_Y; ++a)
#pragma unroll
    for (int b = 0; b < TILE_SIZE_X; ++b) sum[a][b] = 0.f;

#pragma unroll kUnrollFy
  for (int fy = 0; fy < FILTER_H; ++fy) {
#pragma unroll
    for (int fx = 0; fx < FILTER_W; ++fx) {
      const float f = filter[fy * FILTER_W + fx];
#pragma unroll
      for (int a = 0; a < TILE_SIZE_Y; ++a)
#pragma unroll
        for (int b = 0; b < TILE_SIZE_X; ++b)
          sum[a][b] += tile[(ty + a * BLOCK_SIZE_Y + fy) * kStride + tx + b * BLOCK_SIZE_X + fx] * f;
    }
  }

#pragma unroll
  for (int a = 0; a < TILE_SIZE_Y; ++a)
#pragma unroll
    for (int b = 0; b < TILE_SIZE_X; ++b) {
      const int y = y0 + ty + a * BLOCK_SIZE_Y, x = x0 + tx + b * BLOCK_SIZE_X;
      if (y < h && x < w) out[static_cast<long long>(y) * w + x] = sum[a][b];
    }
}

// The reference: one output per thread, straight from global memory, summed in double.
extern "C" __global__ void convolution_ref(float* out, const float* in, int w, int h) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= w || y >= h) return;
  const int in_w = w + FILTER_W - 1;
  double sum = 0.0;
  for (int fy = 0; fy < FILTER_H; ++fy)
    for (int fx = 0; fx < FILTER_W; ++fx)
      sum += static_cast<double>(in[static_cast<long long>(y + fy) * in_w + x + fx]) *
             d_filter[fy * FILTER_W + fx];
  out[static_cast<long long>(y) * w + x] = static_cast<float>(sum);
}
