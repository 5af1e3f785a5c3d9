// libattune-rt's L2 prefetch (Runtime::prefetch_l2): the threads of a few blocks ask the memory
// system to bring regions of global memory (a layer's weights) into L2 and exit; the reads go on
// while the kernels behind it in the stream run, so a latency-bound kernel that reads those bytes
// later finds them in L2 instead of waiting on HBM. Nothing is written and nothing is waited for:
// a prefetch is a hint, and data written meanwhile stays coherent (L2 is where writes land).
//
// On Hopper each request is one bulk prefetch of up to kChunk bytes (16-byte aligned, a multiple of
// 16: the region's unaligned ends, under 16 bytes each, are left out); before Hopper, one L2
// prefetch per 128-byte line.
#define ATTUNE_PREFETCH_REGIONS 16

struct AttunePrefetchRegions {
  unsigned long long begin[ATTUNE_PREFETCH_REGIONS];
  unsigned long long bytes[ATTUNE_PREFETCH_REGIONS];
  unsigned count;
};

extern "C" __global__ void attune_l2_prefetch(AttunePrefetchRegions r) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const unsigned long long kChunk = 32ull << 10;
#else
  const unsigned long long kChunk = 128;
#endif
  const unsigned long long thread = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned long long threads = (unsigned long long)gridDim.x * blockDim.x;
  // The regions' chunks are numbered one after another, chunk i taken by thread i % threads.
  unsigned long long first = 0;
  for (unsigned i = 0; i < r.count; ++i) {
    const unsigned long long lo = (r.begin[i] + 15) & ~15ull;
    const unsigned long long hi = (r.begin[i] + r.bytes[i]) & ~15ull;
    if (hi <= lo) continue;
    const unsigned long long chunks = (hi - lo + kChunk - 1) / kChunk;
    for (unsigned long long c = (thread + threads - first % threads) % threads; c < chunks;
         c += threads) {
      const unsigned long long at = lo + c * kChunk;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
      const unsigned size = (unsigned)(hi - at < kChunk ? hi - at : kChunk);
      asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(at), "r"(size) : "memory");
#else
      asm volatile("prefetch.global.L2 [%0];" ::"l"(at) : "memory");
#endif
    }
    first += chunks;
  }
}
