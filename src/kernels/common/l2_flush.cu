// The deploy regime's L2 flush by reads (cuda::L2Flush): every thread reads 16-byte words a grid
// stride apart, so the whole buffer passes through L2 and leaves it holding clean lines. The
// checksum keeps the loads alive; the buffer holds zeros, so `sink` is never written.
extern "C" __global__ void attune_l2_flush_read(const uint4* __restrict__ p,
                                                unsigned long long words, unsigned* sink) {
  unsigned acc = 0;
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < words;
       i += stride) {
    const uint4 v = p[i];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x9e3779b9u) *sink = acc;
}

// The deploy regime's lead (cuda::L2Flush::lead): an empty kernel a deploy sample's graph starts
// with, so the candidate after it runs as a kernel behind another in a graph does.
extern "C" __global__ void attune_graph_lead() {}
