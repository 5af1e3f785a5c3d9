// gemm's kernel plans: cuBLASLt variants, the skinny kernels (CUDA-core and tensor-core), the
// tiled tensor-core kernel (mma.sync) and Hopper's warpgroup-MMA kernel, each with its K split
// across a thread block cluster. With silu_mul=1 attune's kernels apply SiLU * mul in their
// epilogue (-DSILU_MUL=1), and cuBLASLt's is the split form: the matmul into the workspace, then
// silu_mul's kernel. rms_norm=1 and residual=1 are the wgmma kernel's (-DRMS_NORM, -DRESIDUAL)
// and cuBLASLt's: residual as its beta = 1, rms_norm as the split form (an RMSNorm kernel
// without weight into the workspace, then the matmul, then under silu_mul its kernel).
#include <algorithm>

#include <fmt/format.h>

#include "kernels/plan.h"
#include "kernels/plan_knobs.h"

namespace attune::kernels {

extern const char* const kGemmSkinnySource;
extern const char* const kGemmSkinnyTcSource;
extern const char* const kGemmTiledSource;
extern const char* const kClusterHeader;
extern const char* const kGemmWgmmaSource;
extern const char* const kWgmmaHeader;
extern const char* const kGemmStoreHeader;
extern const char* const kGemmSplitSource;
extern const char* const kRowRmsHeader;

void add_row_rms_step(ChainPlan& p, std::int64_t m, std::int64_t k, std::size_t offset) {
  p.build.options.push_back(fmt::format("-DROW_RMS_K={}", k));
  p.build.headers.push_back({"attune_row_rms.cuh", kRowRmsHeader});
  p.build.name_expressions.push_back("gemm_row_rms");
  LaunchStep norm{
      "gemm_row_rms", {static_cast<unsigned>(m)}, {128}, 0, {"workspace", "a", "rows", "eps"}};
  norm.workspace_offset = offset;
  p.steps.push_back(std::move(norm));
}

namespace {

const std::vector<std::string> kGemmArgs = {"c", "a", "b", "bias"};

// The flags only cuBLASLt and the wgmma kernel implement, refused by the others' plans.
Status refuse_fused(const GemmShape& s, const char* kernel) {
  if (!s.rms_norm && !s.residual) return Status::success();
  return Error::invalid_argument(
      fmt::format("gemm kernel={} has no {} epilogue (cuBLASLt's and the wgmma kernel's)", kernel,
                  s.rms_norm ? "rms_norm" : "residual"));
}

// The defines every gemm source takes first: element type (and its mma name), then the shape.
std::vector<std::string> shape_defines(const GemmShape& s, bool mma_name) {
  std::vector<std::string> d = {fmt::format("-DT={}", type_of(s.bf16))};
  if (mma_name) d.push_back(fmt::format("-DTNAME=\"{}\"", s.bf16 ? "bf16" : "f16"));
  d.insert(d.end(),
           {fmt::format("-DM={}", s.m), fmt::format("-DN={}", s.n), fmt::format("-DK={}", s.k)});
  if (s.silu_mul) d.push_back("-DSILU_MUL=1");
  if (s.rms_norm) d.push_back("-DRMS_NORM=1");
  if (s.residual) d.push_back("-DRESIDUAL=1");
  return d;
}

// cuBLASLt's share of the split form's workspace (behind the [m, n] product).
constexpr std::size_t kSplitLtWorkspace = 4u << 20;

// silu_mul=1 by cuBLASLt: the product [m, n] into the workspace, then silu_mul's vector kernel
// (the widest vector that divides the row) writes C. cuBLASLt's own algorithm choice only.
Result<Plan> plan_lt_silu_mul(const GemmShape& s) {
  const std::int64_t inter = s.n / 2;
  std::int64_t vec = 8;
  while (inter % vec != 0) vec /= 2;
  Problem act("silu_mul", {{"rows", std::to_string(s.m)},
                           {"inter", std::to_string(inter)},
                           {"dtype", s.bf16 ? "bf16" : "fp16"}});
  ATTUNE_ASSIGN(Config cfg,
                Config::parse(fmt::format(
                    "kernel=vector,vec={},threads=256,unroll=1,rows_per_block=1", vec)));
  ATTUNE_ASSIGN(Plan act_plan, plan_silu_mul(act, cfg));
  KernelPlan& k = std::get<KernelPlan>(act_plan);
  ChainPlan p;
  p.build = k.build;
  p.steps.push_back(workspace_product(s.m, s.n, s.k, s.bf16, &p.workspace_bytes));
  LaunchStep act_step = k.steps.front();
  act_step.args = {"c", "workspace", "rows"};  // silu_mul's (y, x, rows)
  p.steps.push_back(act_step);
  return Plan{std::move(p)};
}

// rms_norm=1 by cuBLASLt, the split form a user without the fold runs (gemm_split.cu): an RMSNorm
// kernel without weight (the weight is folded into B) writes the scaled A into the workspace,
// then cuBLASLt's own algorithm multiplies it into C (plus the residual under residual=1), or
// under silu_mul=1 into the workspace, from which a SiLU * mul kernel writes C. Workspace:
// [product, under silu_mul | scaled A | cuBLASLt's].
Result<Plan> plan_lt_rms_norm(const GemmShape& s) {
  auto round = [](std::size_t b) { return (b + 255) / 256 * 256; };
  const std::size_t product = s.silu_mul ? round(static_cast<std::size_t>(s.m * s.n) * 2) : 0;
  const std::size_t scaled = round(static_cast<std::size_t>(s.m * s.k) * 2);
  ChainPlan p;
  p.build.source = kGemmSplitSource;
  p.build.source_name = "gemm_split.cu";
  p.build.options = {fmt::format("-DT={}", type_of(s.bf16))};
  p.build.headers = {launch_header()};
  add_row_rms_step(p, s.m, s.k, product);
  std::size_t unused = 0;
  LtMatmul mm = workspace_product(s.m, s.n, s.k, s.bf16, &unused);
  mm.a = {"workspace", product, 0};
  if (!s.silu_mul) mm.c = {"c", 0, 0};
  if (s.residual) mm.residual = {"r", 0, 0};
  mm.workspace_offset = product + scaled;
  p.steps.push_back(mm);
  p.workspace_bytes = product + scaled + kSplitLtWorkspace;
  if (s.silu_mul) {
    const std::int64_t inter = s.n / 2;
    std::int64_t avec = 8;
    while (inter % avec != 0) avec /= 2;
    p.build.options.push_back(fmt::format("-DINTER={}", inter));
    p.build.name_expressions.push_back("gemm_split_silu_mul");
    p.steps.push_back(LaunchStep{"gemm_split_silu_mul",
                                 {ceil_div(s.m * inter, 128 * avec)},
                                 {128},
                                 0,
                                 {"c", "workspace", "rows"}});
  }
  return Plan{std::move(p)};
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
  p.build.headers = {launch_header(), {"attune_cluster.cuh", kClusterHeader}};
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
  return skinny_plan(kGemmSkinnySource, "gemm_skinny", s, std::move(d), ceil_div(s.out_n(), nb),
                     knob_or(c, "sk_split", 1), warps);
}

Result<KernelPlan> plan_skinny_tc(const GemmShape& s, const Config& c) {
  ATTUNE_ASSIGN(std::int64_t warps, knob(c, "tc_warps"));
  ATTUNE_ASSIGN(std::int64_t nt, knob(c, "tc_nt"));
  ATTUNE_ASSIGN(std::int64_t unroll, knob(c, "tc_unroll"));
  std::vector<std::string> d = shape_defines(s, true);
  d.insert(d.end(), {fmt::format("-DWARPS={}", warps), fmt::format("-DNT={}", nt),
                     fmt::format("-DUNROLL={}", unroll)});
  return skinny_plan(kGemmSkinnyTcSource, "gemm_skinny_tc", s, std::move(d),
                     ceil_div(s.out_n(), 16 * nt), knob_or(c, "tc_split", 1), warps);
}

Result<KernelPlan> plan_tiled(const GemmShape& s, const Config& c) {
  ATTUNE_ASSIGN(TiledTile t, tiled_tile(c));
  return gemm_tiled_plan(s, t);
}

Result<KernelPlan> plan_wgmma(const GemmShape& s, const Config& c) {
  ATTUNE_ASSIGN(WgmmaTile t, wgmma_tile(c));
  if ((t.bm != 64 && t.bm != 128) || (t.bn != 64 && t.bn != 128 && t.bn != 256) || t.stages < 2 ||
      (t.split != 1 && t.split != 2 && t.split != 4 && t.split != 8) || t.tiles < 1 ||
      (t.cluster != 1 && t.cluster != 2) ||
      (t.split > 1 && (t.tiles > 1 || t.cluster > 1 || t.tma_store)) ||
      (t.pingpong && (t.bm != 64 || t.split > 1)))
    return Error::invalid_argument(fmt::format(
        "gemm config '{}': kernel=wgmma takes wg_bm 64 or 128, wg_bn 64, 128 or 256, wg_stages "
        ">= 2, wg_split 1, 2, 4 or 8, wg_tiles >= 1, wg_cluster 1 or 2, under a K split "
        "wg_tiles 1, wg_cluster 1 and wg_tma_store 0, and ping-pong consumers (wg_pingpong 1) "
        "only at wg_bm 64 without a K split",
        c.text()));
  if (t.tma_store && ((s.silu_mul ? t.bn / 2 : t.bn) % 64 != 0 || s.out_n() % 8 != 0))
    return Error::invalid_argument(fmt::format(
        "gemm config '{}': wg_tma_store 1 stores whole 64-column boxes of output rows of 16-byte "
        "multiples: a tile's output columns (wg_bn, half of it under silu_mul) a multiple of 64, "
        "and the output's columns ({}) a multiple of 8",
        c.text(), s.out_n()));
  if (s.rms_norm && t.split > 1)
    return Error::invalid_argument(fmt::format(
        "gemm config '{}': rms_norm=1 sums each row's squares over the whole of K: wg_split 1",
        c.text()));
  const std::size_t shared =
      gemm_wgmma_shared_bytes(t.bm, t.bn, t.stages, t.split, t.tma_store, t.pingpong);
  if (shared > kMaxBlockSharedBytes)
    return Error::invalid_argument(
        fmt::format("gemm config '{}': {} bytes of shared memory, more than a block gets ({})",
                    c.text(), shared, kMaxBlockSharedBytes));
  return gemm_wgmma_plan(s, t);
}

}  // namespace

LtMatmul workspace_product(std::int64_t m, std::int64_t n, std::int64_t k, bool bf16,
                           std::size_t* workspace_bytes) {
  const std::size_t product = (static_cast<std::size_t>(m * n) * 2 + 255) / 256 * 256;
  LtMatmul mm;
  mm.m = m;
  mm.n = n;
  mm.k = k;
  mm.b_transposed = true;
  mm.bf16 = bf16;
  mm.a = {"a", 0, 0};
  mm.b = {"b", 0, 0};
  mm.c = {"workspace", 0, 0};
  mm.workspace_offset = product;
  mm.workspace_bytes = kSplitLtWorkspace;
  *workspace_bytes = product + kSplitLtWorkspace;
  return mm;
}

Result<TiledTile> tiled_tile(const Config& c) {
  TiledTile t;
  ATTUNE_ASSIGN(t.bm, knob(c, "tl_bm"));
  ATTUNE_ASSIGN(t.bn, knob(c, "tl_bn"));
  ATTUNE_ASSIGN(t.bk, knob(c, "tl_bk"));
  ATTUNE_ASSIGN(t.wm, knob(c, "tl_wm"));
  ATTUNE_ASSIGN(t.wn, knob(c, "tl_wn"));
  ATTUNE_ASSIGN(t.stages, knob(c, "tl_stages"));
  ATTUNE_ASSIGN(t.group, knob(c, "tl_group"));
  t.split = knob_or(c, "tl_split", 1);
  return t;
}

Result<WgmmaTile> wgmma_tile(const Config& c) {
  WgmmaTile t;
  ATTUNE_ASSIGN(t.bm, knob(c, "wg_bm"));
  ATTUNE_ASSIGN(t.bn, knob(c, "wg_bn"));
  ATTUNE_ASSIGN(t.stages, knob(c, "wg_stages"));
  t.split = knob_or(c, "wg_split", 1);
  t.tiles = knob_or(c, "wg_tiles", 1);
  t.cluster = knob_or(c, "wg_cluster", 1);
  t.tma_store = knob_or(c, "wg_tma_store", 0) == 1;
  t.pingpong = knob_or(c, "wg_pingpong", 0) == 1;
  return t;
}

KernelPlan gemm_tiled_plan(const GemmShape& s, const TiledTile& t) {
  KernelPlan p;
  p.build.source = kGemmTiledSource;
  p.build.source_name = "gemm_tiled.cu";
  p.build.options = shape_defines(s, true);
  p.build.options.insert(
      p.build.options.end(),
      {fmt::format("-DBM={}", t.bm), fmt::format("-DBN={}", t.bn), fmt::format("-DBK={}", t.bk),
       fmt::format("-DWM={}", t.wm), fmt::format("-DWN={}", t.wn),
       fmt::format("-DSTAGES={}", t.stages), fmt::format("-DSPLIT={}", t.split),
       fmt::format("-DGROUP={}", t.group), fmt::format("-DBIAS={}", s.bias ? 1 : 0)});
  p.build.name_expressions = {"gemm_tiled"};
  p.build.headers = {launch_header(),
                     {"attune_cluster.cuh", kClusterHeader},
                     {"attune_gemm_store.cuh", kGemmStoreHeader}};
  // One launch: under a K split each tile is a cluster of `split` consecutive blocks, which sum
  // their partial tiles through distributed shared memory parked in the pipeline's memory.
  const unsigned tiles = ceil_div(s.m, t.bm) * ceil_div(s.n, t.bn);
  const std::int64_t pipeline = gemm_tiled_ring_bytes(t.bm, t.bn, t.bk, t.stages);
  const std::int64_t partial = t.split > 1 ? gemm_tiled_partial_bytes(t.bm, t.bn) : 0;
  p.steps.push_back({"gemm_tiled",
                     {static_cast<unsigned>(tiles * t.split)},
                     {static_cast<unsigned>(t.wm * t.wn * 32)},
                     static_cast<unsigned>(std::max(pipeline, partial)),
                     kGemmArgs});
  return p;
}

KernelPlan gemm_wgmma_plan(const GemmShape& s, const WgmmaTile& t) {
  KernelPlan p;
  p.build.source = kGemmWgmmaSource;
  p.build.source_name = "gemm_wgmma.cu";
  p.build.options = shape_defines(s, true);
  p.build.options.insert(
      p.build.options.end(),
      {fmt::format("-DBM={}", t.bm), fmt::format("-DBN={}", t.bn),
       fmt::format("-DSTAGES={}", t.stages), fmt::format("-DSPLIT={}", t.split),
       fmt::format("-DCLUSTER={}", t.cluster), fmt::format("-DTMA_STORE={}", t.tma_store ? 1 : 0),
       fmt::format("-DPINGPONG={}", t.pingpong ? 1 : 0), "-DGROUP=8",
       fmt::format("-DBIAS={}", s.bias ? 1 : 0)});
  p.build.name_expressions = {"gemm_wgmma"};
  p.build.headers = {launch_header(),
                     {"attune_cluster.cuh", kClusterHeader},
                     {"attune_wgmma.cuh", kWgmmaHeader},
                     {"attune_gemm_store.cuh", kGemmStoreHeader}};
  // One producer warpgroup and bm / 64 consumers (two under pingpong); under a K split each tile is
  // a cluster of `split` consecutive blocks. The TMA reads A and B through tensor maps of 64-wide K
  // boxes (under silu_mul a B box is one half of the tile: its gate rows, or its up rows). A block
  // takes t.tiles tiles in turn (the kernel strides over them by the grid's size); under wg_cluster
  // 2 a cluster of two blocks takes t.tiles pairs of tiles (consecutive tile rows), each block
  // loading half of the pair's B tile for both.
  const unsigned units = ceil_div(ceil_div(s.m, t.bm), t.cluster) * ceil_div(s.n, t.bn);
  const unsigned clusters = ceil_div(units, t.tiles);
  LaunchStep step{"gemm_wgmma",
                  {static_cast<unsigned>(clusters * t.cluster * t.split)},
                  {static_cast<unsigned>(128 * ((t.pingpong ? 2 : t.bm / 64) + 1))},
                  static_cast<unsigned>(gemm_wgmma_shared_bytes(t.bm, t.bn, t.stages, t.split,
                                                                t.tma_store, t.pingpong)),
                  {"c", "tensor_map0", "tensor_map1", "bias", "r", "eps"}};
  const auto k = static_cast<std::uint64_t>(s.k);
  step.tensor_maps = {
      {"a", static_cast<std::uint64_t>(s.m), k, static_cast<std::uint32_t>(t.bm), 64},
      {"b", static_cast<std::uint64_t>(s.n), k,
       static_cast<std::uint32_t>(s.silu_mul || t.cluster > 1 ? t.bn / 2 : t.bn), 64}};
  // Under wg_tma_store C's map follows, its boxes 64 x 64 of each consumer's rows.
  if (t.tma_store) {
    step.args = {"c", "tensor_map0", "tensor_map1", "tensor_map2", "bias", "r", "eps"};
    step.tensor_maps.push_back(
        {"c", static_cast<std::uint64_t>(s.m), static_cast<std::uint64_t>(s.out_n()), 64, 64});
  }
  p.steps.push_back(std::move(step));
  return p;
}

Result<GemmShape> gemm_shape(const Problem& p) {
  ATTUNE_ASSIGN(HalfShape h, half_shape(p, gemm_op()));
  return GemmShape{h.sizes[0], h.sizes[1],         h.sizes[2],         h.bf16,
                   h.flag,     p.flag("silu_mul"), p.flag("rms_norm"), p.flag("residual")};
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
    if (s.silu_mul || s.rms_norm) {
      if (rank != 0 || split != 0 || tile != 0)
        return Error::invalid_argument(fmt::format(
            "gemm config '{}': silu_mul=1's and rms_norm=1's cuBLASLt forms run cuBLASLt's own "
            "algorithm (lt_algo=0, lt_split=0, lt_tile=0)",
            config.text()));
      return s.rms_norm ? plan_lt_rms_norm(s) : plan_lt_silu_mul(s);
    }
    lt.algo_rank = static_cast<int>(rank);
    lt.split_k = static_cast<int>(split);
    lt.tile = static_cast<int>(tile);
    return GemmPlan{lt};
  }
  Result<KernelPlan> plan = Error::invalid_argument("");
  if (k != "wgmma") ATTUNE_TRY(refuse_fused(s, k.c_str()));
  if (k == "skinny")
    plan = plan_skinny(s, config);
  else if (k == "skinny_tc")
    plan = plan_skinny_tc(s, config);
  else if (k == "tiled")
    plan = plan_tiled(s, config);
  else if (k == "wgmma")
    plan = plan_wgmma(s, config);
  else
    return Error::invalid_argument(
        fmt::format("gemm config '{}': unknown kernel '{}'", config.text(), k));
  if (!plan) return plan.error();
  return GemmPlan{std::move(*plan)};
}

}  // namespace attune::kernels
