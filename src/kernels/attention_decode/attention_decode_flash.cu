// Split-KV flash decoding, compiled by NVRTC with the problem and config as defines:
//   T         __nv_bfloat16 or __half (q, k, v, o; softmax and accumulation in fp32)
//   HEAD      head size (64, 128, 256)
//   GROUP     query heads per KV head; Q_LEN new tokens per sequence
//   SPLITS    KV splits per (sequence, KV head): blocks that each walk a range of the cache
//   KV_TILE   keys a block loads per step; WARPS warps per block; VEC elements per load
//   Q_ROWS    query rows per block: rows are (query head of the group, token) pairs, the
//             group's GROUP * Q_LEN rows contiguous in q, so a block of all of them reads each
//             key and value once
// One block per (split, row group, sequence x KV head). A warp's lanes split the head: HEAD / VEC
// lanes (at most 32) hold one key, so a warp loads 32 / that many keys at once, each load VEC
// elements wide (16 bytes at VEC 8). Each lane group keeps its own online softmax (max, sum,
// output) over its keys in fp32; groups, warps and then (SPLITS > 1) splits are merged at the end.
// The layout: q, o [batch, q_heads, q_len, HEAD]; k, v [batch, kv_heads, kv, HEAD]. Query token i
// of Q_LEN sees cache positions [0, kv - Q_LEN + i].
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "attune_launch.cuh"  // attune_grid_dependency

// NVRTC has no <math.h>.
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif

#ifndef MMA
namespace {

constexpr int kLanesPerKey = HEAD / VEC < 32 ? HEAD / VEC : 32;
constexpr int kKeysPerWarp = 32 / kLanesPerKey;
constexpr int kChunks = HEAD / (kLanesPerKey * VEC);  // VEC-wide loads per lane per key
constexpr int kElems = kChunks * VEC;                 // head elements a lane holds
constexpr int kKeysPerLane = KV_TILE / (WARPS * kKeysPerWarp);
constexpr int kRows = GROUP * Q_LEN;
static_assert(HEAD % (kLanesPerKey * VEC) == 0, "VEC must divide HEAD / 32 lanes");
static_assert(kKeysPerLane >= 1 && KV_TILE % (WARPS * kKeysPerWarp) == 0,
              "KV_TILE must be a multiple of the keys a block loads at once");

template <int N>
struct alignas(2 * N) Pack {
  T v[N];
};
using P = Pack<VEC>;

__device__ __forceinline__ P load(const T* p) {
  return *reinterpret_cast<const P*>(p);
}

// Merges (m2, l2, acc2) into (m, l, acc): both are partial softmaxes (log2 domain) of disjoint
// keys.
__device__ __forceinline__ void merge(float& m, float& l, float* acc, float m2, float l2,
                                      const float* acc2) {
  const float mn = fmaxf(m, m2);
  if (mn == -INFINITY) return;  // neither saw a key
  const float a = exp2f(m - mn), b = exp2f(m2 - mn);
  l = l * a + l2 * b;
#pragma unroll
  for (int e = 0; e < kElems; ++e) acc[e] = acc[e] * a + acc2[e] * b;
  m = mn;
}

}  // namespace

extern "C" __global__ void __launch_bounds__(WARPS * 32)
    attn_decode_flash(T* __restrict__ o, float* __restrict__ workspace, const T* __restrict__ q,
                      const T* __restrict__ k, const T* __restrict__ v, int kv) {
  attune_grid_dependency();
  const int split = blockIdx.x, row0 = blockIdx.y * Q_ROWS, bh = blockIdx.z;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int grp = lane / kLanesPerKey, t = lane % kLanesPerKey;
  const int per_split = (kv + SPLITS - 1) / SPLITS;
  const int begin = split * per_split;
  const int end = min(kv, begin + per_split);

  // This lane's slice of each query row, pre-scaled by 1/sqrt(HEAD) and log2(e) (exp2 below).
  const float qscale = rsqrtf(static_cast<float>(HEAD)) * 1.4426950408889634f;
  float qr[Q_ROWS][kElems];
  int last[Q_ROWS];  // the last cache position each row sees; -1: a padding row
#pragma unroll
  for (int r = 0; r < Q_ROWS; ++r) {
    const int row = row0 + r;
    const bool valid = row < kRows;
    last[r] = valid ? kv - Q_LEN + row % Q_LEN : -1;
    const T* qp = q + (static_cast<size_t>(bh) * kRows + (valid ? row : 0)) * HEAD;
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      const P x = load(qp + (c * kLanesPerKey + t) * VEC);
#pragma unroll
      for (int j = 0; j < VEC; ++j)
        qr[r][c * VEC + j] = valid ? static_cast<float>(x.v[j]) * qscale : 0.f;
    }
  }

  float m[Q_ROWS], l[Q_ROWS], acc[Q_ROWS][kElems];
#pragma unroll
  for (int r = 0; r < Q_ROWS; ++r) {
    m[r] = -INFINITY;
    l[r] = 0.f;
#pragma unroll
    for (int e = 0; e < kElems; ++e) acc[r][e] = 0.f;
  }

  const size_t base = static_cast<size_t>(bh) * kv * HEAD;
  const T* kb = k + base;
  const T* vb = v + base;
  for (int tile = begin; tile < end; tile += KV_TILE) {
    // Every load of the tile first: K and V of kKeysPerLane keys in flight per lane.
    P kr[kKeysPerLane][kChunks], vr[kKeysPerLane][kChunks];
    int pos[kKeysPerLane];
#pragma unroll
    for (int n = 0; n < kKeysPerLane; ++n) {
      // A warp's keys are adjacent: each warp-wide load is 32 * VEC contiguous elements.
      pos[n] = tile + (n * WARPS + warp) * kKeysPerWarp + grp;
      const bool in = pos[n] < end;
      const size_t at = static_cast<size_t>(in ? pos[n] : begin) * HEAD;
#pragma unroll
      for (int c = 0; c < kChunks; ++c) {
        const int col = (c * kLanesPerKey + t) * VEC;
        kr[n][c] = load(kb + at + col);
        vr[n][c] = load(vb + at + col);
      }
    }
    float s[Q_ROWS][kKeysPerLane];
#pragma unroll
    for (int n = 0; n < kKeysPerLane; ++n) {
      float kf[kElems];
#pragma unroll
      for (int c = 0; c < kChunks; ++c)
#pragma unroll
        for (int j = 0; j < VEC; ++j) kf[c * VEC + j] = static_cast<float>(kr[n][c].v[j]);
#pragma unroll
      for (int r = 0; r < Q_ROWS; ++r) {
        float d = 0.f;
#pragma unroll
        for (int e = 0; e < kElems; ++e) d = fmaf(qr[r][e], kf[e], d);
#pragma unroll
        for (int off = kLanesPerKey / 2; off > 0; off >>= 1)
          d += __shfl_xor_sync(0xffffffffu, d, off);
        s[r][n] = pos[n] < end && pos[n] <= last[r] ? d : -INFINITY;
      }
    }
#pragma unroll
    for (int r = 0; r < Q_ROWS; ++r) {
      float mx = m[r];
#pragma unroll
      for (int n = 0; n < kKeysPerLane; ++n) mx = fmaxf(mx, s[r][n]);
      if (mx == -INFINITY) continue;  // no key of this tile for this row yet
      const float corr = exp2f(m[r] - mx);
      l[r] *= corr;
#pragma unroll
      for (int e = 0; e < kElems; ++e) acc[r][e] *= corr;
#pragma unroll
      for (int n = 0; n < kKeysPerLane; ++n) {
        const float p = exp2f(s[r][n] - mx);
        l[r] += p;
#pragma unroll
        for (int c = 0; c < kChunks; ++c)
#pragma unroll
          for (int j = 0; j < VEC; ++j)
            acc[r][c * VEC + j] = fmaf(p, static_cast<float>(vr[n][c].v[j]), acc[r][c * VEC + j]);
      }
      m[r] = mx;
    }
  }

  // The lane groups of a warp hold the same head slice of different keys: merge them.
#pragma unroll
  for (int off = kLanesPerKey; off < 32; off <<= 1) {
#pragma unroll
    for (int r = 0; r < Q_ROWS; ++r) {
      float acc2[kElems];
#pragma unroll
      for (int e = 0; e < kElems; ++e) acc2[e] = __shfl_xor_sync(0xffffffffu, acc[r][e], off);
      const float m2 = __shfl_xor_sync(0xffffffffu, m[r], off);
      const float l2 = __shfl_xor_sync(0xffffffffu, l[r], off);
      merge(m[r], l[r], acc[r], m2, l2, acc2);
    }
  }

  // Then the warps: each scales its output to the block's max and adds it into shared memory.
  __shared__ float wm[WARPS][Q_ROWS], wl[WARPS][Q_ROWS];
  __shared__ float bm[Q_ROWS], bl[Q_ROWS];
  __shared__ float out[Q_ROWS][HEAD];
  for (int i = threadIdx.x; i < Q_ROWS * HEAD; i += WARPS * 32) (&out[0][0])[i] = 0.f;
  if (lane == 0) {
#pragma unroll
    for (int r = 0; r < Q_ROWS; ++r) {
      wm[warp][r] = m[r];
      wl[warp][r] = l[r];
    }
  }
  __syncthreads();
  if (threadIdx.x < Q_ROWS) {
    const int r = threadIdx.x;
    float mx = -INFINITY, sum = 0.f;
    for (int w = 0; w < WARPS; ++w) mx = fmaxf(mx, wm[w][r]);
    if (mx != -INFINITY)
      for (int w = 0; w < WARPS; ++w) sum += wl[w][r] * exp2f(wm[w][r] - mx);
    bm[r] = mx;
    bl[r] = sum;
  }
  __syncthreads();
  if (grp == 0) {
#pragma unroll
    for (int r = 0; r < Q_ROWS; ++r) {
      if (m[r] == -INFINITY) continue;
      const float scale = exp2f(m[r] - bm[r]);
#pragma unroll
      for (int c = 0; c < kChunks; ++c)
#pragma unroll
        for (int j = 0; j < VEC; ++j)
          atomicAdd(&out[r][(c * kLanesPerKey + t) * VEC + j], acc[r][c * VEC + j] * scale);
    }
  }
  __syncthreads();

  const size_t orow0 = static_cast<size_t>(bh) * kRows + row0;
  const int rows_here = min(Q_ROWS, kRows - row0);
  for (int i = threadIdx.x; i < rows_here * HEAD; i += WARPS * 32) {
    const int r = i / HEAD, d = i % HEAD;
#if SPLITS == 1
    o[(orow0 + r) * HEAD + d] = static_cast<T>(out[r][d] / bl[r]);
#else
    // The split's unnormalized rows, then its (max, sum) per row: attn_decode_combine's input.
    const size_t rows = static_cast<size_t>(gridDim.z) * kRows;
    workspace[(split * rows + orow0 + r) * HEAD + d] = out[r][d];
    if (d == 0) {
      float* ml = workspace + SPLITS * rows * HEAD;
      ml[(split * rows + orow0 + r) * 2] = bm[r];
      ml[(split * rows + orow0 + r) * 2 + 1] = bl[r];
    }
#endif
  }
}

#endif  // !MMA

#ifdef MMA
// The tensor-core form (MMA defined; KV_TILE, WARPS, STAGES; MTILES, 1 or 2, m16 tiles of rows per
// block: 2 puts the 32 rows of a GQA group (e.g. 8 query heads x 4 tokens) on every K/V tile a
// warp loads, instead of two blocks loading each tile once per 16 rows; CLUSTER 1: the SPLITS
// blocks of a row group run as one thread block cluster and merge their partials through
// distributed shared memory, in the same launch, instead of through the workspace and
// attn_decode_combine): a block per (split, 16 * MTILES rows, sequence x KV head) and each warp
// its own stream of KV_TILE-key tiles of the split (tiles w, w + WARPS,
// ...), copied by cp.async into the warp's STAGES shared-memory buffers, STAGES - 1 tiles ahead of
// the math, so a warp needs no block barrier until the end. S = Q K^T and O += P V by
// mma.m16n8k16 (fp32 accumulators), each K and V fragment loaded once for the MTILES row tiles:
// the rows are the group's (query head, token) pairs, rows past them zero; ldmatrix reads Q and K,
// ldmatrix.trans reads V. Rows of 16-byte chunks are swizzled (chunk c of row r at c ^ (r % 8)) so
// ldmatrix's eight rows hit distinct banks.
#if CLUSTER
#define KSPLIT SPLITS
#endif
#include "attune_cluster.cuh"  // KSPLIT (1 unless CLUSTER), CLUSTER_DIMS, cluster_sync, cluster_load

#ifndef MTILES
#define MTILES 1
#endif

namespace {

constexpr int kRows = GROUP * Q_LEN;
constexpr int kBlockRows = 16 * MTILES;  // query rows per block
constexpr int kChunks = HEAD / 8;        // 16-byte chunks per row
constexpr int kNt = KV_TILE / 8;         // key n-tiles of S per tile
constexpr int kTileElems = KV_TILE * HEAD;
static_assert(KV_TILE % 16 == 0 && HEAD % 64 == 0, "KV_TILE of 16s, HEAD of 64s");
static_assert(MTILES == 1 || MTILES == 2, "one or two m16 tiles of rows per block");
// A warp's fp32 output rows go over its own stage buffers at the end.
static_assert(kBlockRows <= STAGES * KV_TILE, "a warp's output rows fit its stage buffers");

template <class A, class B>
struct Same {
  static constexpr bool value = false;
};
template <class A>
struct Same<A, A> {
  static constexpr bool value = true;
};
constexpr bool kBf16 = Same<T, __nv_bfloat16>::value;

__device__ __forceinline__ unsigned swz(int row, int chunk) {
  return static_cast<unsigned>((row * kChunks + (chunk ^ (row & 7))) * 16);
}

__device__ __forceinline__ void ldsm4(unsigned addr, unsigned& r0, unsigned& r1, unsigned& r2,
                                      unsigned& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(addr));
}
__device__ __forceinline__ void ldsm4t(unsigned addr, unsigned& r0, unsigned& r1, unsigned& r2,
                                       unsigned& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(addr));
}

__device__ __forceinline__ void mma(float* d, const unsigned* a, unsigned b0, unsigned b1) {
  if constexpr (kBf16) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

// Two fp32 as a 16-bit pair, lo in the low half (the lower k index of an mma fragment).
__device__ __forceinline__ unsigned pack(float lo, float hi) {
  if constexpr (kBf16) {
    __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<unsigned*>(&h);
  } else {
    __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<unsigned*>(&h);
  }
}

__device__ __forceinline__ void cp16(unsigned dst, const void* src, bool in) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
               "r"(in ? 16 : 0));
}
__device__ __forceinline__ void cp_commit() {
  asm volatile("cp.async.commit_group;\n" ::);
}
template <int N>
__device__ __forceinline__ void cp_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

}  // namespace

extern "C" __global__ void __launch_bounds__(WARPS * 32) CLUSTER_DIMS
    attn_decode_mma(T* __restrict__ o, float* __restrict__ workspace, const T* __restrict__ q,
                    const T* __restrict__ k, const T* __restrict__ v, int kv) {
  attune_grid_dependency();
  extern __shared__ __align__(128) unsigned char smem[];
  const int split = blockIdx.x, row0 = blockIdx.y * kBlockRows, bh = blockIdx.z;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;
  const int per_split = (kv + SPLITS - 1) / SPLITS;
  const int begin = split * per_split;
  const int end = min(kv, begin + per_split);

  const unsigned qs = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  const unsigned ws = qs + kBlockRows * HEAD * 2 + warp * (STAGES * 2 * kTileElems * 2);
  // The block's query rows (zeros past the group's).
  for (int i = threadIdx.x; i < kBlockRows * kChunks; i += WARPS * 32) {
    const int r = i / kChunks, c = i % kChunks;
    const bool in = row0 + r < kRows;
    const T* src = q + (static_cast<size_t>(bh) * kRows + (in ? row0 + r : 0)) * HEAD + c * 8;
    cp16(qs + swz(r, c), src, in);
  }
  cp_commit();

  const size_t base = static_cast<size_t>(bh) * kv * HEAD;
  const T* kb = k + base;
  const T* vb = v + base;
  const int tiles = end > begin ? (end - begin + KV_TILE - 1) / KV_TILE : 0;
  const int mine = tiles > warp ? (tiles - warp + WARPS - 1) / WARPS : 0;
  // Issues the copies of the warp's i-th tile into stage i % STAGES (keys past the split: zeros).
  auto issue = [&](int i) {
    if (i < mine) {
      const int key0 = begin + (warp + i * WARPS) * KV_TILE;
      const unsigned ks = ws + (i % STAGES) * (2 * kTileElems * 2), vs = ks + kTileElems * 2;
#pragma unroll
      for (int j = 0; j < KV_TILE * kChunks / 32; ++j) {
        const int idx = j * 32 + lane, r = idx / kChunks, c = idx % kChunks;
        const bool in = key0 + r < end;
        const size_t at = static_cast<size_t>(in ? key0 + r : begin) * HEAD + c * 8;
        cp16(ks + swz(r, c), kb + at, in);
        cp16(vs + swz(r, c), vb + at, in);
      }
    }
    cp_commit();
  };
#pragma unroll
  for (int i = 0; i < STAGES - 1; ++i) issue(i);
  cp_wait<STAGES - 1>();  // the query rows
  __syncthreads();

  // The last cache position each of this lane's rows (g, g + 8 of each row tile) sees.
  int last[MTILES][2];
  float m[MTILES][2], l[MTILES][2];
  float acc[MTILES][HEAD / 8][4];
#pragma unroll
  for (int mt = 0; mt < MTILES; ++mt) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = row0 + 16 * mt + g + 8 * h;
      last[mt][h] = row < kRows ? kv - Q_LEN + row % Q_LEN : kv - 1;
      m[mt][h] = -INFINITY;
      l[mt][h] = 0.f;
    }
#pragma unroll
    for (int d = 0; d < HEAD / 8; ++d)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[mt][d][e] = 0.f;
  }
  const float qscale = rsqrtf(static_cast<float>(HEAD)) * 1.4426950408889634f;

  for (int i = 0; i < mine; ++i) {
    cp_wait<STAGES - 2>();
    __syncwarp();
    issue(i + STAGES - 1);
    const unsigned ks = ws + (i % STAGES) * (2 * kTileElems * 2), vs = ks + kTileElems * 2;
    const int key0 = begin + (warp + i * WARPS) * KV_TILE;

    float s[MTILES][kNt][4];
#pragma unroll
    for (int mt = 0; mt < MTILES; ++mt)
#pragma unroll
      for (int j = 0; j < kNt; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) s[mt][j][e] = 0.f;
#pragma unroll
    for (int kk = 0; kk < HEAD / 16; ++kk) {
      unsigned a[MTILES][4];
#pragma unroll
      for (int mt = 0; mt < MTILES; ++mt)
        ldsm4(qs + swz(16 * mt + lane % 16, 2 * kk + lane / 16), a[mt][0], a[mt][1], a[mt][2],
              a[mt][3]);
#pragma unroll
      for (int j = 0; j < kNt; j += 2) {
        unsigned b[4];
        ldsm4(ks + swz(8 * j + (lane & 7) + ((lane >> 4) << 3), 2 * kk + ((lane >> 3) & 1)), b[0],
              b[1], b[2], b[3]);
#pragma unroll
        for (int mt = 0; mt < MTILES; ++mt) {
          mma(s[mt][j], a[mt], b[0], b[1]);
          mma(s[mt][j + 1], a[mt], b[2], b[3]);
        }
      }
    }

    // Online softmax of rows g (s[.][.][0..1]) and g + 8 (s[.][.][2..3]) of each row tile in the
    // log2 domain.
#pragma unroll
    for (int mt = 0; mt < MTILES; ++mt) {
      float corr[2], ms[2];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float mx = m[mt][h];
#pragma unroll
        for (int j = 0; j < kNt; ++j)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const int pos = key0 + 8 * j + 2 * t + e;
            float x = s[mt][j][2 * h + e] * qscale;
            x = pos < end && pos <= last[mt][h] ? x : -INFINITY;
            s[mt][j][2 * h + e] = x;
            mx = fmaxf(mx, x);
          }
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        ms[h] = mx == -INFINITY ? 0.f : mx;  // no key yet: every weight below is 0
        corr[h] = exp2f(m[mt][h] - ms[h]);
        m[mt][h] = mx;
        l[mt][h] *= corr[h];
      }
#pragma unroll
      for (int d = 0; d < HEAD / 8; ++d) {
        acc[mt][d][0] *= corr[0];
        acc[mt][d][1] *= corr[0];
        acc[mt][d][2] *= corr[1];
        acc[mt][d][3] *= corr[1];
      }
#pragma unroll
      for (int j = 0; j < kNt; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const float p = exp2f(s[mt][j][e] - ms[e / 2]);
          s[mt][j][e] = p;
          l[mt][e / 2] += p;
        }
    }

    // O += P V, 16 keys per k-step: P's fragments are S's accumulators of two key n-tiles.
#pragma unroll
    for (int kk = 0; kk < KV_TILE / 16; ++kk) {
      unsigned a[MTILES][4];
#pragma unroll
      for (int mt = 0; mt < MTILES; ++mt) {
        a[mt][0] = pack(s[mt][2 * kk][0], s[mt][2 * kk][1]);
        a[mt][1] = pack(s[mt][2 * kk][2], s[mt][2 * kk][3]);
        a[mt][2] = pack(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
        a[mt][3] = pack(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
      }
#pragma unroll
      for (int d = 0; d < HEAD / 8; d += 2) {
        unsigned b[4];
        ldsm4t(vs + swz(16 * kk + (lane & 7) + (((lane >> 3) & 1) << 3), d + (lane >> 4)), b[0],
               b[1], b[2], b[3]);
#pragma unroll
        for (int mt = 0; mt < MTILES; ++mt) {
          mma(acc[mt][d], a[mt], b[0], b[1]);
          mma(acc[mt][d + 1], a[mt], b[2], b[3]);
        }
      }
    }
  }
  cp_wait<0>();
  __syncwarp();

  // Each row's sum over the warp's keys: the four lanes of a row hold disjoint keys.
#pragma unroll
  for (int mt = 0; mt < MTILES; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      l[mt][h] += __shfl_xor_sync(0xffffffffu, l[mt][h], 1);
      l[mt][h] += __shfl_xor_sync(0xffffffffu, l[mt][h], 2);
    }
  // The warps merged: each writes its (max, sum) per row and its output rows (fp32, over its own
  // stage buffers), then the block weighs them.
  __shared__ float wm[WARPS][kBlockRows], wl[WARPS][kBlockRows], wgt[WARPS][kBlockRows],
      bl[kBlockRows], bm[kBlockRows];
  if (t == 0) {
#pragma unroll
    for (int mt = 0; mt < MTILES; ++mt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        wm[warp][16 * mt + g + 8 * h] = m[mt][h];
        wl[warp][16 * mt + g + 8 * h] = l[mt][h];
      }
  }
  float* wo =
      reinterpret_cast<float*>(smem + kBlockRows * HEAD * 2) + warp * (STAGES * 2 * kTileElems / 2);
#pragma unroll
  for (int mt = 0; mt < MTILES; ++mt)
#pragma unroll
    for (int d = 0; d < HEAD / 8; ++d)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        wo[(16 * mt + g + 8 * (e / 2)) * HEAD + 8 * d + 2 * t + e % 2] = acc[mt][d][e];
  __syncthreads();
  if (threadIdx.x < kBlockRows) {
    const int r = threadIdx.x;
    float mx = -INFINITY, sum = 0.f;
    for (int w = 0; w < WARPS; ++w) mx = fmaxf(mx, wm[w][r]);
    for (int w = 0; w < WARPS; ++w) {
      const float x = wm[w][r] == -INFINITY ? 0.f : exp2f(wm[w][r] - mx);
      wgt[w][r] = x;
      sum += wl[w][r] * x;
    }
    bm[r] = mx;
    bl[r] = sum;
  }
  __syncthreads();
  (void)bm;  // read only by the split partials below

  const size_t orow0 = static_cast<size_t>(bh) * kRows + row0;
  const int rows_here = min(kBlockRows, kRows - row0);
  for (int i = threadIdx.x; i < rows_here * HEAD; i += WARPS * 32) {
    const int r = i / HEAD, d = i % HEAD;
    float x = 0.f;
#pragma unroll
    for (int w = 0; w < WARPS; ++w)
      x += wgt[w][r] *
           reinterpret_cast<const float*>(
               smem + kBlockRows * HEAD * 2)[w * (STAGES * 2 * kTileElems / 2) + r * HEAD + d];
#if SPLITS == 1
    o[(orow0 + r) * HEAD + d] = static_cast<T>(x / bl[r]);
#elif CLUSTER
    // In place over warp 0's output: element i of every warp is read by this thread alone.
    reinterpret_cast<float*>(smem + kBlockRows * HEAD * 2)[r * HEAD + d] = x;
#else
    const size_t rows = static_cast<size_t>(gridDim.z) * kRows;
    workspace[(split * rows + orow0 + r) * HEAD + d] = x;
    if (d == 0) {
      float* ml = workspace + SPLITS * rows * HEAD;
      ml[(split * rows + orow0 + r) * 2] = bm[r];
      ml[(split * rows + orow0 + r) * 2 + 1] = bl[r];
    }
#endif
  }
#if CLUSTER
  // Every split's partial rows, maxima and sums visible to the cluster; block `split` (its rank:
  // the cluster spans grid.x) then writes every SPLITS-th output element, merged as
  // attn_decode_combine merges them, and no block leaves while another still reads its memory.
  cluster_sync();
  const float* part = reinterpret_cast<const float*>(smem + kBlockRows * HEAD * 2);
  for (int i = split * WARPS * 32 + threadIdx.x; i < rows_here * HEAD; i += SPLITS * WARPS * 32) {
    const int r = i / HEAD, d = i % HEAD;
    float mx = -INFINITY;
#pragma unroll
    for (int sp = 0; sp < SPLITS; ++sp) mx = fmaxf(mx, cluster_load(&bm[r], sp));
    float sum = 0.f, val = 0.f;
#pragma unroll
    for (int sp = 0; sp < SPLITS; ++sp) {
      const float ms = cluster_load(&bm[r], sp);
      if (ms == -INFINITY) continue;  // a split past the keys this row sees
      const float w = exp2f(ms - mx);
      sum += cluster_load(&bl[r], sp) * w;
      val += cluster_load(&part[r * HEAD + d], sp) * w;
    }
    o[(orow0 + r) * HEAD + d] = static_cast<T>(val / sum);
  }
  cluster_sync();
#else
  (void)workspace;
#endif
}
#endif  // MMA

// The splits of each output row merged: o = sum_s 2^(m_s - M) acc_s / sum_s 2^(m_s - M) l_s.
// COMBINE_ROWS warps per block, a warp per row, the lanes over the head.
extern "C" __global__ void __launch_bounds__(COMBINE_ROWS * 32)
    attn_decode_combine(T* __restrict__ o, const float* __restrict__ workspace, int rows) {
  attune_grid_dependency();
  const int row = blockIdx.x * COMBINE_ROWS + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (row >= rows) return;
  const float* ml = workspace + static_cast<size_t>(SPLITS) * rows * HEAD;
  float mx = -INFINITY;
#pragma unroll
  for (int s = 0; s < SPLITS; ++s) mx = fmaxf(mx, ml[(static_cast<size_t>(s) * rows + row) * 2]);
  float sum = 0.f, acc[HEAD / 32] = {};
#pragma unroll
  for (int s = 0; s < SPLITS; ++s) {
    const size_t at = static_cast<size_t>(s) * rows + row;
    const float ms = ml[at * 2];
    if (ms == -INFINITY) continue;  // a split past the keys this row sees
    const float w = exp2f(ms - mx);
    sum += ml[at * 2 + 1] * w;
#pragma unroll
    for (int e = 0; e < HEAD / 32; ++e) acc[e] += workspace[at * HEAD + e * 32 + lane] * w;
  }
  const float inv = 1.f / sum;
#pragma unroll
  for (int e = 0; e < HEAD / 32; ++e)
    o[static_cast<size_t>(row) * HEAD + e * 32 + lane] = static_cast<T>(acc[e] * inv);
}
