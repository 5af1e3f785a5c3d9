// rmsnorm's signature: y = x / rms(x) * w per row of `hidden`, with an optional fused residual add
// (h = x + r is normalized and written out). Its baseline is the family's base config.
#include "kernels/ops.h"

namespace attune::kernels {

namespace {

// x and y once, r and h too with the residual, the weight.
OpWork rmsnorm_work(const Problem& p) {
  const double rows = static_cast<double>(*p.int_attr("rows")),
               hidden = static_cast<double>(*p.int_attr("hidden"));
  const double tensors = p.flag("residual") ? 4 : 2;
  return OpWork{2 * (tensors * rows * hidden + hidden), 4 * rows * hidden};
}

}  // namespace

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
                              .sweep_default_per = {"hidden"},
                              .work = &rmsnorm_work};
  return op;
}

}  // namespace attune::kernels
