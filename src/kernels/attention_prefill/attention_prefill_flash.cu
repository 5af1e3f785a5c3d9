// Causal flash attention for prefill on Hopper's tensor cores, compiled by NVRTC (sm_90a) with
// the problem and config as defines:
//   T, BF16    __nv_bfloat16 and 1, or __half and 0 (q, k, v, o; softmax, accumulation fp32)
//   HEAD       head size (64, 128)
//   GROUP      query heads per KV head (grouped-query attention)
//   BLOCK_N    keys per tile (64, 128); CONSUMERS warpgroups of 64 query rows each (1, 2)
//   STAGES     K/V tiles in flight in shared memory (2-4)
//   OVERLAP    1: a tile's scores are issued with the previous tile's P V, so the softmax runs
//              while the tensor cores work (FlashAttention-3's intra-warpgroup overlap); 0: each
//              tile's two products and softmax in turn
//   MIN_BLOCKS blocks resident per SM that the registers are budgeted for (1, or 2 with one
//              consumer: two blocks side by side, one's Q and first tiles loading while the
//              other computes)
// The layout is PyTorch SDPA's: q, o [batch, q_heads, seq, HEAD]; k, v [batch, kv_heads, seq,
// HEAD]; query token i sees keys [0, i]. One block per (query head, 64 * CONSUMERS query rows,
// sequence), the rows' blocks heaviest first (causal: later rows see more keys). Warpgroup 0 is
// the producer: its 128 threads copy the Q block once and then K/V tiles by cp.async into a
// STAGES-deep ring, each stage's completion signalled on an mbarrier (full), reused once every
// consumer released it (empty). Each consumer warpgroup computes S = Q K^T by wgmma (both operands
// in shared memory), an online softmax in fp32 registers (log2 domain), then O += P V by wgmma
// with P from registers (the accumulator layout of S is the A-fragment layout of P). Shared tiles
// are rows of 128 bytes (64 head elements, head 128 as two such atoms), 16-byte chunk c of row r
// at c ^ (r % 8): the 128-byte swizzle wgmma's descriptors name.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "attune_launch.cuh"  // attune_grid_dependency

// NVRTC has no <math.h>.
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif

// BF16 (1 or 0) says which T is: the wgmma type suffix is spelled in the instruction text.
#if BF16
#define WG_T "bf16"
#else
#define WG_T "f16"
#endif
#include "attune_wgmma.cuh"  // swz, desc, cp16, mbarriers, wg_*, pin, mma_ss

namespace {

constexpr int kBlockM = 64 * CONSUMERS;
constexpr int kChunks = HEAD / 8;  // 16-byte chunks per row
constexpr int kThreads = 128 * (CONSUMERS + 1);
constexpr unsigned kQBytes = kBlockM * HEAD * 2;
constexpr unsigned kTileBytes = BLOCK_N * HEAD * 2;  // one of K or V
constexpr unsigned kStageBytes = 2 * kTileBytes;
static_assert(HEAD == 64 || HEAD == 128, "HEAD is 64 or 128");
static_assert(BLOCK_N % 64 == 0 && BLOCK_N <= 128, "BLOCK_N is 64 or 128");
static_assert(CONSUMERS == 1 || CONSUMERS == 2, "one or two consumer warpgroups");
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1
#endif
static_assert(MIN_BLOCKS == 1 || (MIN_BLOCKS == 2 && CONSUMERS == 1),
              "two blocks per SM only with one consumer warpgroup");
// The register split between the producer and the consumers (setmaxnreg), where the launch
// bound leaves the consumers short: producer x 128 + consumers x 128 x CONSUMERS within the
// block's share of the 64 K registers (384 threads at 168, or 256 threads at 128 for 2 blocks).
#if CONSUMERS == 2
#define PRODUCER_REGS 40
#define CONSUMER_REGS 232
#elif MIN_BLOCKS == 2
#define PRODUCER_REGS 40
#define CONSUMER_REGS 216
#endif

__device__ __forceinline__ void wgmma_rs_n64(float* d, const unsigned* a, unsigned long long b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32." WG_T "." WG_T
      " {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, "
      "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, p, "
      "1, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
        "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(1));
}

__device__ __forceinline__ void wgmma_rs_n128(float* d, const unsigned* a, unsigned long long b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32." WG_T "." WG_T
      " {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, "
      "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, "
      "%38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, "
      "%56, %57, %58, %59, %60, %61, %62, %63}, {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
        "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]),
        "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
        "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
        "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]),
        "+f"(d[63])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(1));
}

#undef WG_T

template <int N>
__device__ __forceinline__ void mma_rs(float* d, const unsigned* a, unsigned long long b) {
  if constexpr (N == 64)
    wgmma_rs_n64(d, a, b);
  else
    wgmma_rs_n128(d, a, b);
}

// Two fp32 as a 16-bit pair, lo in the low half (the lower k index of an A fragment).
__device__ __forceinline__ unsigned pack(float lo, float hi) {
#if BF16
  {
    __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<unsigned*>(&h);
  }
#else
  {
    __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<unsigned*>(&h);
  }
#endif
}

}  // namespace

extern "C" __global__ void __launch_bounds__(kThreads, MIN_BLOCKS)
    attn_prefill_wgmma(T* __restrict__ o, const T* __restrict__ q, const T* __restrict__ k,
                       const T* __restrict__ v, int seq) {
  attune_grid_dependency();
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  // The swizzle is applied to absolute address bits: tiles start on 1024-byte boundaries.
  const unsigned raw = static_cast<unsigned>(__cvta_generic_to_shared(smem_raw));
  const unsigned base = (raw + 1023) & ~1023u;
  const unsigned qs = base, kv0 = base + kQBytes;
  const unsigned bars = kv0 + STAGES * kStageBytes;  // q_full, full[STAGES], empty[STAGES]
  const unsigned q_full = bars;
  auto full = [&](int s) { return bars + 8 + 8 * s; };
  auto empty = [&](int s) { return bars + 8 + 8 * STAGES + 8 * s; };

  const int head = blockIdx.x, mb = gridDim.y - 1 - blockIdx.y, b = blockIdx.z;
  const int q_heads = gridDim.x, kv_head = head / GROUP;
  const int m0 = mb * kBlockM;
  const int tiles = min((seq + BLOCK_N - 1) / BLOCK_N, (m0 + kBlockM + BLOCK_N - 1) / BLOCK_N);
  const size_t qo_base = (static_cast<size_t>(b) * q_heads + head) * seq * HEAD;
  const size_t kv_base = (static_cast<size_t>(b) * (q_heads / GROUP) + kv_head) * seq * HEAD;
  const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;

  if (threadIdx.x == 0) {
    bar_init(q_full, 128);
    for (int s = 0; s < STAGES; ++s) {
      bar_init(full(s), 128);
      bar_init(empty(s), 4 * CONSUMERS);
    }
  }
  __syncthreads();

  if (wg == 0) {
#ifdef PRODUCER_REGS
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(PRODUCER_REGS));
#endif
    // The block's query rows (zeros past the sequence), then the K/V tiles in order.
    for (int i = tid; i < kBlockM * kChunks; i += 128) {
      const int r = i / kChunks, c = i % kChunks;
      const bool in = m0 + r < seq;
      cp16(qs + swz(kBlockM, r, c),
           q + qo_base + static_cast<size_t>(in ? m0 + r : 0) * HEAD + c * 8, in);
    }
    cp_arrive(q_full);
    for (int j = 0; j < tiles; ++j) {
      const int s = j % STAGES;
      if (j >= STAGES) bar_wait(empty(s), ((j / STAGES) + 1) & 1);
      const unsigned ks = kv0 + s * kStageBytes, vs = ks + kTileBytes;
#pragma unroll 4
      for (int i = tid; i < BLOCK_N * kChunks; i += 128) {
        const int r = i / kChunks, c = i % kChunks;
        const int key = j * BLOCK_N + r;
        const bool in = key < seq;
        const size_t at = kv_base + static_cast<size_t>(in ? key : 0) * HEAD + c * 8;
        cp16(ks + swz(BLOCK_N, r, c), k + at, in);
        cp16(vs + swz(BLOCK_N, r, c), v + at, in);
      }
      cp_arrive(full(s));
    }
    return;
  }

#ifdef CONSUMER_REGS
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(CONSUMER_REGS));
#endif
  const int c = wg - 1, warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
  const int row0 = m0 + c * 64 + warp * 16 + g;  // this thread's rows: row0, row0 + 8
  const int wg_first = m0 + c * 64, wg_last = wg_first + 63;
  // Tiles past this warpgroup's rows (wholly above its diagonal) are waited for and released
  // unread, so the stage accounting stays the block's.
  const int wg_tiles = min(tiles, wg_last / BLOCK_N + 1);
  const float qscale = rsqrtf(static_cast<float>(HEAD)) * 1.4426950408889634f;

  float acc[HEAD / 2];
#pragma unroll
  for (int i = 0; i < HEAD / 2; ++i) acc[i] = 0.f;
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};
  float sc[BLOCK_N / 2];
  unsigned p[BLOCK_N / 4];

  // S = Q K_j^T issued (not waited for) into sc.
  auto issue_qk = [&](int j) {
    const unsigned ks = kv0 + (j % STAGES) * kStageBytes;
    pin<BLOCK_N / 2>(sc);
    wg_fence();
#pragma unroll
    for (int kk = 0; kk < HEAD / 16; ++kk) {
      const unsigned a = qs + (kk / 4) * kBlockM * 128 + c * 64 * 128 + (kk % 4) * 32;
      const unsigned bk = ks + (kk / 4) * BLOCK_N * 128 + (kk % 4) * 32;
      mma_ss<BLOCK_N>(sc, desc(a, 16, 1024), desc(bk, 16, 1024), kk > 0);
    }
    wg_commit();
  };
  // O += P V_j issued (not waited for), P the A fragments in p.
  auto issue_pv = [&](int j) {
    const unsigned vs = kv0 + (j % STAGES) * kStageBytes + kTileBytes;
    pin<HEAD / 2>(acc);
    wg_fence();
#pragma unroll
    for (int kk = 0; kk < BLOCK_N / 16; ++kk) {
      // A fragment of keys 16kk..16kk+15: key n-tiles 2kk (k 0-7) and 2kk + 1 (k 8-15).
      const unsigned a[4] = {p[4 * kk], p[4 * kk + 1], p[4 * kk + 2], p[4 * kk + 3]};
      mma_rs<HEAD>(acc, a, desc(vs + kk * 2048, BLOCK_N * 128, 1024));
    }
    wg_commit();
  };
  // The online softmax of tile j's scores (in sc, ready): the causal mask, the new row maxima,
  // sc turned into exp2 weights, l rescaled and summed; corr is what O must be scaled by.
  auto softmax = [&](int j, float* corr) {
    const int key0 = j * BLOCK_N;
    const bool masked = key0 + BLOCK_N - 1 > wg_first;
    float mxs[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = row0 + 8 * h;
      float mx = m[h];
#pragma unroll
      for (int n = 0; n < BLOCK_N / 8; ++n)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          float x = sc[4 * n + 2 * h + e];
          if (masked && key0 + 8 * n + 2 * t + e > row) x = -INFINITY;
          sc[4 * n + 2 * h + e] = x;
          mx = fmaxf(mx, x);
        }
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
      // Key 0 is in every row's view, so mx is finite from the first tile on.
      mxs[h] = mx * qscale;
      corr[h] = exp2f(m[h] * qscale - mxs[h]);
      m[h] = mx;
      l[h] *= corr[h];
    }
#pragma unroll
    for (int n = 0; n < BLOCK_N / 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float w = exp2f(fmaf(sc[4 * n + e], qscale, -mxs[e / 2]));
        sc[4 * n + e] = w;
        l[e / 2] += w;
      }
  };
  // O rescaled to the new maxima, and the weights packed as P's A fragments.
  auto rescale_and_pack = [&](const float* corr) {
#pragma unroll
    for (int n = 0; n < HEAD / 8; ++n) {
      acc[4 * n] *= corr[0];
      acc[4 * n + 1] *= corr[0];
      acc[4 * n + 2] *= corr[1];
      acc[4 * n + 3] *= corr[1];
    }
#pragma unroll
    for (int n = 0; n < BLOCK_N / 8; ++n) {
      p[2 * n] = pack(sc[4 * n], sc[4 * n + 1]);
      p[2 * n + 1] = pack(sc[4 * n + 2], sc[4 * n + 3]);
    }
  };
  auto wait_full = [&](int j) {
    bar_wait(full(j % STAGES), (j / STAGES) & 1);
    proxy_fence();
  };
  auto release = [&](int j) {
    if (lane == 0) bar_arrive(empty(j % STAGES));
  };

  bar_wait(q_full, 0);
  float corr[2];
#if OVERLAP
  // Intra-warpgroup overlap: tile j's scores are issued with tile j - 1's P V, and the softmax
  // of tile j runs while the tensor cores do that P V.
  wait_full(0);
  issue_qk(0);
  wg_wait<0>();
  pin<BLOCK_N / 2>(sc);
  softmax(0, corr);
  rescale_and_pack(corr);
  for (int j = 1; j < wg_tiles; ++j) {
    wait_full(j);
    issue_qk(j);
    issue_pv(j - 1);
    wg_wait<1>();  // the scores of tile j; P V of tile j - 1 may still run
    pin<BLOCK_N / 2>(sc);
    softmax(j, corr);
    wg_wait<0>();
    pin<HEAD / 2>(acc);
    release(j - 1);
    rescale_and_pack(corr);
  }
  issue_pv(wg_tiles - 1);
  wg_wait<0>();
  pin<HEAD / 2>(acc);
  release(wg_tiles - 1);
#else
  for (int j = 0; j < wg_tiles; ++j) {
    wait_full(j);
    issue_qk(j);
    wg_wait<0>();
    pin<BLOCK_N / 2>(sc);
    softmax(j, corr);
    rescale_and_pack(corr);
    issue_pv(j);
    wg_wait<0>();
    pin<HEAD / 2>(acc);
    release(j);
  }
#endif
  for (int j = wg_tiles; j < tiles; ++j) {
    wait_full(j);
    release(j);
  }

  // Each row's sum over its four lanes' keys; then the rows written.
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    l[h] += __shfl_xor_sync(0xffffffffu, l[h], 1);
    l[h] += __shfl_xor_sync(0xffffffffu, l[h], 2);
  }
  const float inv[2] = {1.f / l[0], 1.f / l[1]};
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int row = row0 + 8 * h;
    if (row >= seq) continue;
    T* out = o + qo_base + static_cast<size_t>(row) * HEAD;
#pragma unroll
    for (int n = 0; n < HEAD / 8; ++n) {
      const unsigned pr = pack(acc[4 * n + 2 * h] * inv[h], acc[4 * n + 2 * h + 1] * inv[h]);
      *reinterpret_cast<unsigned*>(out + 8 * n + 2 * t) = pr;
    }
  }
}
