// Tensor-core tiled GEMM: C[M,N] = A[M,K] . B[N,K]^T (+ bias[N]), 16-bit inputs and output, fp32
// accumulation with mma.sync.m16n8k16. Both operands are K-contiguous, which is what the mma's
// row.col form wants, so fragments come straight from shared memory through ldmatrix (no
// transposes). A block computes a BM x BN tile of C from a STAGES-deep cp.async pipeline of
// BM x BK and BN x BK tiles; its WM x WN warps each own a (BM/WM) x (BN/WN) sub-tile. Shared
// memory rows are XOR-swizzled in 16-byte chunks so ldmatrix reads hit 32 distinct banks. Tails
// (M, N, K not multiples of the tile) are zero-filled by cp.async's source size. Defines:
//   T, TNAME        __nv_bfloat16 / bf16 or __half / f16
//   M, N, K         the shape (K % 8 == 0: 16-byte loads never straddle the end of a row)
//   BM, BN, BK      block tile (BK 32 or 64)
//   WM, WN          warps along M and N
//   STAGES          pipeline depth (>= 2)
//   SPLIT           K split (1: none); > 1: SPLIT consecutive blocks along x split one tile's K
//                   as a thread block cluster (sm_90+) and sum their fp32 partials through
//                   distributed shared memory in the same launch, each block writing a share of
//                   the tile
//   GROUP           rasterization: GROUP consecutive block rows walk N together, so the B tiles
//                   they share stay in L2 (1: plain row-major order)
//   BIAS            1: add bias[n]
//   SILU_MUL        1: B is the gate's N/2 rows then the up's (N % 16 == 0), and C[M, N/2] =
//                   silu(gate) * up. The block's BN columns interleave them in groups of 8: group
//                   2i holds gate rows, group 2i + 1 the up rows of the same 8 outputs, so a
//                   thread's accumulators for mma tiles 2i and 2i + 1 are one output's pair
//   ROPE            1: gemm_rope's kernel, gemm_tiled_rope (SPLIT 1): C is qkv, never written;
//                   the block parks its fp32 tile in shared memory and each warp takes (row, head)
//                   units of it: the q/k RMSNorm (QK_NORM), the rotation, the store to q or the
//                   caches (rope.cu's defines, with attune_rope.cuh). BN is a multiple of HEAD, so
//                   a tile holds whole heads
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "attune_launch.cuh"  // attune_grid_dependency

#ifndef BIAS
#define BIAS 0
#endif
#ifndef SILU_MUL
#define SILU_MUL 0
#endif
#ifndef ROPE
#define ROPE 0
#endif
#define KSPLIT SPLIT
#include "attune_cluster.cuh"     // CLUSTER_DIMS, cluster_sync, cluster_load
#include "attune_gemm_store.cuh"  // silu, store_pair
#if ROPE
#define ROPE_EPILOGUE
#include "attune_rope.cuh"  // kHeads, rope_epilogue_tile
#endif

namespace {

constexpr int kThreads = WM * WN * 32;
constexpr int kWarpM = BM / WM, kWarpN = BN / WN;
constexpr int kMi = kWarpM / 16, kNi = kWarpN / 8;  // mma tiles per warp
constexpr int kChunksPerRow = BK / 8;               // 16-byte chunks in a tile row
constexpr int kRowsPerLine = 64 / BK;               // tile rows per 128-byte bank line
constexpr int kKTiles = (K + BK - 1) / BK;
constexpr int kKTilesPerSplit = (kKTiles + SPLIT - 1) / SPLIT;
constexpr int kTilesM = (M + BM - 1) / BM, kTilesN = (N + BN - 1) / BN;
constexpr int kStageElems = (BM + BN) * BK;
static_assert(kWarpM % 16 == 0 && kWarpN % 16 == 0, "warp tile must be a multiple of 16 x 16");
static_assert(BK == 32 || BK == 64, "BK is 32 or 64");
static_assert(K % 8 == 0, "K must be a multiple of 8");
constexpr int kOutN = SILU_MUL ? N / 2 : N;  // C's columns
static_assert(!SILU_MUL || N % 16 == 0, "the SiLU * mul epilogue needs N % 16 == 0");
#if ROPE
static_assert(SPLIT == 1 && !SILU_MUL && !BIAS, "the RoPE epilogue takes no K split, SiLU or bias");
static_assert(BN % HEAD == 0 && N == kHeads * HEAD, "a block tile holds whole heads of qkv");
// The parked fp32 tile's row pitch (gemm_tiled_rope_tile_bytes): padded so rows start on other
// banks.
constexpr int kTileStride = BN + 4;
#endif

// Element offset of (row, chunk) in a swizzled tile: the chunk index is XORed with the row's
// position in its group of bank lines, so the 8 rows one ldmatrix reads fall in distinct banks.
__device__ __forceinline__ int swizzle(int row, int chunk) {
  return row * BK + ((chunk ^ ((row / kRowsPerLine) % kChunksPerRow)) * 8);
}

__device__ __forceinline__ void cp_async16(void* smem, const void* gmem, bool ok) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  const int bytes = ok ? 16 : 0;  // 0: the 16 bytes are zero-filled and nothing is read
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem), "r"(bytes));
}

__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::);
}

template <int Pending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(Pending));
}

__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], const T* p) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(p));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(s));
}

__device__ __forceinline__ void mma(float (&d)[4], const unsigned (&a)[4], unsigned b0,
                                    unsigned b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." TNAME "." TNAME
               ".f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
               "{%0,%1,%2,%3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Copies rows [r0, r0 + ROWS) x [k0, k0 + BK) of a K-contiguous matrix with `limit` rows into a
// swizzled tile. INTERLEAVED (B under SILU_MUL): tile row v is column v of the interleaved
// order, the gate's or the up's row of output (v / 16) * 8 + v % 8.
template <int ROWS, bool INTERLEAVED = false>
__device__ __forceinline__ void load_tile(T* tile, const T* g, int r0, int limit, int k0, int tid) {
#pragma unroll
  for (int i = tid; i < ROWS * kChunksPerRow; i += kThreads) {
    const int r = i / kChunksPerRow, c = i % kChunksPerRow;
    int gr = r0 + r;
    const int gk = k0 + c * 8;
    const bool ok = gr < limit && gk < K;
    if constexpr (INTERLEAVED) {
      const int out = gr / 16 * 8 + gr % 8;
      gr = (gr / 8) % 2 ? kOutN + out : out;
    }
    cp_async16(tile + swizzle(r, c), ok ? g + static_cast<size_t>(gr) * K + gk : g, ok);
  }
}

}  // namespace

extern "C" __global__ void __launch_bounds__(kThreads) CLUSTER_DIMS
#if ROPE
    gemm_tiled_rope(T* __restrict__ q, T* __restrict__ k, T* __restrict__ v,
                    const T* __restrict__ a, const T* __restrict__ b, const T* __restrict__ q_norm,
                    const T* __restrict__ k_norm, int seq, int kv, float eps) {
#else
    gemm_tiled(T* __restrict__ c, const T* __restrict__ a, const T* __restrict__ b,
               const T* __restrict__ bias) {
#endif
  attune_grid_dependency();
  extern __shared__ __align__(128) unsigned char smem_raw[];
  T* smem = reinterpret_cast<T*>(smem_raw);
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int wm = warp / WN, wn = warp % WN;

  // Grouped rasterization of the tiles (over (tile row, tile column)); under a K split the SPLIT
  // consecutive blocks of one cluster share a tile, block `split` taking its split-th K range.
  constexpr int kInGroup = GROUP * kTilesN;
  const int pid = blockIdx.x / SPLIT, split = blockIdx.x % SPLIT;
  const int first_m = (pid / kInGroup) * GROUP;
  const int group_rows = min(kTilesM - first_m, GROUP);
  const int tile_m = first_m + (pid % kInGroup) % group_rows;
  const int tile_n = (pid % kInGroup) / group_rows;
  const int m0 = tile_m * BM, n0 = tile_n * BN;
  const int kt0 = split * kKTilesPerSplit;
  const int nk = max(min(kKTiles, kt0 + kKTilesPerSplit) - kt0, 0);

  float acc[kMi][kNi][4] = {};

#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < nk) {
      load_tile<BM>(smem + s * kStageElems, a, m0, M, (kt0 + s) * BK, tid);
      load_tile<BN, SILU_MUL>(smem + s * kStageElems + BM * BK, b, n0, N, (kt0 + s) * BK, tid);
    }
    cp_async_commit();
  }
  for (int kt = 0; kt < nk; ++kt) {
    cp_async_wait<STAGES - 2>();
    // Every warp is done with the slot the next load overwrites (it was read in iteration kt - 1).
    __syncthreads();
    const int next = kt + STAGES - 1;
    if (next < nk) {
      T* slot = smem + (next % STAGES) * kStageElems;
      load_tile<BM>(slot, a, m0, M, (kt0 + next) * BK, tid);
      load_tile<BN, SILU_MUL>(slot + BM * BK, b, n0, N, (kt0 + next) * BK, tid);
    }
    cp_async_commit();
    const T* ta = smem + (kt % STAGES) * kStageElems;
    const T* tb = ta + BM * BK;
#pragma unroll
    for (int kk = 0; kk < BK / 16; ++kk) {
      unsigned af[kMi][4], bf[kNi / 2][4];
#pragma unroll
      for (int mi = 0; mi < kMi; ++mi)
        ldmatrix_x4(af[mi], ta + swizzle(wm * kWarpM + mi * 16 + lane % 16, kk * 2 + lane / 16));
#pragma unroll
      for (int nj = 0; nj < kNi / 2; ++nj) {
        const int q =
            lane /
            8;  // matrices: (n 0-7, k 0-7), (n 0-7, k 8-15), (n 8-15, k 0-7), (n 8-15, k 8-15)
        ldmatrix_x4(bf[nj],
                    tb + swizzle(wn * kWarpN + nj * 16 + (q / 2) * 8 + lane % 8, kk * 2 + q % 2));
      }
#pragma unroll
      for (int mi = 0; mi < kMi; ++mi)
#pragma unroll
        for (int ni = 0; ni < kNi; ++ni)
          mma(acc[mi][ni], af[mi], bf[ni / 2][(ni % 2) * 2], bf[ni / 2][(ni % 2) * 2 + 1]);
    }
  }
  cp_async_wait<0>();

#if ROPE
  // Every warp is done reading the ring: the tile's fp32 accumulators go where it was, row-major
  // with a padded pitch. Fragment: d0, d1 at (row lane/4, columns 2 (lane % 4) + 0, 1); d2, d3
  // eight rows down.
  __syncthreads();
  float* tile = reinterpret_cast<float*>(smem_raw);
#pragma unroll
  for (int mi = 0; mi < kMi; ++mi)
#pragma unroll
    for (int ni = 0; ni < kNi; ++ni)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = wm * kWarpM + mi * 16 + lane / 4 + h * 8;
        const int col = wn * kWarpN + ni * 8 + (lane % 4) * 2;
        *reinterpret_cast<float2*>(tile + r * kTileStride + col) =
            make_float2(acc[mi][ni][h * 2], acc[mi][ni][h * 2 + 1]);
      }
  __syncthreads();
  rope_epilogue_tile<BM, BN, kTileStride, M>(tile, m0, n0, warp, kThreads / 32, q, k, v, q_norm,
                                             k_norm, seq, kv, eps, lane);
#else
  // A thread's outputs in units of two adjacent mma tiles (ni = 2 np, 2 np + 1: under SILU_MUL a
  // gate tile and its up tile). Accumulator fragment: d0, d1 at (row lane/4, columns
  // 2 (lane % 4) + 0, 1); d2, d3 eight rows down.
  auto store_unit = [&](int mi, int np) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = m0 + wm * kWarpM + mi * 16 + lane / 4 + h * 8;
#pragma unroll
      for (int ni = 2 * np; ni < 2 * np + 2; ++ni) {
        const int col = n0 + wn * kWarpN + ni * 8 + (lane % 4) * 2;
        const float v0 = acc[mi][ni][h * 2], v1 = acc[mi][ni][h * 2 + 1];
        if constexpr (SILU_MUL) {
          // Tile ni (even) holds gates, ni + 1 the ups of the same outputs.
          if (ni % 2 == 0)
            store_pair<M, kOutN, BIAS>(c, row, col / 16 * 8 + col % 8,
                                       silu(v0) * acc[mi][ni + 1][h * 2],
                                       silu(v1) * acc[mi][ni + 1][h * 2 + 1], bias);
        } else {
          store_pair<M, kOutN, BIAS>(c, row, col, v0, v1, bias);
        }
      }
    }
  };
#if SPLIT == 1
#pragma unroll
  for (int mi = 0; mi < kMi; ++mi)
#pragma unroll
    for (int np = 0; np < kNi / 2; ++np) store_unit(mi, np);
#else
  // Every block of the cluster parks its partial tile in its (now idle) pipeline memory, thread
  // by thread (value j of thread t at j * kThreads + t); block r then sums and writes every
  // SPLIT-th unit, starting at r, reading all SPLIT blocks' partials through distributed shared
  // memory. No block leaves before the last cluster barrier, which keeps its partials readable.
  __syncthreads();
  float* partial = reinterpret_cast<float*>(smem_raw);
#pragma unroll
  for (int mi = 0; mi < kMi; ++mi)
#pragma unroll
    for (int ni = 0; ni < kNi; ++ni)
#pragma unroll
      for (int q = 0; q < 4; ++q)
        partial[((mi * kNi + ni) * 4 + q) * kThreads + tid] = acc[mi][ni][q];
  cluster_sync();
#pragma unroll
  for (int mi = 0; mi < kMi; ++mi)
#pragma unroll
    for (int np = 0; np < kNi / 2; ++np) {
      if ((mi * (kNi / 2) + np) % SPLIT != split) continue;
#pragma unroll
      for (int ni = 2 * np; ni < 2 * np + 2; ++ni)
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          // Every block's value is loaded before any is added, so the remote loads overlap.
          const float* mine = partial + ((mi * kNi + ni) * 4 + q) * kThreads + tid;
          float v[SPLIT];
#pragma unroll
          for (int r = 0; r < SPLIT; ++r) v[r] = cluster_load(mine, r);
          float s = 0.f;
#pragma unroll
          for (int r = 0; r < SPLIT; ++r) s += v[r];
          acc[mi][ni][q] = s;
        }
      store_unit(mi, np);
    }
  cluster_sync();
#endif
#endif  // ROPE
}
