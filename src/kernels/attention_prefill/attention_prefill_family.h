// The attention_prefill kernel family: causal attention over a whole prompt (grouped-query, head
// 64/128, bf16 and fp16). Knobs: the kernel (the split baseline of cuBLASLt batched GEMMs around a
// softmax kernel, or the wgmma flash kernel) and the flash kernel's keys per tile, consumer
// warpgroups (64 query rows each) and K/V stages.
#pragma once

#include <memory>

#include "backends/cuda/cuda_family.h"

namespace attune::kernels {

std::unique_ptr<cuda::CudaFamily> make_attention_prefill_family();

}  // namespace attune::kernels
