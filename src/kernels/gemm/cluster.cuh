// Thread block clusters for the skinny GEMMs' K split (NVRTC header "attune_cluster.cuh"): with
// KSPLIT > 1 (default 1, no split) the kernel marked CLUSTER_DIMS runs as clusters of KSPLIT
// blocks along x, which sum their partial results through distributed shared memory in the same
// launch. Hopper (sm_90) and newer.
#pragma once

#ifndef KSPLIT
#define KSPLIT 1
#endif

#if KSPLIT == 1
#define CLUSTER_DIMS
#else
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#error "a K split reduces through a thread block cluster, which needs sm_90 or newer"
#endif
#define CLUSTER_DIMS __cluster_dims__(KSPLIT, 1, 1)

// The cluster's barrier: every thread of every block arrives; release/acquire orders shared memory.
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::
                   : "memory");
}

// Block `rank`'s float at the shared-memory address of `local` in this block.
__device__ __forceinline__ float cluster_load(const float* local, unsigned rank) {
  unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(local)), remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(addr), "r"(rank));
  float v;
  asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(remote) : "memory");
  return v;
}
#endif
