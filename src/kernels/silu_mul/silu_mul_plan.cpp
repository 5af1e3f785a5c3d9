// silu_mul's kernel plans: the naive baseline (one thread per output element, 256 per block) and
// the vector kernel (rows_per_block rows x threads * vec * unroll columns per block), both in
// silu_mul.cu.
#include <fmt/format.h>

#include "kernels/plan.h"
#include "kernels/plan_knobs.h"

namespace attune::kernels {

extern const char* const kSiluMulSource;

namespace {
constexpr std::int64_t kMaxGridY = 65535;
constexpr std::int64_t kMaxGridX = 2147483647;
}  // namespace

Result<SiluMulShape> silu_mul_shape(const Problem& p) {
  ATTUNE_ASSIGN(HalfShape h, half_shape(p, silu_mul_op()));
  return SiluMulShape{h.sizes[0], h.sizes[1], h.bf16};
}

Result<Plan> plan_silu_mul(const Problem& problem, const Config& c) {
  ATTUNE_ASSIGN(SiluMulShape s, silu_mul_shape(problem));
  const Value* kernel = c.get("kernel");
  if (!kernel)
    return Error::invalid_argument(
        fmt::format("silu_mul config '{}' has no knob 'kernel'", c.text()));
  const std::string k = kernel->as_word();
  KernelPlan p;
  p.build.source = kSiluMulSource;
  p.build.source_name = "silu_mul.cu";
  p.build.headers = {launch_header()};
  p.build.options = {fmt::format("-DT={}", type_of(s.bf16)), fmt::format("-DINTER={}", s.inter)};
  if (k == "naive") {
    const std::int64_t blocks = (s.rows * s.inter + 255) / 256;
    if (blocks > kMaxGridX)
      return Error::invalid_argument(
          fmt::format("silu_mul: {} x {} elements exceed a launch's grid", s.rows, s.inter));
    p.build.name_expressions = {"silu_mul_naive"};
    p.steps.push_back(
        {"silu_mul_naive", {static_cast<unsigned>(blocks)}, {256}, 0, {"y", "x", "rows"}});
    return Plan{std::move(p)};
  }
  if (k != "vector")
    return Error::invalid_argument(
        fmt::format("silu_mul config '{}': unknown kernel '{}'", c.text(), k));
  ATTUNE_ASSIGN(std::int64_t vec, knob(c, "vec"));
  ATTUNE_ASSIGN(std::int64_t threads, knob(c, "threads"));
  ATTUNE_ASSIGN(std::int64_t unroll, knob(c, "unroll"));
  ATTUNE_ASSIGN(std::int64_t rpb, knob(c, "rows_per_block"));
  if ((vec != 1 && vec != 2 && vec != 4 && vec != 8) || threads < 32 || threads > 1024 ||
      threads % 32 != 0 || unroll < 1 || unroll > 8 || rpb < 1 || rpb > 8)
    return Error::invalid_argument(fmt::format(
        "silu_mul config '{}': vec 1, 2, 4 or 8, threads a multiple of 32 up to 1024, unroll and "
        "rows_per_block 1-8",
        c.text()));
  if (s.inter % vec != 0)
    return Error::invalid_argument(
        fmt::format("silu_mul config '{}': vec does not divide inter={}", c.text(), s.inter));
  const std::int64_t col_blocks = ceil_div(s.inter, threads * vec * unroll);
  if (col_blocks > kMaxGridY)
    return Error::invalid_argument(fmt::format(
        "silu_mul config '{}': {} column blocks exceed a launch's grid", c.text(), col_blocks));
  p.build.options.insert(
      p.build.options.end(),
      {fmt::format("-DTHREADS={}", threads), fmt::format("-DVEC={}", vec),
       fmt::format("-DUNROLL={}", unroll), fmt::format("-DROWS_PER_BLOCK={}", rpb)});
  p.build.name_expressions = {"silu_mul_vector"};
  p.steps.push_back({"silu_mul_vector",
                     {ceil_div(s.rows, rpb), static_cast<unsigned>(col_blocks)},
                     {static_cast<unsigned>(threads)},
                     0,
                     {"y", "x", "rows"}});
  return Plan{std::move(p)};
}

}  // namespace attune::kernels
