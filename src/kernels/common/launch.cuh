// Programmatic dependent launch (NVRTC header "attune_launch.cuh"). With ATTUNE_DEPENDENT_LAUNCH=1
// the plugin and libattune-rt launch every plan kernel with the programmatic stream serialization
// attribute (kernels/plan_launch.cpp), so on Hopper a kernel may start while the kernel ahead of it
// in the stream is still running. Every plan kernel therefore calls attune_grid_dependency() first,
// before it reads or writes global memory: it waits until the kernel ahead has completed and its
// writes are visible, then lets the kernel behind it be scheduled (whose blocks in turn wait at
// their own first line). A chain of such kernels keeps the stream's order; what it saves is each
// launch's latency. Launched without the attribute (the default) or before sm_90 both instructions
// do nothing.
#pragma once

__device__ __forceinline__ void attune_grid_dependency() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
