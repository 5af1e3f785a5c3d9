// silu_mul's signature: y[row, :] = silu(gu[row, :inter]) * gu[row, inter:], the activation of a
// gated MLP (Llama, Qwen3) on the fused gate/up GEMM's output, rows of 2 * inter. Its baseline is
// the kernel a user writes first: one thread per output element, scalar loads.
#include <fmt/format.h>

#include "kernels/ops.h"

namespace attune::kernels {

namespace {

// The kernel fork first: the vector kernel's knobs are free only under it, so the baseline is
// one config. vec: elements per 16-byte-or-less access; threads per block along a row; unroll:
// accesses per thread along the row; rows_per_block: rows each block walks (fewer, larger blocks
// for short rows).
Result<Space> silu_mul_space(const Problem& p) {
  const std::int64_t inter = *p.int_attr("inter"), rows = *p.int_attr("rows");
  auto fixed_unless_vector = [](const char* name, std::int64_t fixed) {
    return Constraint{fmt::format("{} is fixed unless kernel=vector", name),
                      {"kernel", name},
                      [name, fixed](const Assignment& a) {
                        return a["kernel"].as_word() == "vector" || a.i(name) == fixed;
                      }};
  };
  auto vector = [](const Assignment& a) { return a["kernel"].as_word() == "vector"; };
  return Space::make(
      {Knob{"kernel", {"naive", "vector"}, 0, KnobKind::kStructural},
       Knob{"vec", {1, 2, 4, 8}, 0, KnobKind::kInPlace},
       Knob{"threads", {256, 64, 128, 512, 1024}, 0, KnobKind::kInPlace},
       Knob{"unroll", {1, 2, 4}, 0, KnobKind::kInPlace},
       Knob{"rows_per_block", {1, 2, 4}, 0, KnobKind::kInPlace}},
      {fixed_unless_vector("vec", 1),
       fixed_unless_vector("threads", 256),
       fixed_unless_vector("unroll", 1),
       fixed_unless_vector("rows_per_block", 1),
       {"vec divides inter (aligned vector accesses to both halves)",
        {"kernel", "vec"},
        [inter](const Assignment& a) { return a.i("vec") == 1 || inter % a.i("vec") == 0; }},
       {"kernel=vector: no thread idle for a whole row: threads * vec * unroll <= max(inter, 32 * "
        "vec * unroll)",
        {"kernel", "vec", "threads", "unroll"},
        [vector, inter](const Assignment& a) {
          if (!vector(a)) return true;
          const std::int64_t step = a.i("vec") * a.i("unroll");
          return a.i("threads") * step <= std::max<std::int64_t>(inter, 32 * step);
        }},
       {"kernel=vector: rows_per_block <= rows",
        {"kernel", "rows_per_block"},
        [vector, rows](const Assignment& a) {
          return !vector(a) || a.i("rows_per_block") <= rows;
        }}});
}

// gu (2 x inter per row) read once, y written once.
OpWork silu_mul_work(const Problem& p) {
  const double elems =
      static_cast<double>(*p.int_attr("rows")) * static_cast<double>(*p.int_attr("inter"));
  return OpWork{2 * 3 * elems, 8 * elems};
}

}  // namespace

const OpSignature& silu_mul_op() {
  static const OpSignature op{
      .name = "silu_mul",
      .sizes = {"rows", "inter"},
      .flags = {},
      .dtypes = {"bf16", "fp16"},
      .max_size = 1 << 24,
      .baseline_config = "kernel=naive,vec=1,threads=256,unroll=1,rows_per_block=1",
      .example_shape = "4096x3072",
      .runtime_key = 5,
      // A model has one intermediate size: a default per inter over rows.
      .sweep_default_per = {"inter"},
      .space = &silu_mul_space,
      .work = &silu_mul_work};
  return op;
}

}  // namespace attune::kernels
