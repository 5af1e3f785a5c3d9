// rope's signature: rotary position embedding (rotate-half, the NeoX form Llama and Qwen3 use) on
// the QKV GEMM's output qkv [batch * seq, (q_heads + 2 * kv_heads) * head] (row b * seq + s, heads
// in the order q, k, v), writing q [batch, q_heads, seq, head] and k and v into the caches
// [batch, kv_heads, kv, head] at positions kv - seq .. kv - 1 (the layout attention_prefill and
// attention_decode read; a prefill is kv == seq). Token s of sequence b sits at position
// kv - seq + s: pair (i, i + head / 2) is rotated by pos * theta^(-2i / head). Flag qk_norm: each
// q and k head is first RMS-normalized over head with its weight (q_norm, k_norm; eps 1e-6, as
// Qwen3). Optional flag llama3_scaling: the frequencies get Llama 3.1's rewrite (rope_scaling
// with rope_type "llama3", factor 8, low_freq_factor 1, high_freq_factor 4,
// original_max_position_embeddings 8192: kLlama3RopeScaling in kernels/ops.h). Its baseline is the
// unfused form a user runs: a norm kernel, a rotate kernel and a V copy, one thread per element
// (the norm one block per head), each a launch of its own.
#include <fmt/format.h>

#include "kernels/ops.h"

namespace attune::kernels {

namespace {

// Sizes' joint rules, one line each: what the kernels are written for.
Status check_rope(const Problem& p) {
  const std::int64_t seq = *p.int_attr("seq"), kv = *p.int_attr("kv"), head = *p.int_attr("head"),
                     q_heads = *p.int_attr("q_heads"), kv_heads = *p.int_attr("kv_heads"),
                     theta = *p.int_attr("theta");
  if (head != 64 && head != 128 && head != 256)
    return Error::invalid_argument(
        fmt::format("rope head={} is not supported (64, 128, 256)", head));
  if (q_heads % kv_heads != 0)
    return Error::invalid_argument(fmt::format(
        "rope q_heads={} is not a multiple of kv_heads={} (grouped-query attention shares each KV "
        "head among q_heads / kv_heads query heads)",
        q_heads, kv_heads));
  if (seq > kv)
    return Error::invalid_argument(fmt::format(
        "rope seq={} is more than kv={} (the cache holds the new tokens; a prefill is kv == seq)",
        seq, kv));
  if (theta < 2)
    return Error::invalid_argument(
        fmt::format("rope theta={} is not a RoPE base (Llama-3: 500000, Qwen3: 1000000)", theta));
  return Status::success();
}

// The kernel fork first: the fused kernel's knobs are free only under it, so the chain baseline
// is one config. vec: rotation pairs per lane (head / 2 / vec lanes hold a head); head_groups:
// heads a block works on side by side; head_blocks: blocks a token's heads are split over (the
// grid's y; a decode step of a few tokens needs them to fill the SMs); tokens: tokens per block,
// walked in turn. Each head group of each block computes the token's angles once.
Result<Space> rope_space(const Problem& p) {
  const std::int64_t head = *p.int_attr("head"),
                     heads = *p.int_attr("q_heads") + 2 * *p.int_attr("kv_heads"),
                     tokens = *p.int_attr("batch") * *p.int_attr("seq");
  auto fixed_unless_fused = [](const char* name, std::int64_t fixed) {
    return Constraint{fmt::format("{} is fixed unless kernel=fused", name),
                      {"kernel", name},
                      [name, fixed](const Assignment& a) {
                        return a["kernel"].as_word() == "fused" || a.i(name) == fixed;
                      }};
  };
  auto fused = [](const Assignment& a) { return a["kernel"].as_word() == "fused"; };
  return Space::make(
      {Knob{"kernel", {"chain", "fused"}, 0, KnobKind::kStructural},
       Knob{"vec", {1, 2, 4, 8}, 0, KnobKind::kInPlace},
       Knob{"head_groups", {1, 2, 4, 8}, 0, KnobKind::kInPlace},
       Knob{"head_blocks", {1, 2, 4, 8}, 0, KnobKind::kInPlace},
       Knob{"tokens", {1, 2, 4}, 0, KnobKind::kInPlace}},
      {fixed_unless_fused("vec", 1),
       fixed_unless_fused("head_groups", 1),
       fixed_unless_fused("head_blocks", 1),
       fixed_unless_fused("tokens", 1),
       {"kernel=fused: a head's lanes in one warp (head / 2 / vec <= 32, the norm's shuffles)",
        {"kernel", "vec"},
        [fused, head](const Assignment& a) { return !fused(a) || head / 2 / a.i("vec") <= 32; }},
       {"kernel=fused: head_groups * head_blocks <= q_heads + 2 * kv_heads (no idle head group)",
        {"kernel", "head_groups", "head_blocks"},
        [fused, heads](const Assignment& a) {
          return !fused(a) || a.i("head_groups") * a.i("head_blocks") <= heads;
        }},
       {"kernel=fused: tokens <= batch * seq",
        {"kernel", "tokens"},
        [fused, tokens](const Assignment& a) { return !fused(a) || a.i("tokens") <= tokens; }}});
}

// qkv read once; q, and k and v into the caches, written once.
OpWork rope_work(const Problem& p) {
  const double tokens =
      static_cast<double>(*p.int_attr("batch")) * static_cast<double>(*p.int_attr("seq"));
  const double heads = static_cast<double>(*p.int_attr("q_heads") + 2 * *p.int_attr("kv_heads"));
  const double elems = tokens * heads * static_cast<double>(*p.int_attr("head"));
  return OpWork{2 * 2 * elems, 8 * elems};
}

}  // namespace

const OpSignature& rope_op() {
  static const OpSignature op{
      .name = "rope",
      .sizes = {"batch", "seq", "kv", "q_heads", "kv_heads", "head", "theta"},
      .flags = {"qk_norm"},
      .optional_flags = {"llama3_scaling"},
      .dtypes = {"bf16", "fp16"},
      // theta is a size too: Qwen3's base of 1000000 fits.
      .max_size = 1 << 24,
      .baseline_config = "kernel=chain,vec=1,head_groups=1,head_blocks=1,tokens=1",
      // Qwen3-Embedding-0.6B's prefill of 8 x 512 tokens.
      .example_shape = "8x512x512x16x8x128x1000000",
      .runtime_key = 4,
      .sweep_defaults = {{"q_heads", "32"}, {"kv_heads", "8"}, {"theta", "1000000"}},
      .sweep_default_per = {"head"},
      .check = &check_rope,
      .space = &rope_space,
      .work = &rope_work};
  return op;
}

}  // namespace attune::kernels
