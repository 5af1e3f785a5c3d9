// gemm's kernel plans: cuBLASLt variants, the skinny kernels (CUDA-core and tensor-core, a K split
// across a thread block cluster) and the tiled tensor-core kernel.
#include <algorithm>

#include <fmt/format.h>

#include "kernels/plan.h"
#include "kernels/plan_knobs.h"

namespace attune::kernels {

extern const char* const kGemmSkinnySource;
extern const char* const kGemmSkinnyTcSource;
extern const char* const kGemmTiledSource;
extern const char* const kClusterHeader;

namespace {

const std::vector<std::string> kGemmArgs = {"c", "a", "b", "bias"};

// The defines every gemm source takes first: element type (and its mma name), then the shape.
std::vector<std::string> shape_defines(const GemmShape& s, bool mma_name) {
  std::vector<std::string> d = {fmt::format("-DT={}", type_of(s.bf16))};
  if (mma_name) d.push_back(fmt::format("-DTNAME=\"{}\"", s.bf16 ? "bf16" : "f16"));
  d.insert(d.end(),
           {fmt::format("-DM={}", s.m), fmt::format("-DN={}", s.n), fmt::format("-DK={}", s.k)});
  return d;
}

// A skinny kernel's plan: one launch over `groups` groups of weight rows, each a cluster of `split`
// consecutive blocks splitting K (the kernel's __cluster_dims__, from attune_cluster.cuh).
KernelPlan skinny_plan(const char* source, const char* kernel, const GemmShape& s,
                       std::vector<std::string> defines, unsigned groups, std::int64_t split,
                       std::int64_t warps) {
  KernelPlan p;
  p.build.source = source;
  p.build.source_name = std::string(kernel) + ".cu";
  p.build.options = std::move(defines);
  p.build.options.insert(p.build.options.end(), {fmt::format("-DKSPLIT={}", split),
                                                 fmt::format("-DBIAS={}", s.bias ? 1 : 0)});
  p.build.name_expressions = {kernel};
  p.build.headers = {{"attune_cluster.cuh", kClusterHeader}};
  p.steps.push_back({kernel,
                     {static_cast<unsigned>(groups * split)},
                     {static_cast<unsigned>(warps * 32)},
                     0,
                     kGemmArgs});
  return p;
}

Result<KernelPlan> plan_skinny(const GemmShape& s, const Config& c) {
  ATTUNE_ASSIGN(std::int64_t warps, knob(c, "sk_warps"));
  ATTUNE_ASSIGN(std::int64_t nb, knob(c, "sk_nb"));
  ATTUNE_ASSIGN(std::int64_t vec, knob(c, "sk_vec"));
  ATTUNE_ASSIGN(std::int64_t unroll, knob(c, "sk_unroll"));
  std::vector<std::string> d = shape_defines(s, false);
  d.insert(d.end(), {fmt::format("-DWARPS={}", warps), fmt::format("-DNB={}", nb),
                     fmt::format("-DVEC={}", vec), fmt::format("-DUNROLL={}", unroll)});
  return skinny_plan(kGemmSkinnySource, "gemm_skinny", s, std::move(d), ceil_div(s.n, nb),
                     knob_or(c, "sk_split", 1), warps);
}

Result<KernelPlan> plan_skinny_tc(const GemmShape& s, const Config& c) {
  ATTUNE_ASSIGN(std::int64_t warps, knob(c, "tc_warps"));
  ATTUNE_ASSIGN(std::int64_t nt, knob(c, "tc_nt"));
  ATTUNE_ASSIGN(std::int64_t unroll, knob(c, "tc_unroll"));
  std::vector<std::string> d = shape_defines(s, true);
  d.insert(d.end(), {fmt::format("-DWARPS={}", warps), fmt::format("-DNT={}", nt),
                     fmt::format("-DUNROLL={}", unroll)});
  return skinny_plan(kGemmSkinnyTcSource, "gemm_skinny_tc", s, std::move(d), ceil_div(s.n, 16 * nt),
                     knob_or(c, "tc_split", 1), warps);
}

Result<KernelPlan> plan_tiled(const GemmShape& s, const Config& c) {
  ATTUNE_ASSIGN(std::int64_t bm, knob(c, "tl_bm"));
  ATTUNE_ASSIGN(std::int64_t bn, knob(c, "tl_bn"));
  ATTUNE_ASSIGN(std::int64_t bk, knob(c, "tl_bk"));
  ATTUNE_ASSIGN(std::int64_t wm, knob(c, "tl_wm"));
  ATTUNE_ASSIGN(std::int64_t wn, knob(c, "tl_wn"));
  ATTUNE_ASSIGN(std::int64_t stages, knob(c, "tl_stages"));
  ATTUNE_ASSIGN(std::int64_t split, knob(c, "tl_split"));
  ATTUNE_ASSIGN(std::int64_t group, knob(c, "tl_group"));
  KernelPlan p;
  p.build.source = kGemmTiledSource;
  p.build.source_name = "gemm_tiled.cu";
  p.build.options = shape_defines(s, true);
  p.build.options.insert(
      p.build.options.end(),
      {fmt::format("-DBM={}", bm), fmt::format("-DBN={}", bn), fmt::format("-DBK={}", bk),
       fmt::format("-DWM={}", wm), fmt::format("-DWN={}", wn), fmt::format("-DSTAGES={}", stages),
       fmt::format("-DSPLIT={}", split), fmt::format("-DGROUP={}", group),
       fmt::format("-DBIAS={}", s.bias ? 1 : 0)});
  p.build.name_expressions = {"gemm_tiled"};
  const std::vector<std::string> args = {"c", "a", "b", "bias", "workspace"};
  const unsigned tiles = ceil_div(s.m, bm) * ceil_div(s.n, bn);
  const unsigned smem = static_cast<unsigned>(stages * (bm + bn) * bk * 2);
  p.steps.push_back({"gemm_tiled",
                     {tiles, 1, static_cast<unsigned>(split)},
                     {static_cast<unsigned>(wm * wn * 32)},
                     smem,
                     args});
  if (split > 1) {
    p.build.name_expressions.push_back("gemm_tiled_reduce");
    p.workspace_bytes = static_cast<std::size_t>(split * s.m * s.n) * sizeof(float);
    // The reduction is grid-stride: enough blocks to fill any current GPU, no more.
    constexpr unsigned kReduceMaxBlocks = 4096;
    const unsigned grid = std::min<unsigned>(ceil_div(s.m * s.n, 256), kReduceMaxBlocks);
    p.steps.push_back({"gemm_tiled_reduce", {grid}, {256}, 0, args});
  }
  return p;
}

}  // namespace

Result<GemmShape> gemm_shape(const Problem& p) {
  ATTUNE_ASSIGN(HalfShape h, half_shape(p, gemm_op()));
  return GemmShape{h.sizes[0], h.sizes[1], h.sizes[2], h.bf16, h.flag};
}

Result<Plan> plan_gemm(const Problem& problem, const Config& config) {
  ATTUNE_ASSIGN(GemmShape s, gemm_shape(problem));
  const Value* kernel = config.get("kernel");
  if (!kernel)
    return Error::invalid_argument(
        fmt::format("gemm config '{}' has no knob 'kernel'", config.text()));
  const std::string k = kernel->as_word();
  if (k == "cublaslt") {
    LtPlan lt;
    ATTUNE_ASSIGN(std::int64_t rank, knob(config, "lt_algo"));
    ATTUNE_ASSIGN(std::int64_t split, knob(config, "lt_split"));
    ATTUNE_ASSIGN(std::int64_t tile, knob(config, "lt_tile"));
    lt.algo_rank = static_cast<int>(rank);
    lt.split_k = static_cast<int>(split);
    lt.tile = static_cast<int>(tile);
    return GemmPlan{lt};
  }
  Result<KernelPlan> plan = Error::invalid_argument("");
  if (k == "skinny")
    plan = plan_skinny(s, config);
  else if (k == "skinny_tc")
    plan = plan_skinny_tc(s, config);
  else if (k == "tiled")
    plan = plan_tiled(s, config);
  else
    return Error::invalid_argument(
        fmt::format("gemm config '{}': unknown kernel '{}'", config.text(), k));
  if (!plan) return plan.error();
  return GemmPlan{std::move(*plan)};
}

}  // namespace attune::kernels
