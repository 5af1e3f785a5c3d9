// The assembled layer's CUDA family (core/layer_problem.h): the steps of a layer problem
// planned with their chosen configs (each through its op's kernel plan, as libattune-rt runs
// them), wired by role into one chain of buffers, and timed whole: in the deploy regime the chain
// is replayed as one CUDA graph with L2 flushed, as each kernel's own deploy time was taken. Its
// check: every tensor the chain produces is written in full and finite (each kernel passed its
// own gate against its reference in its inner search; a whole-layer reference is not built).
#pragma once

#include <memory>

#include "backends/cuda/cuda_family.h"

namespace attune::kernels {

std::unique_ptr<cuda::CudaFamily> make_layer_family();

}  // namespace attune::kernels
