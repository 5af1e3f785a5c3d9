"""bench/read_patterns: how fast a decode-attention-shaped read of K and V can be on this GPU, by
how it is issued and over how many blocks (issue 16's open question: at batch 16-32, KV 16384,
cuDNN's SDPA reads K and V 3-4% faster than attune's single-split mma kernel).

Every kernel reads two buffers (K and V, BYTES each, 1 GiB in all by default, 16 x 8 KV heads x
16384 keys x 128 x bf16) and does nothing else of note (a few smem words summed into one output
word per block, so nothing is optimised away). What varies is what attune's decode kernel could
change:
- how a warp issues its reads: `cp16_wWsS` (cp.async of 16 bytes per lane into S shared-memory
  buffers of a K and a V tile per warp, W warps each streaming their own 16-key tiles:
  attn_decode_mma's loop without the math; `_spinN`: N dependent FMAs per tile stand in for the
  math, during which the warp issues nothing), `bulk_w8s3` (one cp.async.bulk of each 4 KB K and V
  tile per warp into the stage, completing on an mbarrier), `ldg_w8` (16-byte loads to registers);
- how the work is cut: `units` (one block per (sequence, KV head) region: 128 blocks, as
  splits=1 at batch 16), `split2` (2 blocks per region), `even` (the K and V cut into exactly as
  many equal contiguous ranges as the GPU has SMs, the balance a stream-K decode would have).

- how many blocks a small read needs: `evenxN` (the `even` cut over N blocks per SM).

Prints a Markdown table (median of SAMPLES runs; GB/s = bytes of K and V / time) and, with --sdpa,
cuDNN's SDPA on the same K and V (batch units / 8, 32 query heads, 8 KV heads, head 128) by
bench/sdpa_timing's deploy regime. --regime events (the default) times one launch between CUDA
events; --regime deploy times each kernel as attune's deploy regime and bench/sdpa_timing do (what
the launch adds to a CUDA graph behind another kernel, L2 flushed before each replay), the regime
attune's sweep rows and issue 16's targets are measured in: the bare-read ceiling of a decode cell.

usage: python3 bench/read_patterns.py [--units 128] [--keys 16384] [--samples 30] [--sdpa]
                                      [--regime events|deploy] [--kernels cp16_w8s3,bulk_w8s3]
"""
import argparse
import statistics

import cupy as cp

SRC = r"""
#include <cuda_bf16.h>

__device__ __forceinline__ unsigned smem_addr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void cp16(unsigned dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src));
}
__device__ __forceinline__ void commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void wait_groups() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

// The block's range of tiles: for layout 0, region b of gridDim.x equal regions; for layout 1,
// tiles [b * total / grid, (b + 1) * total / grid) of the whole buffer (the same when the grid
// divides it).
__device__ __forceinline__ void block_range(long long total_tiles, int layout, long long* begin,
                                            long long* end) {
  if (layout == 0) {
    const long long per = total_tiles / gridDim.x;
    *begin = blockIdx.x * per;
    *end = *begin + per;
  } else {
    *begin = total_tiles * blockIdx.x / gridDim.x;
    *end = total_tiles * (blockIdx.x + 1) / gridDim.x;
  }
}

#define TILE 4096  // 16 keys x 128 x bf16

// A warp's share of the block's tiles (warp, warp + W, ...) and its STAGES stage buffers of a K
// and a V tile.
template <int W, int STAGES>
struct WarpStream {
  int warp, lane;
  long long begin, mine;
  unsigned char* ws;
  unsigned wsa;
  __device__ WarpStream(long long total_tiles, int layout, unsigned char* smem)
      : warp(threadIdx.x / 32), lane(threadIdx.x % 32) {
    long long end;
    block_range(total_tiles, layout, &begin, &end);
    const long long tiles = end - begin;
    mine = tiles > warp ? (tiles - warp + W - 1) / W : 0;
    ws = smem + warp * STAGES * 2 * TILE;
    wsa = smem_addr(ws);
  }
  __device__ long long tile(long long i) const { return begin + warp + i * W; }
};

// W warps, each streaming its own tiles (w, w + W, ...) of the block's range by cp.async into
// STAGES buffers of a K and a V tile, STAGES - 1 ahead; SPIN dependent FMAs per tile stand in
// for the math of attention (during which the warp issues nothing).
template <int W, int STAGES, int SPIN>
__device__ void cp16_body(const char* k, const char* v, float* out, long long total_tiles,
                          int layout) {
  extern __shared__ __align__(128) unsigned char smem[];
  const WarpStream<W, STAGES> st(total_tiles, layout, smem);
  const int warp = st.warp, lane = st.lane;
  const long long mine = st.mine;
  unsigned char* ws = st.ws;
  const unsigned wsa = st.wsa;
  auto issue = [&](long long i) {
    if (i < mine) {
      const long long t = st.tile(i);
      const char* kt = k + t * TILE;
      const char* vt = v + t * TILE;
      const unsigned ks = wsa + (i % STAGES) * 2 * TILE, vs = ks + TILE;
#pragma unroll
      for (int j = 0; j < TILE / 16 / 32; ++j) {
        const int off = (j * 32 + lane) * 16;
        cp16(ks + off, kt + off);
        cp16(vs + off, vt + off);
      }
    }
    commit();
  };
  for (int i = 0; i < STAGES - 1; ++i) issue(i);
  float acc = 0.f;
  for (long long i = 0; i < mine; ++i) {
    wait_groups<STAGES - 2>();
    __syncwarp();
    issue(i + STAGES - 1);
    const float* s = reinterpret_cast<const float*>(ws + (i % STAGES) * 2 * TILE);
    acc += s[lane] + s[TILE / 4 + lane];
#pragma unroll 1
    for (int n = 0; n < SPIN; ++n) acc = fmaf(acc, 0.999f, 0.5f);
    __syncwarp();
  }
  wait_groups<0>();
  if (acc == 12345.f) out[blockIdx.x * W + warp] = acc;
}

#define CP16(NAME, W, STAGES, SPIN)                                                        \
  extern "C" __global__ void __launch_bounds__(W * 32)                                     \
      NAME(const char* k, const char* v, float* out, long long total, int layout) {        \
    cp16_body<W, STAGES, SPIN>(k, v, out, total, layout);                                  \
  }
CP16(cp16_w8s3, 8, 3, 0)
CP16(cp16_w8s2, 8, 2, 0)
CP16(cp16_w4s6, 4, 6, 0)
CP16(cp16_w8s3_spin100, 8, 3, 100)
CP16(cp16_w4s6_spin100, 4, 6, 100)
CP16(cp16_w8s3_spin300, 8, 3, 300)
CP16(cp16_w4s6_spin300, 4, 6, 300)

// The same stream by one cp.async.bulk of each K and V tile per warp, completing on an mbarrier.
template <int W, int STAGES>
__device__ void bulk_body(const char* k, const char* v, float* out, long long total_tiles,
                          int layout) {
  extern __shared__ __align__(128) unsigned char smem[];
  __shared__ __align__(8) unsigned long long bars[W][STAGES];
  const WarpStream<W, STAGES> st(total_tiles, layout, smem);
  const int warp = st.warp, lane = st.lane;
  const long long mine = st.mine;
  unsigned char* ws = st.ws;
  const unsigned wsa = st.wsa;
  if (lane == 0)
    for (int s = 0; s < STAGES; ++s)
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(smem_addr(&bars[warp][s])));
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::);
  __syncwarp();
  auto issue = [&](long long i) {
    if (i < mine && lane == 0) {
      const long long t = st.tile(i);
      const unsigned bar = smem_addr(&bars[warp][i % STAGES]);
      const unsigned ks = wsa + (i % STAGES) * 2 * TILE, vs = ks + TILE;
      asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar),
                   "r"(2 * TILE));
      asm volatile(
          "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, "
          "[%3];\n" ::"r"(ks), "l"(k + t * TILE), "r"(TILE), "r"(bar)
          : "memory");
      asm volatile(
          "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, "
          "[%3];\n" ::"r"(vs), "l"(v + t * TILE), "r"(TILE), "r"(bar)
          : "memory");
    }
  };
  for (int i = 0; i < STAGES - 1; ++i) issue(i);
  float acc = 0.f;
  for (long long i = 0; i < mine; ++i) {
    issue(i + STAGES - 1);
    const unsigned bar = smem_addr(&bars[warp][i % STAGES]);
    const unsigned parity = static_cast<unsigned>((i / STAGES) & 1);
    asm volatile(
        "{\n .reg .pred p;\n W: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
        " @!p bra W;\n}\n" ::"r"(bar),
        "r"(parity)
        : "memory");
    const float* s = reinterpret_cast<const float*>(ws + (i % STAGES) * 2 * TILE);
    acc += s[lane] + s[TILE / 4 + lane];
    __syncwarp();
  }
  if (acc == 12345.f) out[blockIdx.x * W + warp] = acc;
}

extern "C" __global__ void __launch_bounds__(256) bulk_w8s3(const char* k, const char* v,
                                                            float* out, long long total,
                                                            int layout) {
  bulk_body<8, 3>(k, v, out, total, layout);
}

// 16-byte loads straight to registers, 4 K and 4 V loads in flight per thread.
extern "C" __global__ void __launch_bounds__(256) ldg_w8(const char* k, const char* v,
                                                         float* out, long long total,
                                                         int layout) {
  long long begin, end;
  block_range(total, layout, &begin, &end);
  const int4* kb = reinterpret_cast<const int4*>(k + begin * TILE);
  const int4* vb = reinterpret_cast<const int4*>(v + begin * TILE);
  const long long n = (end - begin) * TILE / 16;
  int acc = 0;
  long long i = threadIdx.x;
  for (; i + 3 * 256 < n; i += 4 * 256) {
    int4 a[8];
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      a[2 * u] = __ldcs(kb + i + u * 256);
      a[2 * u + 1] = __ldcs(vb + i + u * 256);
    }
#pragma unroll
    for (int u = 0; u < 8; ++u) acc ^= a[u].x ^ a[u].w;
  }
  for (; i < n; i += 256) acc ^= __ldcs(kb + i).x ^ __ldcs(vb + i).y;
  if (acc == 12345) out[blockIdx.x] = static_cast<float>(acc);
}
"""

KERNELS = {  # name: (warps, stages of a K and a V tile per warp in shared memory; 0: none)
    "cp16_w8s3": (8, 3), "cp16_w8s2": (8, 2), "cp16_w4s6": (4, 6),
    "cp16_w8s3_spin100": (8, 3), "cp16_w4s6_spin100": (4, 6),
    "cp16_w8s3_spin300": (8, 3), "cp16_w4s6_spin300": (4, 6),
    "bulk_w8s3": (8, 3), "ldg_w8": (8, 0),
}
TILE = 4096


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--units", type=int, default=128, help="(sequence, KV head) regions")
    ap.add_argument("--keys", type=int, default=16384, help="keys per region (head 128, bf16)")
    ap.add_argument("--samples", type=int, default=30)
    ap.add_argument("--sdpa", action="store_true", help="also time cuDNN's SDPA on the same K, V")
    ap.add_argument("--regime", choices=("events", "deploy"), default="events",
                    help="events: one launch between CUDA events; deploy: attune's deploy regime")
    ap.add_argument("--kernels", default="", help="comma-separated subset of the kernels (all)")
    a = ap.parse_args()
    kernels = a.kernels.split(",") if a.kernels else list(KERNELS)
    unknown = [n for n in kernels if n not in KERNELS]
    if unknown:
        ap.error(f"--kernels: unknown {', '.join(unknown)} (known: {', '.join(KERNELS)})")
    deploy = None
    if a.regime == "deploy" or a.sdpa:
        import torch
        from sdpa_timing import deploy_us as deploy

    dev = cp.cuda.Device()
    sms = dev.attributes["MultiProcessorCount"]
    name = cp.cuda.runtime.getDeviceProperties(dev.id)["name"].decode()
    region = a.keys * 128 * 2
    nbytes = a.units * region
    tiles = nbytes // TILE
    k = cp.ones(nbytes // 2, dtype=cp.float16)
    v = cp.ones(nbytes // 2, dtype=cp.float16)
    out = cp.zeros(1 << 20, dtype=cp.float32)
    mod = cp.RawModule(code=SRC, options=("--std=c++17",))

    layouts = [(f"units ({a.units} blocks)", 0, a.units),
               (f"split2 ({a.units * 2} blocks)", 0, a.units * 2), (f"even ({sms} blocks)", 1, sms)]
    if a.regime == "deploy":  # small reads: more blocks than SMs
        layouts += [(f"evenx{n} ({n * sms} blocks)", 1, n * sms) for n in (2, 4)]

    start, stop = cp.cuda.Event(), cp.cuda.Event()
    print(f"# bench/read_patterns on {name} ({sms} SMs): K and V {nbytes >> 20} MiB each "
          f"({a.units} regions x {a.keys} keys x 128 x 2 bytes), median of {a.samples}, "
          f"{a.regime} regime\n")
    print("| kernel | cut | us | GB/s |")
    print("|---|---|---:|---:|")
    for kname in kernels:
        warps, stages = KERNELS[kname]
        fn = mod.get_function(kname)
        smem = stages * 2 * TILE * warps
        if smem > 48 * 1024:
            fn.max_dynamic_shared_size_bytes = smem
        for lname, layout, grid in layouts:
            args = (k, v, out, cp.int64(tiles), cp.int32(layout))
            if a.regime == "deploy":
                def launch(fn=fn, grid=grid, warps=warps, args=args, smem=smem):
                    # On the stream torch captures into (deploy_us builds CUDA graphs).
                    with cp.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream):
                        fn((grid,), (warps * 32,), args, shared_mem=smem)
                us = deploy(launch, samples=a.samples)
                print(f"| {kname} | {lname} | {us:.2f} | {2 * nbytes / us / 1e3:.0f} |", flush=True)
                continue
            for _ in range(3):
                fn((grid,), (warps * 32,), args, shared_mem=smem)
            ts = []
            for _ in range(a.samples):
                start.record()
                fn((grid,), (warps * 32,), args, shared_mem=smem)
                stop.record()
                stop.synchronize()
                ts.append(cp.cuda.get_elapsed_time(start, stop) * 1000.0)
            us = statistics.median(ts)
            print(f"| {kname} | {lname} | {us:.2f} | {2 * nbytes / us / 1e3:.0f} |", flush=True)

    if a.sdpa:
        from torch.nn.attention import SDPBackend, sdpa_kernel
        from torch.nn.functional import scaled_dot_product_attention as sdpa
        batch, kvh = a.units // 8, 8
        q = torch.randn(batch, 32, 1, 128, dtype=torch.bfloat16, device="cuda")
        kt = torch.randn(batch, kvh, a.keys, 128, dtype=torch.bfloat16, device="cuda")
        vt = torch.randn_like(kt)
        for bname, backend in (("cudnn", SDPBackend.CUDNN_ATTENTION),
                               ("flash", SDPBackend.FLASH_ATTENTION)):
            with sdpa_kernel(backend):
                us = deploy(lambda: sdpa(q, kt, vt, enable_gqa=True), samples=a.samples)
            print(f"| SDPA {bname} (batch {batch}, 32 q heads) | deploy regime | {us:.2f} | "
                  f"{2 * nbytes / us / 1e3:.0f} |")
            # The same call timed as the kernels above are (CUDA events around one launch).
            t0, t1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            ts = []
            with sdpa_kernel(backend):
                for i in range(a.samples + 3):
                    t0.record()
                    sdpa(q, kt, vt, enable_gqa=True)
                    t1.record()
                    t1.synchronize()
                    if i >= 3:
                        ts.append(t0.elapsed_time(t1) * 1000.0)
            us = statistics.median(ts)
            print(f"| SDPA {bname} (batch {batch}, 32 q heads) | events | {us:.2f} | "
                  f"{2 * nbytes / us / 1e3:.0f} |")


if __name__ == "__main__":
    main()
