// rmsnorm's kernel plan: one launch of rmsnorm.cu, rows_per_block rows of `threads` threads per
// block.
#include <fmt/format.h>

#include "kernels/plan.h"
#include "kernels/plan_knobs.h"

namespace attune::kernels {

extern const char* const kRmsnormSource;

Result<RmsnormShape> rmsnorm_shape(const Problem& p) {
  ATTUNE_ASSIGN(HalfShape h, half_shape(p, rmsnorm_op()));
  return RmsnormShape{h.sizes[0], h.sizes[1], h.bf16, h.flag};
}

Result<Plan> plan_rmsnorm(const Problem& problem, const Config& c) {
  ATTUNE_ASSIGN(RmsnormShape s, rmsnorm_shape(problem));
  ATTUNE_ASSIGN(std::int64_t threads, knob(c, "threads"));
  ATTUNE_ASSIGN(std::int64_t rpb, knob(c, "rows_per_block"));
  ATTUNE_ASSIGN(std::int64_t vec, knob(c, "vec"));
  ATTUNE_ASSIGN(std::int64_t unroll, knob(c, "unroll"));
  KernelPlan p;
  p.build.source = kRmsnormSource;
  p.build.source_name = "rmsnorm.cu";
  p.build.headers = {launch_header()};
  p.build.options = {fmt::format("-DT={}", type_of(s.bf16)),
                     fmt::format("-DHIDDEN={}", s.hidden),
                     fmt::format("-DTHREADS={}", threads),
                     fmt::format("-DROWS_PER_BLOCK={}", rpb),
                     fmt::format("-DVEC={}", vec),
                     fmt::format("-DUNROLL={}", unroll),
                     fmt::format("-DRESIDUAL={}", s.residual ? 1 : 0)};
  p.build.name_expressions = {"rmsnorm"};
  p.steps.push_back({"rmsnorm",
                     {ceil_div(s.rows, rpb)},
                     {static_cast<unsigned>(threads), static_cast<unsigned>(rpb)},
                     0,
                     {"y", "h", "x", "r", "w", "rows", "eps"}});
  return Plan{std::move(p)};
}

}  // namespace attune::kernels
