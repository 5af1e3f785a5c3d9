// The attention_decode kernel family: decode attention of 1-8 new tokens per sequence against a
// KV cache (grouped-query, head 64/128/256, bf16 and fp16). Knobs: the kernel (the split baseline
// of cuBLASLt batched GEMMs around a softmax kernel, split-KV flash decoding, or its tensor-core
// form kernel=mma) and the flash kernels' KV splits, KV tile, warps (and, flash alone, vector
// width and query rows per block; mma alone, query rows per block 16 or 32 and whether its splits
// merge in a second launch or in a thread block cluster of up to 16). The space is the op's
// (attention_decode_op().space), the sim's too.
#pragma once

#include <memory>

#include "backends/cuda/cuda_family.h"

namespace attune::kernels {

std::unique_ptr<cuda::CudaFamily> make_attention_decode_family();

}  // namespace attune::kernels
