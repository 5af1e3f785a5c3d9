// gemm_rope's kernel plans: the split baseline (cuBLASLt's matmul into the workspace, then rope's
// fused kernel reading it), and the tiled (mma.sync) and wgmma GEMMs with the RoPE epilogue
// (gemm_tiled.cu, gemm_wgmma.cu with -DROPE=1: one launch, qkv never written).
#include <algorithm>

#include <fmt/format.h>

#include "kernels/plan.h"
#include "kernels/plan_knobs.h"

namespace attune::kernels {

extern const char* const kRopeHeader;

namespace {

// The problem of rope that the split form's second kernel computes.
Problem rope_problem(const GemmRopeShape& s) {
  const RopeShape& r = s.rope;
  std::map<std::string, std::string> attrs = {{"batch", std::to_string(r.batch)},
                                              {"seq", std::to_string(r.seq)},
                                              {"kv", std::to_string(r.kv)},
                                              {"q_heads", std::to_string(r.q_heads)},
                                              {"kv_heads", std::to_string(r.kv_heads)},
                                              {"head", std::to_string(r.head)},
                                              {"theta", std::to_string(r.theta)},
                                              {"qk_norm", r.qk_norm ? "1" : "0"},
                                              {"dtype", r.bf16 ? "bf16" : "fp16"}};
  if (r.llama3_scaling) attrs["llama3_scaling"] = "1";
  return Problem("rope", std::move(attrs));
}

// The split form: qkv = x . W^T by cuBLASLt (its own algorithm) into the workspace, then rope's
// fused kernel with a head's pairs over one warp's lanes, four heads per block, reading qkv there.
// Under rms_norm=1 an RMSNorm kernel (attune_row_rms.cuh, built with rope's source) first writes
// the scaled x behind the product, where the matmul reads it. Workspace: [qkv | scaled x, under
// rms_norm | cuBLASLt's].
Result<Plan> plan_split(const GemmRopeShape& s) {
  const RopeShape& r = s.rope;
  const std::int64_t groups = std::min<std::int64_t>(4, r.heads());
  ATTUNE_ASSIGN(Config cfg, Config::parse(fmt::format(
                                "kernel=fused,vec={},head_groups={},head_blocks=1,tokens=1",
                                std::max<std::int64_t>(1, r.head / 64), groups)));
  ATTUNE_ASSIGN(Plan rope_plan, plan_rope(rope_problem(s), cfg));
  KernelPlan& k = std::get<KernelPlan>(rope_plan);
  ChainPlan p;
  p.build = k.build;
  LtMatmul product = workspace_product(s.m(), s.n(), s.hidden, r.bf16, &p.workspace_bytes);
  if (s.rms_norm) {
    // The scaled x goes where cuBLASLt's workspace began, which moves behind it.
    const std::size_t scaled = static_cast<std::size_t>(s.m() * s.hidden) * 2;
    const std::size_t at = product.workspace_offset;
    add_row_rms_step(p, s.m(), s.hidden, at);
    product.a = {"workspace", at, 0};
    product.workspace_offset = (at + scaled + 255) / 256 * 256;
    p.workspace_bytes = product.workspace_offset + product.workspace_bytes;
  }
  p.steps.push_back(std::move(product));
  LaunchStep rotate = k.steps.front();
  for (std::string& arg : rotate.args)
    if (arg == "qkv") arg = "workspace";  // the product cuBLASLt wrote
  p.steps.push_back(std::move(rotate));
  return Plan{std::move(p)};
}

// A GEMM's one-launch plan made gemm_rope's: the RoPE epilogue compiled in (-DROPE=1, rope's
// defines and header), its kernel `kernel` taking `args`.
void add_rope_epilogue(KernelPlan& p, const GemmRopeShape& s, const char* kernel,
                       std::vector<std::string> args) {
  p.build.options.push_back("-DROPE=1");
  const std::vector<std::string> rope = rope_defines(s.rope);
  p.build.options.insert(p.build.options.end(), rope.begin(), rope.end());
  p.build.headers.push_back({"attune_rope.cuh", kRopeHeader});
  p.build.name_expressions = {kernel};
  p.steps.front().kernel = kernel;
  p.steps.front().args = std::move(args);
}

Result<Plan> plan_tiled_rope(const GemmRopeShape& s, const Config& c) {
  ATTUNE_ASSIGN(TiledTile t, tiled_tile(c));
  t.split = 1;
  const std::int64_t smem = std::max(gemm_tiled_ring_bytes(t.bm, t.bn, t.bk, t.stages),
                                     gemm_tiled_rope_tile_bytes(t.bm, t.bn));
  if (t.bn % s.rope.head != 0 || smem > static_cast<std::int64_t>(kMaxBlockSharedBytes))
    return Error::invalid_argument(fmt::format(
        "gemm_rope config '{}': kernel=tiled needs tl_bn a multiple of head ({}) and at most {} "
        "bytes of shared memory ({})",
        c.text(), s.rope.head, kMaxBlockSharedBytes, smem));
  if (s.rms_norm)
    return Error::invalid_argument(fmt::format(
        "gemm_rope config '{}': kernel=tiled has no rms_norm (the wgmma kernel's and the split "
        "form's)",
        c.text()));
  GemmShape g{s.m(), s.n(), s.hidden, s.rope.bf16, false, false};
  KernelPlan p = gemm_tiled_plan(g, t);
  add_rope_epilogue(p, s, "gemm_tiled_rope",
                    {"q", "k", "v", "a", "b", "q_norm", "k_norm", "seq", "kv", "eps"});
  p.steps.front().shared_bytes = static_cast<unsigned>(smem);
  return Plan{std::move(p)};
}

Result<Plan> plan_wgmma_rope(const GemmRopeShape& s, const Config& c) {
  ATTUNE_ASSIGN(WgmmaTile t, wgmma_tile(c));
  t.split = 1;
  // wg_staged 1: the epilogue's outputs go through shared memory (slabs the size of the TMA
  // store's staging) and leave as whole head rows; rows written before the knob existed have 0.
  const std::int64_t staged = knob_or(c, "wg_staged", 0);
  const std::size_t smem = gemm_wgmma_rope_shared_bytes(t.bm, t.bn, t.stages, staged == 1,
                                                        t.pingpong, s.rope.head, s.rope.qk_norm);
  if ((t.bm != 64 && t.bm != 128) || (t.bn != 64 && t.bn != 128 && t.bn != 256) || t.stages < 2 ||
      t.bn % s.rope.head != 0 || smem > kMaxBlockSharedBytes || t.tiles < 1 ||
      (t.cluster != 1 && t.cluster != 2) || t.tma_store || (staged != 0 && staged != 1) ||
      (t.pingpong && t.bm != 64))
    return Error::invalid_argument(fmt::format(
        "gemm_rope config '{}': kernel=wgmma takes wg_bm 64 or 128, wg_bn 64, 128 or 256 and a "
        "multiple of head ({}), wg_stages >= 2, wg_tiles >= 1, wg_cluster 1 or 2, wg_staged 0 or "
        "1, ping-pong consumers (wg_pingpong 1) only at wg_bm 64, no TMA store (its epilogue "
        "stores the heads itself), and at most {} bytes of shared memory ({})",
        c.text(), s.rope.head, kMaxBlockSharedBytes, smem));
  GemmShape g{s.m(), s.n(), s.hidden, s.rope.bf16, false, false};
  g.rms_norm = s.rms_norm;  // -DRMS_NORM=1: the rows' scale before the RoPE epilogue
  KernelPlan p = gemm_wgmma_plan(g, t);
  p.build.options.push_back(fmt::format("-DROPE_STAGED={}", staged));
  add_rope_epilogue(
      p, s, "gemm_wgmma_rope",
      {"q", "k", "v", "tensor_map0", "tensor_map1", "q_norm", "k_norm", "seq", "kv", "eps"});
  p.steps.front().shared_bytes = static_cast<unsigned>(smem);
  return Plan{std::move(p)};
}

}  // namespace

Result<GemmRopeShape> gemm_rope_shape(const Problem& p) {
  ATTUNE_ASSIGN(RopeShape r, rope_shape(p));
  ATTUNE_ASSIGN(std::int64_t hidden, p.int_attr("hidden"));
  if (hidden <= 0 || hidden % 8 != 0)
    return Error::invalid_argument("gemm_rope problem " + p.text() +
                                   ": hidden must be a positive multiple of 8");
  return GemmRopeShape{r, hidden, p.flag("rms_norm")};
}

Result<Plan> plan_gemm_rope(const Problem& problem, const Config& config) {
  ATTUNE_ASSIGN(GemmRopeShape s, gemm_rope_shape(problem));
  const Value* kernel = config.get("kernel");
  if (!kernel)
    return Error::invalid_argument(
        fmt::format("gemm_rope config '{}' has no knob 'kernel'", config.text()));
  const std::string k = kernel->as_word();
  if (k == "split") return plan_split(s);
  if (k == "tiled") return plan_tiled_rope(s, config);
  if (k == "wgmma") return plan_wgmma_rope(s, config);
  return Error::invalid_argument(
      fmt::format("gemm_rope config '{}': unknown kernel '{}'", config.text(), k));
}

}  // namespace attune::kernels
