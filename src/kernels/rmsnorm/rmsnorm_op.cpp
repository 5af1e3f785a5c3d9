// rmsnorm's signature: y = x / rms(x) * w per row of `hidden`, with an optional fused residual add
// (h = x + r is normalized and written out). Its baseline is the family's base config.
#include "kernels/ops.h"

namespace attune::kernels {

const OpSignature& rmsnorm_op() {
  static const OpSignature op{.name = "rmsnorm",
                              .sizes = {"rows", "hidden"},
                              .flags = {"residual"},
                              .dtypes = {"bf16", "fp16"},
                              .max_size = 1 << 24,
                              .baseline_config = "threads=256,rows_per_block=1,vec=1,unroll=1",
                              .example_shape = "8192x4096",
                              .runtime_key = 1,
                              // A model has one hidden size: a default config per hidden over
                              // the row count, with exceptions.
                              .sweep_default_per = {"hidden"}};
  return op;
}

}  // namespace attune::kernels
