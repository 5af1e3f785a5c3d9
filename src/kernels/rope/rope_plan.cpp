// rope's kernel plans, both in rope.cu: the chain baseline (the norm kernel when qk_norm, the
// rotate kernel and the V copy, one launch each, through a workspace holding the normalized
// heads) and the fused kernel (norm, rotation and the cache writes in one launch: grid x over
// the tokens, y over the blocks a token's heads are split over).
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "kernels/plan.h"
#include "kernels/plan_knobs.h"

namespace attune::kernels {

extern const char* const kRopeSource;
extern const char* const kRopeHeader;

namespace {

constexpr std::int64_t kMaxGridX = 2147483647;

// -DNAME=<value>f, a float literal whatever the value ("16.0000000f", never "16f", which is not
// one).
std::string float_define(const char* name, double value) {
  return fmt::format("-D{}={:#.9g}f", name, value);
}

KernelPlan base_plan(const RopeShape& s) {
  KernelPlan p;
  p.build.source = kRopeSource;
  p.build.source_name = "rope.cu";
  p.build.options = {fmt::format("-DT={}", type_of(s.bf16))};
  const std::vector<std::string> rope = rope_defines(s);
  p.build.options.insert(p.build.options.end(), rope.begin(), rope.end());
  p.build.headers = {launch_header(), {"attune_rope.cuh", kRopeHeader}};
  return p;
}

Result<Plan> plan_chain(const RopeShape& s) {
  const std::int64_t qk_elems = s.tokens() * (s.q_heads + s.kv_heads) * s.head;
  const std::int64_t v_elems = s.tokens() * s.kv_heads * s.head;
  if ((qk_elems + 255) / 256 > kMaxGridX || s.tokens() * (s.q_heads + s.kv_heads) > kMaxGridX)
    return Error::invalid_argument(
        fmt::format("rope: {} tokens of {} heads exceed a launch's grid", s.tokens(), s.heads()));
  KernelPlan p = base_plan(s);
  p.build.name_expressions = {"rope_chain_rotate", "rope_chain_copy_v"};
  if (s.qk_norm) {
    p.build.name_expressions.insert(p.build.name_expressions.begin(), "rope_chain_norm");
    p.steps.push_back({"rope_chain_norm",
                       {static_cast<unsigned>(s.tokens() * (s.q_heads + s.kv_heads))},
                       {static_cast<unsigned>(s.head)},
                       0,
                       {"workspace", "qkv", "q_norm", "k_norm", "eps"}});
    p.workspace_bytes = static_cast<std::size_t>(qk_elems) * 2;
  }
  p.steps.push_back({"rope_chain_rotate",
                     {ceil_div(qk_elems, 256)},
                     {256},
                     0,
                     {"q", "k", "qkv", "workspace", "rows", "seq", "kv"}});
  p.steps.push_back(
      {"rope_chain_copy_v", {ceil_div(v_elems, 256)}, {256}, 0, {"v", "qkv", "rows", "seq", "kv"}});
  return Plan{std::move(p)};
}

Result<Plan> plan_fused(const RopeShape& s, const Config& c) {
  ATTUNE_ASSIGN(std::int64_t vec, knob(c, "vec"));
  ATTUNE_ASSIGN(std::int64_t groups, knob(c, "head_groups"));
  ATTUNE_ASSIGN(std::int64_t head_blocks, knob(c, "head_blocks"));
  ATTUNE_ASSIGN(std::int64_t tokens, knob(c, "tokens"));
  const std::int64_t lanes = s.head / 2 / std::max<std::int64_t>(vec, 1);
  if ((vec != 1 && vec != 2 && vec != 4 && vec != 8) || lanes > 32 || groups < 1 || groups > 32 ||
      lanes * groups > 1024 || head_blocks < 1 || head_blocks > 64 || tokens < 1 || tokens > 16)
    return Error::invalid_argument(fmt::format(
        "rope config '{}': kernel=fused takes vec 1, 2, 4 or 8 with head / 2 / vec <= 32, "
        "head_groups 1-32, head_blocks 1-64, tokens 1-16",
        c.text()));
  KernelPlan p = base_plan(s);
  p.build.options.insert(p.build.options.end(),
                         {fmt::format("-DVEC={}", vec), fmt::format("-DHEAD_GROUPS={}", groups),
                          fmt::format("-DTOKENS={}", tokens)});
  p.build.name_expressions = {"rope_fused"};
  p.steps.push_back({"rope_fused",
                     {ceil_div(s.tokens(), tokens), static_cast<unsigned>(head_blocks)},
                     {static_cast<unsigned>(lanes), static_cast<unsigned>(groups)},
                     0,
                     {"q", "k", "v", "qkv", "q_norm", "k_norm", "rows", "seq", "kv", "eps"}});
  return Plan{std::move(p)};
}

}  // namespace

std::vector<std::string> rope_defines(const RopeShape& s) {
  std::vector<std::string> d = {
      fmt::format("-DHEAD={}", s.head), fmt::format("-DQ_HEADS={}", s.q_heads),
      fmt::format("-DKV_HEADS={}", s.kv_heads), fmt::format("-DQK_NORM={}", s.qk_norm ? 1 : 0),
      float_define("LOG2_THETA", std::log2(static_cast<double>(s.theta)))};
  if (s.llama3_scaling) {
    const Llama3RopeScaling& l = kLlama3RopeScaling;
    d.insert(d.end(), {"-DLLAMA3_SCALING=1", float_define("LLAMA3_FACTOR", l.factor),
                       float_define("LLAMA3_LOW", l.low_freq_factor),
                       float_define("LLAMA3_HIGH", l.high_freq_factor),
                       float_define("LLAMA3_ORIGINAL",
                                    static_cast<double>(l.original_max_position_embeddings))});
  }
  return d;
}

Result<RopeShape> rope_shape(const Problem& p) {
  ATTUNE_ASSIGN(HalfShape h, half_shape(p, rope_op()));
  RopeShape s{h.sizes[0], h.sizes[1], h.sizes[2], h.sizes[3], h.sizes[4],
              h.sizes[5], h.sizes[6], h.bf16,     h.flag,     p.flag("llama3_scaling")};
  if (s.kv_heads <= 0 || s.q_heads % s.kv_heads != 0 || s.seq > s.kv ||
      (s.head != 64 && s.head != 128 && s.head != 256) || s.theta < 2)
    return Error::invalid_argument("rope problem " + p.text() +
                                   ": head 64, 128 or 256, q_heads a multiple of kv_heads, seq <= "
                                   "kv, theta >= 2");
  return s;
}

Result<Plan> plan_rope(const Problem& problem, const Config& config) {
  ATTUNE_ASSIGN(RopeShape s, rope_shape(problem));
  const Value* kernel = config.get("kernel");
  if (!kernel)
    return Error::invalid_argument(
        fmt::format("rope config '{}' has no knob 'kernel'", config.text()));
  const std::string k = kernel->as_word();
  if (k == "chain") return plan_chain(s);
  if (k == "fused") return plan_fused(s, config);
  return Error::invalid_argument(
      fmt::format("rope config '{}': unknown kernel '{}'", config.text(), k));
}

}  // namespace attune::kernels
