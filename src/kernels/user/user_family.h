// The user-kernel family on the CUDA backend: a developer's own kernel described by a spec
// (src/kernels/user/spec.h), built by NVRTC per config, run on fresh random inputs, checked
// against the spec's reference (a kernel or a C function), and timed. Configured with the spec's
// path (Backend::configure "user_spec", "user_kernel", "user_problem"). One thread at a time.
#pragma once

#include <memory>

#include "backends/cuda/cuda_family.h"

namespace attune::kernels {

std::unique_ptr<cuda::CudaFamily> make_user_family();

}  // namespace attune::kernels
