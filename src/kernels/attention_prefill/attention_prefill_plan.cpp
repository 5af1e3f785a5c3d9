// attention_prefill's kernel plans: the wgmma flash kernel (attention_prefill_flash.cu) and the
// split baseline (split_attention_plan, kernels/plan.h: scores by a cuBLASLt batched GEMM, the
// decode family's softmax kernel with every query token of the prompt as a new token, the value
// GEMM), both over the layout of attention_prefill_op.cpp.
#include <fmt/format.h>

#include "kernels/plan.h"
#include "kernels/plan_knobs.h"

namespace attune::kernels {

extern const char* const kAttentionPrefillFlashSource;
extern const char* const kWgmmaHeader;

namespace {

constexpr std::int64_t kMaxGridYz = 65535;

Result<Plan> plan_wgmma(const AttentionPrefillShape& s, const Config& c) {
  ATTUNE_ASSIGN(std::int64_t block_n, knob(c, "block_n"));
  ATTUNE_ASSIGN(std::int64_t consumers, knob(c, "consumers"));
  ATTUNE_ASSIGN(std::int64_t stages, knob(c, "stages"));
  ATTUNE_ASSIGN(std::int64_t overlap, knob(c, "overlap"));
  const std::int64_t blocks_per_sm = knob_or(c, "blocks_per_sm", 1);
  if ((block_n != 64 && block_n != 128) || (consumers != 1 && consumers != 2) || stages < 2 ||
      stages > 4 || (overlap != 0 && overlap != 1) || (blocks_per_sm != 1 && blocks_per_sm != 2))
    return Error::invalid_argument(fmt::format(
        "attention_prefill config '{}': kernel=wgmma takes block_n 64 or 128, consumers 1 or 2, "
        "stages 2-4, overlap 0 or 1, blocks_per_sm 1 or 2",
        c.text()));
  if (blocks_per_sm == 2 &&
      (consumers != 1 || !attention_prefill_two_blocks_fit(s.head, block_n, stages)))
    return Error::invalid_argument(fmt::format(
        "attention_prefill config '{}': blocks_per_sm=2 takes one consumer warpgroup and shared "
        "memory that two blocks fit on an SM",
        c.text()));
  const std::size_t shared = attention_prefill_shared_bytes(s.head, block_n, consumers, stages);
  if (shared > kMaxBlockSharedBytes)
    return Error::invalid_argument(fmt::format(
        "attention_prefill config '{}': {} bytes of shared memory, more than a block gets ({})",
        c.text(), shared, kMaxBlockSharedBytes));
  const std::int64_t blocks = ceil_div(s.seq, 64 * consumers);
  if (blocks > kMaxGridYz || s.batch > kMaxGridYz)
    return Error::invalid_argument(
        fmt::format("attention_prefill: {} row blocks of {} sequences exceed a launch's grid",
                    blocks, s.batch));
  KernelPlan p;
  p.build.source = kAttentionPrefillFlashSource;
  p.build.source_name = "attention_prefill_flash.cu";
  p.build.options = {fmt::format("-DT={}", type_of(s.bf16)),
                     fmt::format("-DBF16={}", s.bf16 ? 1 : 0),
                     fmt::format("-DHEAD={}", s.head),
                     fmt::format("-DGROUP={}", s.group()),
                     fmt::format("-DBLOCK_N={}", block_n),
                     fmt::format("-DCONSUMERS={}", consumers),
                     fmt::format("-DSTAGES={}", stages),
                     fmt::format("-DOVERLAP={}", overlap),
                     fmt::format("-DMIN_BLOCKS={}", blocks_per_sm)};
  p.build.name_expressions = {"attn_prefill_wgmma"};
  p.build.headers = {launch_header(), {"attune_wgmma.cuh", kWgmmaHeader}};
  // Grid x over the query heads, so the heads that share a KV head run side by side and read its
  // tiles through L2 once; y over the row blocks (the kernel takes them heaviest first).
  p.steps.push_back({"attn_prefill_wgmma",
                     {static_cast<unsigned>(s.q_heads), static_cast<unsigned>(blocks),
                      static_cast<unsigned>(s.batch)},
                     {static_cast<unsigned>(128 * (consumers + 1))},
                     static_cast<unsigned>(shared),
                     {"o", "q", "k", "v", "kv"}});
  return Plan{std::move(p)};
}

}  // namespace

Result<AttentionPrefillShape> attention_prefill_shape(const Problem& p) {
  ATTUNE_ASSIGN(HalfShape h, half_shape(p, attention_prefill_op()));
  AttentionPrefillShape s{h.sizes[0], h.sizes[1], h.sizes[2], h.sizes[3], h.sizes[4], h.bf16};
  if (s.kv_heads <= 0 || s.q_heads % s.kv_heads != 0)
    return Error::invalid_argument("attention_prefill problem " + p.text() +
                                   ": q_heads must be a multiple of kv_heads");
  return s;
}

Result<Plan> plan_attention_prefill(const Problem& problem, const Config& config) {
  ATTUNE_ASSIGN(AttentionPrefillShape s, attention_prefill_shape(problem));
  const Value* kernel = config.get("kernel");
  if (!kernel)
    return Error::invalid_argument(
        fmt::format("attention_prefill config '{}' has no knob 'kernel'", config.text()));
  const std::string k = kernel->as_word();
  // Per (sequence, KV head) the group's query rows are contiguous in q: GROUP * seq rows; with
  // Q_LEN = seq, softmax row r is token r % seq, which sees keys [0, r % seq]: the causal mask.
  if (k == "split")
    return Plan{split_attention_plan(
        {s.group() * s.seq, s.seq, s.head, s.batch * s.kv_heads, s.rows(), s.seq, s.bf16})};
  if (k == "wgmma") return plan_wgmma(s, config);
  return Error::invalid_argument(
      fmt::format("attention_prefill config '{}': unknown kernel '{}'", config.text(), k));
}

}  // namespace attune::kernels
