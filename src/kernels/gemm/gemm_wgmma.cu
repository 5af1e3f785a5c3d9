// Hopper GEMM on the warpgroup MMA: C[M,N] = A[M,K] . B[N,K]^T (+ bias[N]), 16-bit inputs and
// output, fp32 accumulation with wgmma.m64nBNk16 from shared memory. Both operands are
// K-contiguous, the form wgmma reads without transposes. A block computes a BM x BN tile of C: one
// thread of the producer warpgroup has the TMA copy BM x 64 and BN x 64 tiles (128-byte rows,
// swizzled as wgmma reads them) into a STAGES-deep ring, each stage completing an mbarrier; BM / 64
// consumer warpgroups each multiply their 64 rows of the A tile with the whole B tile, keeping one
// MMA group in flight, and hand the slot back through a second mbarrier. The TMA zero-fills what
// lies past M, N and K. Kernel arguments: c, the tensor maps of A (M x K, box 64 x BM) and B (N x
// K, box 64 x BN, BN / 2 under SILU_MUL), bias, resid (RESIDUAL's), eps (RMS_NORM's). Defines:
//   T, TNAME        __nv_bfloat16 / bf16 or __half / f16
//   M, N, K         the shape (K % 8 == 0: the TMA's row stride is a multiple of 16 bytes)
//   BM, BN          block tile: BM 64 or 128 (one or two consumer warpgroups), BN 64, 128 or 256
//   STAGES          ring depth (>= 2)
//   SPLIT           K split (1: none); > 1: SPLIT consecutive blocks along x split one tile's K
//                   as a thread block cluster and sum their fp32 partials through distributed
//                   shared memory in the same launch, each block writing a share of the tile
//   GROUP           rasterization: GROUP consecutive block rows walk N together
//   CLUSTER         1 (default) or 2 (SPLIT 1): two blocks of consecutive tile rows (one tile
//                   column) run as a thread block cluster and share their B tile: each has the
//                   TMA load one half of it (BN / 2 rows: under SILU_MUL the gate half or the up
//                   half) and multicast it into both blocks' rings, so the L2 serves B once for
//                   two tiles. A ring slot is refilled only once the consumers of both blocks
//                   have handed it back (each arrives on both blocks' empty mbarrier)
//   TMA_STORE       1 (SPLIT 1, 64 or more output columns per tile, N % 8 == 0): the consumers
//                   store C through shared memory and the TMA: each consumer warpgroup writes 64
//                   output columns of its 64 rows into one of its two 8 KiB staging buffers after
//                   the ring (swizzled as the loads), and one of its threads has the TMA store
//                   them (clipped at M and N) while the next 64 go into the other buffer. The
//                   kernel then takes C's tensor map (box 64 x 64) after B's. 0 (default): each
//                   thread stores its accumulators' pairs straight to global memory
//   BIAS            1: add bias[n]
//   RMS_NORM        1 (SPLIT 1): C's row i is scaled by 1 / sqrt(mean_k A[i,k]^2 + eps) (gemm
//                   and gemm_rope rms_norm=1: an RMSNorm folded into the GEMM, its weight into
//                   B; under ROPE before the q/k norm and the rotation, eps shared with QK_NORM's,
//                   both 1e-6). The sums of squares come from the tensor cores: each k-tile, the
//                   consumer also multiplies its 64 rows of the A tile by themselves (wgmma
//                   m64n64k16, the A tile as both operands: it is K-major as B is), in the same
//                   commit group as the tile's MMAs, so A A^T accumulates in 32 more registers and
//                   its diagonal is every row's sum of squares in fp32, exactly as an FMA loop
//                   would sum the bf16 products. The scale multiplies the accumulators before the
//                   epilogue. (Summing from shared memory with FMAs, in the consumers or in the
//                   producer warpgroup's idle warps, measured 1.5-2.6 us slower at 128 x 4096 x
//                   1024 on an H100: a chain of dependent FMAs per k-tile on the loop's critical
//                   path)
//   RESIDUAL        1: add resid[m, n], a matrix of C's shape (which may be C itself)
//   SILU_MUL        1: B is the gate's N/2 rows then the up's (N % 16 == 0), and C[M, N/2] =
//                   silu(gate) * up. A tile's BN columns are BN / 2 outputs: the B tile's first
//                   BN / 2 rows are their gate rows, the next BN / 2 their up rows, so a thread's
//                   accumulators of column group j and j + BN / 16 are one output's pair
//   ROPE            1: gemm_rope's kernel, gemm_wgmma_rope (SPLIT 1): C is qkv, never written;
//                   each consumer thread normalizes (QK_NORM, summed over its quad) and rotates
//                   its accumulators in registers, a rotation pair being one thread's, and stores
//                   them to q or the caches (rope.cu's defines, with attune_rope.cuh). BN is a
//                   multiple of HEAD, so a tile holds whole heads
//   ROPE_STAGED     1 (ROPE): each consumer warp writes its outputs of one row half (8 rows of
//                   the tile's BN columns) into its own shared-memory slab first, then stores
//                   whole head rows from it, 16 bytes a lane: a warp instruction writes two
//                   256-byte rows instead of eight rows' 16-byte pieces. 0: each thread stores its
//                   pairs (4 bytes) straight to q and the caches
//   PINGPONG        1 (BM 64, SPLIT 1): two consumer warpgroups take the block's tiles in turn,
//                   each a whole 64 x BN tile with its own accumulators: while one multiplies,
//                   the other runs its epilogue, so the stores, the SiLU or the RoPE of one tile
//                   hide behind the next tile's MMAs. Their main loops take turns through two
//                   named barriers (a warpgroup starts its tile's k-tiles once the other has
//                   finished the previous tile's), which also keeps each one's waits on the
//                   shared ring at most one phase ahead. 0 (default): the BM / 64 consumer
//                   warpgroups share each tile, 64 rows each, and store it together
// Under SPLIT 1 a block takes tiles blockIdx.x, blockIdx.x + gridDim.x, ... (the launch's grid
// sets how many each takes, wg_tiles): the producer goes on filling the ring with its next tile
// while the consumers store the last, so a block past its first tile finds its ring full.
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
#ifndef ROPE_STAGED
#define ROPE_STAGED 0
#endif
#ifndef TMA_STORE
#define TMA_STORE 0
#endif
#ifndef CLUSTER
#define CLUSTER 1
#endif
#ifndef PINGPONG
#define PINGPONG 0
#endif
#ifndef RMS_NORM
#define RMS_NORM 0
#endif
#ifndef RESIDUAL
#define RESIDUAL 0
#endif
#define KSPLIT (SPLIT * CLUSTER)
#include "attune_cluster.cuh"  // CLUSTER_DIMS, cluster_sync, cluster_load
#define WG_T TNAME
#include "attune_gemm_store.cuh"  // silu, store_pair
#include "attune_wgmma.cuh"       // desc, mbarriers, TensorMap, tma_load_2d, mma_ss
#if ROPE
#include "attune_rope.cuh"  // kHalf, kHeads, kQk, inv_freq, head_dst
#endif

namespace {

constexpr int kConsumers = PINGPONG ? 2 : BM / 64;
// The consumer warpgroups that read one k-tile of the ring (and hand its slot back).
constexpr int kSlotReaders = PINGPONG ? 1 : kConsumers;
constexpr int kThreads = 128 * (kConsumers + 1);
constexpr int kBK = 64;  // one 128-byte swizzled row of 16-bit elements
constexpr int kKTiles = (K + kBK - 1) / kBK;
constexpr int kKTilesPerSplit = (kKTiles + SPLIT - 1) / SPLIT;
constexpr int kTilesM = (M + BM - 1) / BM, kTilesN = (N + BN - 1) / BN;
// A cluster's work unit: CLUSTER consecutive tile rows of one tile column (a rank past the last
// row computes zeros and stores nothing).
constexpr int kRowsM = (kTilesM + CLUSTER - 1) / CLUSTER;
constexpr int kTiles = kRowsM * kTilesN;
constexpr unsigned kABytes = BM * 128, kStageBytes = (BM + BN) * 128;
constexpr unsigned kPipeBytes = STAGES * kStageBytes;
constexpr unsigned kPartialBytes = SPLIT > 1 ? BM* BN * 4 : 0;
// TMA_STORE's staging: two 64 x 64 buffers of 16-bit outputs per consumer warpgroup.
constexpr unsigned kStoreBuf = 64 * 128;
// ROPE_STAGED's slabs: 8 rows of BN 16-bit outputs per consumer warp (at most the TMA store's
// 16 KiB per consumer warpgroup, which the host allots for both).
constexpr unsigned kRopeSlab = 8 * BN * 2;
constexpr unsigned kStoreBytes = TMA_STORE     ? kConsumers * 2 * kStoreBuf
                                 : ROPE_STAGED ? kConsumers * 4 * kRopeSlab
                                               : 0;
constexpr unsigned kBarOffset =
    (kPipeBytes > kPartialBytes ? kPipeBytes : kPartialBytes) + kStoreBytes;
constexpr int kAcc = BN / 2;  // accumulators per consumer thread
constexpr int kOutN = SILU_MUL ? N / 2 : N;
static_assert(BM == 64 || BM == 128, "BM is 64 or 128");
static_assert(BN == 64 || BN == 128 || BN == 256, "BN is 64, 128 or 256");
static_assert(STAGES >= 2, "at least two stages");
static_assert(!PINGPONG || (BM == 64 && SPLIT == 1),
              "ping-pong consumers take 64-row tiles, no K split");
static_assert(CLUSTER == 1 || (CLUSTER == 2 && SPLIT == 1), "a B-sharing cluster of 2, no K split");
static_assert(K % 8 == 0, "K must be a multiple of 8");
static_assert(!TMA_STORE ||
                  (SPLIT == 1 && !ROPE && (SILU_MUL ? BN / 2 : BN) % 64 == 0 && kOutN % 8 == 0),
              "the TMA store takes whole 64-column boxes of a C whose rows are 16-byte aligned");
static_assert(!SILU_MUL || N % 16 == 0, "the SiLU * mul epilogue needs N % 16 == 0");
#if ROPE
static_assert(SPLIT == 1 && !SILU_MUL && !BIAS, "the RoPE epilogue takes no K split, SiLU or bias");
static_assert(4 * kRopeSlab <= 2 * kStoreBuf, "a consumer's slabs fit the staging the host allots");
static_assert(BN % HEAD == 0 && N == kHeads * HEAD, "a block tile holds whole heads of qkv");
#endif
static_assert(!ROPE_STAGED || ROPE, "ROPE_STAGED is the RoPE epilogue's");
static_assert(!RMS_NORM || SPLIT == 1, "a row's squares are summed over the whole of K");
static_assert(!(ROPE && RESIDUAL), "the RoPE epilogue takes no residual");
static_assert(!(RESIDUAL && SILU_MUL), "a residual adds to a projection, not to SiLU * mul");

}  // namespace

extern "C" __global__ void __launch_bounds__(kThreads, 1) CLUSTER_DIMS
#if ROPE
    gemm_wgmma_rope(T* __restrict__ q, T* __restrict__ k, T* __restrict__ v,
                    const __grid_constant__ TensorMap tma_a,
                    const __grid_constant__ TensorMap tma_b, const T* __restrict__ q_norm,
                    const T* __restrict__ k_norm, int seq, int kv, float eps) {
#else
    gemm_wgmma(T* __restrict__ c, const __grid_constant__ TensorMap tma_a,
               const __grid_constant__ TensorMap tma_b,
#if TMA_STORE
               const __grid_constant__ TensorMap tma_c,
#endif
               const T* __restrict__ bias, const T* __restrict__ resid, float eps) {
#endif
  attune_grid_dependency();
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  // The swizzle is applied to absolute address bits: tiles start on 1024-byte boundaries.
  const unsigned raw = static_cast<unsigned>(__cvta_generic_to_shared(smem_raw));
  const unsigned base = (raw + 1023) & ~1023u;
  const unsigned bars = base + kBarOffset;  // full[STAGES], empty[STAGES]
  auto full = [&](int s) { return bars + 8 * s; };
  auto empty = [&](int s) { return bars + 8 * STAGES + 8 * s; };

  // Grouped rasterization of the work units (tiles, or under CLUSTER 2 pairs of tiles); under a
  // K split the SPLIT consecutive blocks of one cluster share a tile, block `split` taking its
  // split-th K range (one tile per block then: the grid is the tiles times SPLIT); under CLUSTER
  // 2 block `rank` of a pair takes the unit's rank-th tile row.
  constexpr int kInGroup = GROUP * kTilesN;
  const int split = blockIdx.x % SPLIT, blocks = gridDim.x / (SPLIT * CLUSTER);
  const int rank = CLUSTER > 1 ? static_cast<int>(blockIdx.x % CLUSTER) : 0;
  const int unit0 = blockIdx.x / (SPLIT * CLUSTER);
  auto tile_origin = [rank](int pid, int& m0, int& n0) {
    const int first_m = (pid / kInGroup) * GROUP;
    const int group_rows = min(kRowsM - first_m, GROUP);
    m0 = ((first_m + (pid % kInGroup) % group_rows) * CLUSTER + rank) * BM;
    n0 = ((pid % kInGroup) / group_rows) * BN;
  };
  const int kt0 = split * kKTilesPerSplit;
  const int nk = max(min(kKTiles, kt0 + kKTilesPerSplit) - kt0, 0);
  const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;

  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      bar_init(full(s), 1);
      bar_init(empty(s), 4 * kSlotReaders * CLUSTER);
    }
  }
#if ROPE && QK_NORM
  // The q and k norm weights as fp32, once a block, after the mbarriers (the host allots 2 HEAD
  // floats there): the epilogue then reads a thread's pair of them with one shared load, where
  // global loads of 16-bit pairs, aligned or not, took two code paths and their conversions.
  float* const norm_w =
      reinterpret_cast<float*>(smem_raw + (base - raw) + kBarOffset + 16 * STAGES);
  for (int i = threadIdx.x; i < 2 * HEAD; i += kThreads)
    norm_w[i] = static_cast<float>(i < HEAD ? q_norm[i] : k_norm[i - HEAD]);
#endif
#if CLUSTER > 1
  // Both blocks' mbarriers are initialized before either's TMA or consumers reach the other's.
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  cluster_sync();
#else
  __syncthreads();
#endif

  if (wg == 0) {
#if BM == 128 || PINGPONG
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
#endif
    // The producer, one thread: the block's tiles' K ranges in turn, k-tile `it` of them all
    // into slot it % STAGES once the consumers have handed it back.
    if (tid == 0) {
      int it = 0;
      for (int pid = unit0; pid < kTiles; pid += blocks) {
        int m0, n0;
        tile_origin(pid, m0, n0);
        for (int j = 0; j < nk; ++j, ++it) {
          const int s = it % STAGES;
          if (it >= STAGES) bar_wait(empty(s), ((it / STAGES) + 1) & 1);
          const unsigned sa = base + s * kStageBytes, sb = sa + kABytes;
          const int k0 = (kt0 + j) * kBK;
          bar_expect(full(s), kStageBytes);
          tma_load_2d(sa, tma_a, k0, m0, full(s));
          if constexpr (CLUSTER > 1) {
            // This rank's half of the B tile into both blocks' slot s, completing on both full(s).
            const int row = SILU_MUL ? (rank == 0 ? n0 / 2 : kOutN + n0 / 2) : n0 + rank * BN / 2;
            tma_load_2d_multicast(sb + rank * (BN / 2 * 128), tma_b, k0, row, full(s),
                                  (1u << CLUSTER) - 1);
          } else if constexpr (SILU_MUL) {
            tma_load_2d(sb, tma_b, k0, n0 / 2, full(s));                         // gate rows
            tma_load_2d(sb + BN / 2 * 128, tma_b, k0, kOutN + n0 / 2, full(s));  // up rows
          } else {
            tma_load_2d(sb, tma_b, k0, n0, full(s));
          }
        }
      }
    }
#if SPLIT > 1
    // The producer takes part in the block's and the cluster's barriers of the reduction below.
    __syncthreads();
    cluster_sync();
    cluster_sync();
#elif CLUSTER > 1
    cluster_sync();  // the consumers' last one below
#endif
    return;
  }

#if BM == 128 || PINGPONG
  asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
#endif
  const int cw = wg - 1, lane = tid % 32, warp = tid / 32;
  // The first of this consumer's 64 rows in the tile (under PINGPONG the tile is its own).
  const int row0 = PINGPONG ? 0 : cw * 64;
  float acc[kAcc];
  auto release = [&](int it) {
    if (lane != 0) return;
#if CLUSTER > 1
      // The slot is refilled by both blocks' producers: each block's empty mbarrier hears from
      // the consumers of both.
#pragma unroll
    for (int r = 0; r < CLUSTER; ++r) bar_arrive_cluster(empty(it % STAGES), r);
#else
    bar_arrive(empty(it % STAGES));
#endif
  };
  int it = 0;  // k-tiles consumed so far, over the block's tiles
#if TMA_STORE
  int stores = 0;  // boxes this warpgroup has had stored
#endif
  for (int pid = unit0, b = 0; pid < kTiles; pid += blocks, ++b) {
#if PINGPONG
    // The block's b-th tile is consumer b % 2's; the other skips its k-tiles.
    if (b % 2 != cw) {
      it += nk;
      continue;
    }
    // Its main loop starts once the other consumer's (tile b - 1) is done: named barrier 3 + cw,
    // which that consumer arrives on (128 threads) and this one waits on (128).
    if (b > 0) asm volatile("bar.sync %0, 256;\n" ::"r"(3 + cw) : "memory");
#endif
    int m0, n0;
    tile_origin(pid, m0, n0);
#pragma unroll
    for (int i = 0; i < kAcc; ++i) acc[i] = 0.f;
#if RMS_NORM
    float sq[32];  // this consumer's 64 x 64 block of A A^T, its diagonal the rows' squares
#pragma unroll
    for (int i = 0; i < 32; ++i) sq[i] = 0.f;
#endif
    for (int j = 0; j < nk; ++j, ++it) {
      const int s = it % STAGES;
      bar_wait(full(s), (it / STAGES) & 1);
      const unsigned sa = base + s * kStageBytes + row0 * 128,
                     sb = base + s * kStageBytes + kABytes;
      pin<kAcc>(acc);
#if RMS_NORM
      pin<32>(sq);
#endif
      wg_fence();
#pragma unroll
      for (int kk = 0; kk < kBK / 16; ++kk)
        mma_ss<BN>(acc, desc(sa + kk * 32, 16, 1024), desc(sb + kk * 32, 16, 1024), 1);
#if RMS_NORM
#pragma unroll
      for (int kk = 0; kk < kBK / 16; ++kk)
        mma_ss<64>(sq, desc(sa + kk * 32, 16, 1024), desc(sa + kk * 32, 16, 1024), 1);
#endif
      wg_commit();
      // k-tile it - 1's group is done once at most this one is in flight: its slot goes back.
      wg_wait<1>();
      pin<kAcc>(acc);
#if RMS_NORM
      pin<32>(sq);
#endif
      if (j > 0) release(it - 1);
    }
    wg_wait<0>();
    pin<kAcc>(acc);
#if RMS_NORM
    pin<32>(sq);
#endif
    // The tile's last slot goes back too: the producer may be filling the ring with the next.
    if (nk > 0) release(it - 1);
#if RMS_NORM
    // Row r = 16 warp + lane / 4 + 8 h of the consumer's 64 holds A A^T[r][c] at c = 8 j + 2 (lane
    // % 4) + e in sq[4 j + 2 h + e]: its diagonal c = r is at j = 2 warp + h, e = (lane / 4) % 2,
    // in lane (lane & ~3) | (lane / 8) of its quad. Selected over the unrolled j (registers take
    // constant indices), then shuffled to the quad.
    {
      const int e = (lane >> 2) & 1, holder = (lane & ~3) | (lane >> 3);
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float d = 0.f;
#pragma unroll
        for (int jj = 0; jj < 8; ++jj)
          if (jj == 2 * warp + h) d = e ? sq[4 * jj + 2 * h + 1] : sq[4 * jj + 2 * h];
        d = __shfl_sync(0xffffffffu, d, holder);
        const float rs = rsqrtf(d / K + eps);
#pragma unroll
        for (int i = 0; i < kAcc; ++i)
          if (((i >> 1) & 1) == h) acc[i] *= rs;
      }
    }
#else
    (void)eps;
#endif
#if PINGPONG
    // The next tile's consumer may start multiplying while this one stores.
    if (pid + blocks < kTiles) asm volatile("bar.arrive %0, 256;\n" ::"r"(4 - cw) : "memory");
#endif

#if ROPE
    // In registers: a consumer thread holds rows r = row0 + 16 warp + lane / 4 + 8 h (h = 0, 1),
    // columns 8 j + 2 (lane % 4) + e in acc[4 j + 2 h + e]. A head's rotation pair (i, i + HEAD /
    // 2) is column groups j and j + HEAD / 16 with the same lane and e, so both are this thread's;
    // a row's head is spread over the 4 lanes of a quad (equal lane / 4), whose shuffles sum its
    // norm. The frequencies of this thread's pair columns are computed once, the angles once per
    // row.
    constexpr int kHeadGroups = HEAD / 8, kHalfGroups = HEAD / 16;
    float inv[kHalfGroups][2];
#pragma unroll
    for (int jj = 0; jj < kHalfGroups; ++jj)
#pragma unroll
      for (int e = 0; e < 2; ++e) inv[jj][e] = inv_freq(8 * jj + 2 * (lane % 4) + e);
#if ROPE_STAGED
    // This warp's slab: row lane / 4 holds the row half's BN columns, 16-byte chunk c at c ^ (row
    // % 8) (the quad's eight rows then write distinct banks, and eight lanes reading eight
    // consecutive chunks of a row too). 16-byte stores need 16-byte aligned q and caches.
    const unsigned slab = base + kPipeBytes + (cw * 4 + warp) * kRopeSlab;
    constexpr int kRowChunks = BN / 8;
    const bool wide =
        ((reinterpret_cast<size_t>(q) | reinterpret_cast<size_t>(k) | reinterpret_cast<size_t>(v)) &
         15) == 0;
#endif
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int token = m0 + row0 + warp * 16 + lane / 4 + 8 * h;
      const bool live = token < M;  // a lane past the last token shuffles but stores nothing
      const int t = live ? token : 0, bt = t / seq, s = t - bt * seq, pos = kv - seq + s;
      float cs[kHalfGroups][2], sn[kHalfGroups][2];
#pragma unroll
      for (int jj = 0; jj < kHalfGroups; ++jj)
#pragma unroll
        for (int e = 0; e < 2; ++e)
          rope_sincos(static_cast<float>(pos) * inv[jj][e], &sn[jj][e], &cs[jj][e]);
#pragma unroll
      for (int th = 0; th < BN / HEAD; ++th) {
        const int hd = n0 / HEAD + th;
        if (hd >= kHeads) break;  // uniform: past qkv's last head
        const int g0 = th * kHeadGroups;
#if ROPE_STAGED
        // Column col (a multiple of 8) of head th, this thread's pair at it, into the slab.
        auto store = [&](int col, float a, float b) {
          const T pair[2] = {static_cast<T>(a), static_cast<T>(b)};
          const int r = lane / 4, c = th * kHeadGroups + col / 8;
          asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(slab + r * (BN * 2) +
                                                         ((c ^ (r & 7)) * 16) + (lane % 4) * 4),
                       "r"(*reinterpret_cast<const unsigned*>(pair))
                       : "memory");
        };
#else
        T* dst = head_dst(q, k, v, bt, s, pos, hd, seq, kv) + 2 * (lane % 4);
        auto store = [&](int col, float a, float b) {
          if (!live) return;
          const T pair[2] = {static_cast<T>(a), static_cast<T>(b)};
          *reinterpret_cast<unsigned*>(dst + col) = *reinterpret_cast<const unsigned*>(pair);
        };
#endif
        if (hd >= kQk) {  // a v head: stored as computed
#pragma unroll
          for (int jj = 0; jj < kHeadGroups; ++jj)
            store(8 * jj, acc[4 * (g0 + jj) + 2 * h], acc[4 * (g0 + jj) + 2 * h + 1]);
          continue;
        }
        float scale = 1.f;
#if QK_NORM
        // Four partial sums: one running sum made a chain of kHeadGroups dependent adds, a wait
        // the epilogue's two warps a scheduler could not hide.
        float part[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
        for (int jj = 0; jj < kHeadGroups; ++jj) {
          const float a = acc[4 * (g0 + jj) + 2 * h], b = acc[4 * (g0 + jj) + 2 * h + 1];
          part[jj % 4] = fmaf(a, a, fmaf(b, b, part[jj % 4]));
        }
        float ss = (part[0] + part[1]) + (part[2] + part[3]);
        ss += __shfl_xor_sync(0xffffffffu, ss, 1);
        ss += __shfl_xor_sync(0xffffffffu, ss, 2);
        scale = rsqrtf(ss / HEAD + eps);
        const float* w = norm_w + (hd < Q_HEADS ? 0 : HEAD) + 2 * (lane % 4);
        // The weights of this thread's pair at column col (even: 8-byte aligned).
        auto weights = [&](int col, float& w0, float& w1) {
          const float2 pair = *reinterpret_cast<const float2*>(w + col);
          w0 = pair.x;
          w1 = pair.y;
        };
#else
        (void)q_norm;
        (void)k_norm;
        (void)eps;
#endif
#pragma unroll
        for (int jj = 0; jj < kHalfGroups; ++jj) {
          float o1[2], o2[2];
#if QK_NORM
          float w1[2], w2[2];
          weights(8 * jj, w1[0], w1[1]);
          weights(kHalf + 8 * jj, w2[0], w2[1]);
#endif
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            float x1 = acc[4 * (g0 + jj) + 2 * h + e] * scale,
                  x2 = acc[4 * (g0 + jj + kHalfGroups) + 2 * h + e] * scale;
#if QK_NORM
            x1 *= w1[e];
            x2 *= w2[e];
#endif
            o1[e] = x1 * cs[jj][e] - x2 * sn[jj][e];
            o2[e] = x2 * cs[jj][e] + x1 * sn[jj][e];
          }
          store(8 * jj, o1[0], o1[1]);
          store(kHalf + 8 * jj, o2[0], o2[1]);
        }
      }
#if ROPE_STAGED
      // The slab's 8 rows out, a head row's 16-byte chunks on consecutive lanes (rows past the
      // last token and heads past qkv's last stay unwritten).
      __syncwarp();
#pragma unroll
      for (int i = lane; i < 8 * kRowChunks; i += 32) {  // BN % 32 == 0: every lane each time
        const int r = i / kRowChunks, c = i % kRowChunks, hd = n0 / HEAD + c / kHeadGroups;
        // Row r's sequence and position, from its quad (lanes 4 r ... hold row r above).
        const int rb = __shfl_sync(0xffffffffu, bt, 4 * r), rs = __shfl_sync(0xffffffffu, s, 4 * r);
        const int row = m0 + row0 + warp * 16 + r + 8 * h;
        if (row >= M || hd >= kHeads) continue;
        T* dst = head_dst(q, k, v, rb, rs, kv - seq + rs, hd, seq, kv) + (c % kHeadGroups) * 8;
        unsigned x0, x1, x2, x3;
        asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n"
                     : "=r"(x0), "=r"(x1), "=r"(x2), "=r"(x3)
                     : "r"(slab + r * (BN * 2) + ((c ^ (r & 7)) * 16))
                     : "memory");
        if (wide) {
          *reinterpret_cast<uint4*>(dst) = make_uint4(x0, x1, x2, x3);
        } else {
          unsigned* d = reinterpret_cast<unsigned*>(dst);
          d[0] = x0;
          d[1] = x1;
          d[2] = x2;
          d[3] = x3;
        }
      }
      __syncwarp();  // the slab is read before the next row half overwrites it
#endif
    }
#else

    // A consumer thread's outputs: warp w of consumer cw holds rows row0 + 16 w + lane / 4 and
    // eight below; accumulators 4 j + 2 h + e are column 8 j + 2 (lane % 4) + e of row half h. A
    // unit u is 16 outputs' columns: groups 2u and 2u + 1, or under SILU_MUL gate group u and its
    // up group u + BN / 16.
    constexpr int kUnits = BN / 16;
#if !TMA_STORE
    auto store_unit = [&](int u) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = m0 + row0 + warp * 16 + lane / 4 + h * 8;
        if constexpr (SILU_MUL) {
          const int g = 4 * u + 2 * h, up = 4 * (u + kUnits) + 2 * h;
          store_pair<M, kOutN, BIAS>(c, row, n0 / 2 + u * 8 + (lane % 4) * 2,
                                     silu(acc[g]) * acc[up], silu(acc[g + 1]) * acc[up + 1], bias);
        } else {
#pragma unroll
          for (int g = 2 * u; g < 2 * u + 2; ++g)
            store_pair<M, kOutN, BIAS, T, RESIDUAL>(c, row, n0 + g * 8 + (lane % 4) * 2,
                                                    acc[4 * g + 2 * h], acc[4 * g + 2 * h + 1],
                                                    bias, resid);
        }
      }
    };
#endif
#if TMA_STORE
    // 64 output columns (8 groups of 8) of the warpgroup's 64 rows at a time into staging buffer
    // `stores` % 2, whose store two boxes ago has finished reading it; a thread's row r holds
    // group j's pair at chunk j ^ (r % 8) of the 128-byte row, as the 128-byte swizzle puts it.
    constexpr int kOutBN = SILU_MUL ? BN / 2 : BN;  // a tile's output columns
    const unsigned staging = base + kPipeBytes + cw * 2 * kStoreBuf;
    const int r0 = warp * 16 + lane / 4;
    auto sync_consumer = [cw]() { asm volatile("bar.sync %0, 128;\n" ::"r"(1 + cw) : "memory"); };
#pragma unroll
    for (int box = 0; box < kOutBN / 64; ++box, ++stores) {
      const unsigned buf = staging + (stores & 1) * kStoreBuf;
      if (tid == 0) bulk_wait_read<1>();
      sync_consumer();
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const int og = box * 8 + j;  // the tile's output column group
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          float v0, v1;
          if constexpr (SILU_MUL) {
            const int g = 4 * og + 2 * h, up = 4 * (og + kUnits) + 2 * h;
            v0 = silu(acc[g]) * acc[up];
            v1 = silu(acc[g + 1]) * acc[up + 1];
          } else {
            v0 = acc[4 * og + 2 * h];
            v1 = acc[4 * og + 2 * h + 1];
            if constexpr (BIAS) {
              const int col = n0 + og * 8 + (lane % 4) * 2;
              if (col < N) v0 += static_cast<float>(bias[col]);
              if (col + 1 < N) v1 += static_cast<float>(bias[col + 1]);
            }
            if constexpr (RESIDUAL) {
              // Read before the TMA stores the box over it (resid may be c).
              const int col = n0 + og * 8 + (lane % 4) * 2, row = m0 + row0 + r0 + 8 * h;
              if (row < M) {
                const T* q = resid + static_cast<size_t>(row) * N + col;
                if (col < N) v0 += static_cast<float>(q[0]);
                if (col + 1 < N) v1 += static_cast<float>(q[1]);
              }
            }
          }
          const int r = r0 + 8 * h;
          const T pair[2] = {static_cast<T>(v0), static_cast<T>(v1)};
          asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(buf + r * 128 + ((j ^ (r & 7)) * 16) +
                                                         (lane % 4) * 4),
                       "r"(*reinterpret_cast<const unsigned*>(pair))
                       : "memory");
        }
      }
      proxy_fence();  // the writes above, seen by the TMA's async proxy
      sync_consumer();
      if (tid == 0) {
        tma_store_2d(tma_c, (SILU_MUL ? n0 / 2 : n0) + box * 64, m0 + row0, buf);
        bulk_commit();
      }
    }
#elif SPLIT == 1
#pragma unroll
    for (int u = 0; u < kUnits; ++u) store_unit(u);
#else
    // Every block of the cluster parks its consumers' partial tile in its (now idle) ring, thread
    // by thread (value i of consumer thread t at i * 128 kConsumers + t); block r then sums and
    // writes every SPLIT-th unit, starting at r, reading all SPLIT blocks' partials through
    // distributed shared memory. No block leaves before the last cluster barrier, which keeps its
    // partials readable.
    __syncthreads();  // every consumer's MMAs have read the ring
    constexpr int kCt = 128 * kConsumers;
    const int ct = threadIdx.x - 128;
    float* partial = reinterpret_cast<float*>(smem_raw + (base - raw));
#pragma unroll
    for (int i = 0; i < kAcc; ++i) partial[i * kCt + ct] = acc[i];
    cluster_sync();
    auto group = [](int u, int second) { return SILU_MUL ? u + second * kUnits : 2 * u + second; };
#pragma unroll
    for (int u = 0; u < kUnits; ++u) {
      if (u % SPLIT != split) continue;
#pragma unroll
      for (int second = 0; second < 2; ++second)
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          const int i = 4 * group(u, second) + q;
          // Every block's value is loaded before any is added, so the remote loads overlap.
          float v[SPLIT];
#pragma unroll
          for (int r = 0; r < SPLIT; ++r) v[r] = cluster_load(partial + i * kCt + ct, r);
          float s = 0.f;
#pragma unroll
          for (int r = 0; r < SPLIT; ++r) s += v[r];
          acc[i] = s;
        }
      store_unit(u);
    }
    cluster_sync();
#endif
#endif  // ROPE
  }     // the block's tiles
#if TMA_STORE
  if (tid == 0) bulk_wait_all();  // the staging buffers are read before the block leaves
#endif
#if CLUSTER > 1
  // No block leaves while the other's consumers may still arrive on its mbarriers.
  cluster_sync();
#endif
}
