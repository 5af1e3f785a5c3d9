// rmsnorm's signature: y = x / rms(x) * w per row of `hidden`, with an optional fused residual add
// (h = x + r is normalized and written out). Its baseline is the family's base config.
#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "kernels/ops.h"

namespace attune::kernels {

namespace {

// Threads per row, rows per block, vector width and unroll; the rules read only hidden.
Result<Space> rmsnorm_space(const Problem& p) {
  ATTUNE_ASSIGN(const std::int64_t hidden, p.int_attr("hidden"));
  auto k = [](const char* n, std::vector<Value> o, std::size_t base) {
    return Knob{n, std::move(o), base, KnobKind::kInPlace};
  };
  return Space::make(
      {k("threads", {32, 64, 128, 256, 512, 1024}, 3), k("rows_per_block", {1, 2, 4, 8}, 0),
       k("vec", {1, 2, 4, 8}, 0), k("unroll", {1, 2, 4}, 0)},
      {{"threads * rows_per_block <= 1024",
        {"threads", "rows_per_block"},
        [](const Assignment& a) { return a.i("threads") * a.i("rows_per_block") <= 1024; }},
       {"vec divides hidden (aligned vector accesses)",
        {"vec"},
        [hidden](const Assignment& a) { return a.i("vec") == 1 || hidden % a.i("vec") == 0; }},
       {"no thread idle for a whole row: threads * vec <= max(hidden, 32 * vec) (the baseline's "
        "256 always allowed)",
        {"threads", "vec"},
        [hidden](const Assignment& a) {
          return a.i("threads") == 256 ||
                 a.i("threads") * a.i("vec") <= std::max<std::int64_t>(hidden, 32 * a.i("vec"));
        }},
       {"unroll matters only for rows too long to keep in registers",
        {"threads", "vec", "unroll"},
        [hidden](const Assignment& a) {
          const std::int64_t iters =
              (hidden + a.i("threads") * a.i("vec") - 1) / (a.i("threads") * a.i("vec"));
          return a.i("unroll") == 1 || iters * a.i("vec") > 32;
        }}});
}

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
                              .space = &rmsnorm_space,
                              .work = &rmsnorm_work};
  return op;
}

}  // namespace attune::kernels
