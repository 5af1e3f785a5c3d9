// gemm_rope's signature: the QKV projection with RoPE in its epilogue. qkv = x . W^T (x [batch *
// seq, hidden], W [(q_heads + 2 * kv_heads) * head, hidden], the stacked q, k and v projection
// weights as a model stores them), then rope's function of qkv (kernels/rope/rope_op.cpp: the
// optional per-head q/k RMSNorm, the rotation of q and k heads at positions kv - seq .. kv - 1, q
// written [batch, q_heads, seq, head], k and v into the caches [batch, kv_heads, kv, head]),
// with qkv never written to memory: the fused kernel rotates its fp32 accumulators. Flags as
// rope's (qk_norm; optional llama3_scaling), and optional rms_norm as gemm's: x's rows scaled by
// their reciprocal RMS (eps 1e-6) before the projection, the input RMSNorm folded in (its weight
// into W's columns, by the caller). Its baseline is the split form a user without the fusion runs:
// (under rms_norm an RMSNorm kernel,) cuBLASLt's matmul into a buffer, then a RoPE kernel.
#include <algorithm>

#include <fmt/format.h>

#include "kernels/ops.h"

namespace attune::kernels {

std::size_t gemm_wgmma_rope_shared_bytes(std::int64_t bm, std::int64_t bn, std::int64_t stages,
                                         bool staged, bool pingpong, std::int64_t head,
                                         bool qk_norm) {
  return gemm_wgmma_shared_bytes(bm, bn, stages, 1, staged, pingpong) +
         (qk_norm ? static_cast<std::size_t>(2 * head) * sizeof(float) : 0);
}

namespace {

Status check_gemm_rope(const Problem& p) {
  if (Status s = rope_op().check(p); !s) return s.error().with_context("gemm_rope's RoPE");
  if (*p.int_attr("hidden") % 8 != 0)
    return Error::invalid_argument(fmt::format(
        "gemm_rope hidden={} is not a multiple of 8 (the kernels' 16-byte loads of x and W rows)",
        *p.int_attr("hidden")));
  return Status::success();
}

// The kernel fork first: each kernel's knobs (as gemm's tiled and wgmma kernels name them; no K
// split, which would leave each block a part of a head's sums) are free only under it, so the
// split baseline is one config.
Result<Space> gemm_rope_space(const Problem& p) {
  const std::int64_t head = *p.int_attr("head"), m = *p.int_attr("batch") * *p.int_attr("seq");
  const bool qk_norm = p.flag("qk_norm"), rms_norm = p.flag("rms_norm");
  auto tiled = [](const Assignment& a) { return a["kernel"].as_word() == "tiled"; };
  auto wgmma = [](const Assignment& a) { return a["kernel"].as_word() == "wgmma"; };
  auto in_place = [](const char* name, std::vector<Value> options) {
    return Knob{name, std::move(options), 0, KnobKind::kInPlace};
  };
  const auto smem_limit = static_cast<std::int64_t>(kMaxBlockSharedBytes);
  std::vector<Constraint> constraints = gemm_tiled_constraints(m);
  constraints.insert(
      constraints.end(),
      {{"rms_norm=1: the split form or kernel=wgmma (the tiled kernel has no row scale)",
        {"kernel"},
        [tiled, rms_norm](const Assignment& a) { return !rms_norm || !tiled(a); }},
       {"kernel=tiled: a block tile holds whole heads (tl_bn a multiple of head)",
        {"kernel", "tl_bn"},
        [tiled, head](const Assignment& a) { return !tiled(a) || a.i("tl_bn") % head == 0; }},
       {"kernel=tiled: the pipeline, and the fp32 tile the epilogue rotates in the same memory, "
        "fit the most shared memory any current GPU gives a block (227 KiB)",
        {"kernel", "tl_bm", "tl_bn", "tl_bk", "tl_stages"},
        [tiled, smem_limit](const Assignment& a) {
          return !tiled(a) ||
                 std::max(gemm_tiled_ring_bytes(a.i("tl_bm"), a.i("tl_bn"), a.i("tl_bk"),
                                                a.i("tl_stages")),
                          gemm_tiled_rope_tile_bytes(a.i("tl_bm"), a.i("tl_bn"))) <= smem_limit;
        }}});
  const std::int64_t n = (*p.int_attr("q_heads") + 2 * *p.int_attr("kv_heads")) * head;
  for (Constraint& c : gemm_wgmma_constraints(m, n)) constraints.push_back(std::move(c));
  constraints.insert(
      constraints.end(),
      {{"kernel=wgmma: a block tile holds whole heads (wg_bn a multiple of head)",
        {"kernel", "wg_bn"},
        [wgmma, head](const Assignment& a) { return !wgmma(a) || a.i("wg_bn") % head == 0; }},
       fixed_unless("wgmma", "wg_staged", 0),
       {"kernel=wgmma: the ring (and wg_staged's slabs, qk_norm's weights) fit a block's 227 KiB",
        {"kernel", "wg_bm", "wg_bn", "wg_stages", "wg_staged", "wg_pingpong"},
        [wgmma, head, qk_norm](const Assignment& a) {
          return !wgmma(a) ||
                 gemm_wgmma_rope_shared_bytes(a.i("wg_bm"), a.i("wg_bn"), a.i("wg_stages"),
                                              a.i("wg_staged") == 1, a.i("wg_pingpong") == 1, head,
                                              qk_norm) <= kMaxBlockSharedBytes;
        }}});
  return Space::make(
      {Knob{"kernel", {"split", "tiled", "wgmma"}, 0, KnobKind::kStructural},
       in_place("tl_bm", {128, 64, 32, 16, 256}), in_place("tl_bn", {128, 64, 256}),
       in_place("tl_bk", {32, 64}), in_place("tl_wm", {2, 1, 4}), in_place("tl_wn", {2, 1, 4}),
       in_place("tl_stages", {3, 2, 4, 5}), in_place("tl_group", {8, 1, 4, 16}),
       in_place("wg_bm", {128, 64}), in_place("wg_bn", {128, 64, 256}),
       in_place("wg_stages", {4, 3, 5, 6, 8}), in_place("wg_tiles", gemm_wgmma_tiles_options()),
       in_place("wg_cluster", {1, 2}), in_place("wg_staged", {0, 1}),
       in_place("wg_pingpong", {0, 1})},
      std::move(constraints));
}

// x and W read once, q and the caches' new rows written once (qkv never is); 2 M N K.
OpWork gemm_rope_work(const Problem& p) {
  auto size = [&p](const char* name) { return static_cast<double>(*p.int_attr(name)); };
  const double m = size("batch") * size("seq"), k = size("hidden"),
               n = (size("q_heads") + 2 * size("kv_heads")) * size("head");
  return OpWork{2 * (m * k + n * k + m * n), 2 * m * n * k};
}

// First guesses (OpSignature::seed_configs): the wgmma form, whose GEMM measured within 0.87-1.06x
// of cuBLASLt's at the 1 x 128 layer's shapes on the H200 where the tiled kernel took 1.6-2.3x as
// long (bench/results/layer-h200-2026-12-04h.md): one consumer warpgroup and whole-head tiles as
// narrow as the head allows (the most blocks for few tokens) at the deepest ring that fits with
// the staged slabs (at 1 x 128 tokens on an H100, 64 x 128 tiles took 8.02 us with eight stages
// against 8.74 with six, bench/results/rope-epilogue-size-h100-2026-12-07.md), then, past 64
// tokens, two consumers and 256-wide tiles at four stages. A layer tune gives each kernel a few
// seconds; in grid order or from the split baseline a search would reach these late.
std::vector<std::string> gemm_rope_seeds(const Problem& p) {
  const std::int64_t head = *p.int_attr("head"), m = *p.int_attr("batch") * *p.int_attr("seq");
  std::vector<std::string> out;
  const std::int64_t narrow = std::max<std::int64_t>(head, 128);
  std::int64_t stages = 4;
  for (std::int64_t s : {8, 6, 5})
    if (gemm_wgmma_rope_shared_bytes(64, narrow, s, true, false, head, p.flag("qk_norm")) <=
        kMaxBlockSharedBytes) {
      stages = s;
      break;
    }
  out.push_back(fmt::format("kernel=wgmma,wg_bm=64,wg_bn={},wg_stages={}", narrow, stages));
  if (m > 64) {
    out.push_back("kernel=wgmma,wg_bm=128,wg_bn=256,wg_stages=4");
    // Past 64 tokens the heads the epilogue stores are many: each seed with the staged stores
    // too (wg_staged 1).
    for (std::size_t i = 0, plain = out.size(); i < plain; ++i)
      out.push_back(out[i] + ",wg_staged=1");
  }
  return out;
}

}  // namespace

const OpSignature& gemm_rope_op() {
  static const OpSignature op{
      .name = "gemm_rope",
      .sizes = {"batch", "seq", "kv", "q_heads", "kv_heads", "head", "theta", "hidden"},
      .flags = {"qk_norm"},
      .optional_flags = {"llama3_scaling", "rms_norm"},
      .dtypes = {"bf16", "fp16"},
      // theta is a size, as rope's.
      .max_size = 1 << 24,
      .baseline_config =
          "kernel=split,tl_bm=128,tl_bn=128,tl_bk=32,tl_wm=2,tl_wn=2,tl_stages=3,"
          "tl_group=8,wg_bm=128,wg_bn=128,wg_stages=4,wg_tiles=1,wg_cluster=1,wg_staged=0,"
          "wg_pingpong=0",
      // Qwen3-Embedding-0.6B's prefill of 8 x 512 tokens.
      .example_shape = "8x512x512x16x8x128x1000000x1024",
      .runtime_key = 6,
      .sweep_defaults = {{"q_heads", "32"}, {"kv_heads", "8"}, {"theta", "1000000"}},
      .sweep_default_per = {"head", "hidden"},
      .check = &check_gemm_rope,
      .space = &gemm_rope_space,
      .work = &gemm_rope_work,
      .seed_configs = &gemm_rope_seeds};
  return op;
}

}  // namespace attune::kernels
