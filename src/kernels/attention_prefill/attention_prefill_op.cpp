// attention_prefill's signature: o = softmax(q . k^T / sqrt(head) + causal mask) . v over a whole
// prompt, layout [batch, heads, seq, head] (PyTorch SDPA's), grouped-query (query head h reads KV
// head h / (q_heads / kv_heads)); query token i sees keys [0, i]. The sequence is the bucket axis:
// a tuned table ranges over prompt lengths. Its baseline is the split form a user without flash
// kernels runs: scores by a cuBLASLt batched GEMM, a softmax kernel, the value GEMM.
#include <fmt/format.h>

#include "kernels/ops.h"

namespace attune::kernels {

// Declared in kernels/plan.h, defined here with the space that bounds them (core only).
std::size_t attention_prefill_shared_bytes(std::int64_t head, std::int64_t block_n,
                                           std::int64_t consumers, std::int64_t stages);
bool attention_prefill_two_blocks_fit(std::int64_t head, std::int64_t block_n, std::int64_t stages);

std::size_t attention_prefill_shared_bytes(std::int64_t head, std::int64_t block_n,
                                           std::int64_t consumers, std::int64_t stages) {
  // 1 KB to align the tiles to the swizzle's 1024-byte period, the Q block, the K/V stages and
  // the mbarriers (q_full, full and empty per stage).
  return static_cast<std::size_t>(1024 + 64 * consumers * head * 2 +
                                  stages * 2 * block_n * head * 2 + 8 * (1 + 2 * stages));
}

bool attention_prefill_two_blocks_fit(std::int64_t head, std::int64_t block_n,
                                      std::int64_t stages) {
  return 2 * (attention_prefill_shared_bytes(head, block_n, 1, stages) +
              kBlockReservedSharedBytes) <=
         kSmSharedBytes;
}

namespace {

// The split baseline keeps every score of every head in fp32 and every weight in 16 bits (6 bytes
// per (query row, key)): at 16384 tokens and 32 query heads that is 48 GiB.
constexpr std::int64_t kMaxSeq = 16384;

Status check_attention_prefill(const Problem& p) {
  const std::int64_t seq = *p.int_attr("seq"), head = *p.int_attr("head"),
                     q_heads = *p.int_attr("q_heads"), kv_heads = *p.int_attr("kv_heads");
  if (head != 64 && head != 128)
    return Error::invalid_argument(
        fmt::format("attention_prefill head={} is not supported (64, 128)", head));
  if (q_heads % kv_heads != 0)
    return Error::invalid_argument(fmt::format(
        "attention_prefill q_heads={} is not a multiple of kv_heads={} (grouped-query attention "
        "shares each KV head among q_heads / kv_heads query heads)",
        q_heads, kv_heads));
  if (seq > kMaxSeq)
    return Error::invalid_argument(fmt::format(
        "attention_prefill seq={} is more than {} (the split baseline holds every score)", seq,
        kMaxSeq));
  return Status::success();
}

// The kernel fork first: the wgmma knobs are free only under it, so the split baseline is one
// config. block_n: keys per tile; consumers: warpgroups of 64 query rows (a block of 64 or 128
// rows, plus the producer warpgroup); stages: K/V tiles in flight; overlap: a tile's scores
// issued with the previous tile's P V, the softmax hidden behind it; blocks_per_sm: the blocks
// the registers are budgeted for (2: a block of one consumer loads its Q and first tiles while
// the other computes, which short prompts' many small blocks want; shared memory for two).
Result<Space> attention_prefill_space(const Problem& p) {
  const std::int64_t head = *p.int_attr("head"), seq = *p.int_attr("seq");
  auto fixed_unless_wgmma = [](const char* name, std::int64_t fixed) {
    return Constraint{fmt::format("{} is fixed unless kernel=wgmma", name),
                      {"kernel", name},
                      [name, fixed](const Assignment& a) {
                        return a["kernel"].as_word() == "wgmma" || a.i(name) == fixed;
                      }};
  };
  auto wgmma = [](const Assignment& a) { return a["kernel"].as_word() == "wgmma"; };
  return Space::make(
      {Knob{"kernel", {"split", "wgmma"}, 0, KnobKind::kStructural},
       Knob{"block_n", {128, 64}, 0, KnobKind::kInPlace},
       Knob{"consumers", {2, 1}, 0, KnobKind::kInPlace},
       Knob{"stages", {2, 3, 4}, 0, KnobKind::kInPlace},
       Knob{"overlap", {1, 0}, 0, KnobKind::kInPlace},
       Knob{"blocks_per_sm", {1, 2}, 0, KnobKind::kInPlace}},
      {fixed_unless_wgmma("block_n", 128),
       fixed_unless_wgmma("consumers", 2),
       fixed_unless_wgmma("stages", 2),
       fixed_unless_wgmma("overlap", 1),
       fixed_unless_wgmma("blocks_per_sm", 1),
       {"blocks_per_sm=2: one consumer warpgroup, and shared memory for two blocks on an SM",
        {"consumers", "block_n", "stages", "blocks_per_sm"},
        [head](const Assignment& a) {
          return a.i("blocks_per_sm") == 1 ||
                 (a.i("consumers") == 1 &&
                  attention_prefill_two_blocks_fit(head, a.i("block_n"), a.i("stages")));
        }},
       {"kernel=wgmma: the Q block and K/V stages fit a block's 227 KB of shared memory",
        {"kernel", "block_n", "consumers", "stages"},
        [wgmma, head](const Assignment& a) {
          return !wgmma(a) || attention_prefill_shared_bytes(head, a.i("block_n"), a.i("consumers"),
                                                             a.i("stages")) <= kMaxBlockSharedBytes;
        }},
       {"kernel=wgmma: a key tile no longer than twice the sequence",
        {"kernel", "block_n"},
        [wgmma, seq](const Assignment& a) {
          return !wgmma(a) || a.i("block_n") == 64 || a.i("block_n") < 2 * seq;
        }}});
}

// q, k, v and o once; causal QK^T and PV: half of 4 seq^2 head per query head.
OpWork attention_prefill_work(const Problem& p) {
  const double seq = static_cast<double>(*p.int_attr("seq")),
               batch = static_cast<double>(*p.int_attr("batch")),
               head = static_cast<double>(*p.int_attr("head")),
               q_heads = static_cast<double>(*p.int_attr("q_heads")),
               kv_heads = static_cast<double>(*p.int_attr("kv_heads"));
  return OpWork{2 * batch * seq * head * (2 * q_heads + 2 * kv_heads),
                2 * batch * q_heads * seq * seq * head};
}

// First guesses (OpSignature::seed_configs): the configs that were fastest where the whole space
// was measured. Head 128: two consumer warpgroups of 64-key tiles with 4 stages and the overlap
// won at 6 of 10 bench cells on the H200 (seq 128-1024 at every batch; bench/results/
// attention_prefill-h200-2026-12-02.md) and at seq 512 on an H100; 128-key tiles with 3 stages
// at seq 4096 on both; one consumer with two blocks per SM at seq 128 x 16 x 32 heads on an H100
// (h100-2026-12-06b.md). Long prompts try the 128-key tiles first. Head 64: one consumer wins on
// every head-64 space brute-forced on an H100 (bench/spaces/attention_prefill_h100_*_h64*: 64-key
// tiles with 4 stages and the overlap at 256 and 512 tokens, 128-key tiles with 3 stages and two
// blocks per SM at 1024 and 2048, where two consumers of 128-key tiles, head 128's long-prompt
// guess, come second). Head 128 with few blocks of two consumers (128 query rows each; fewer
// than 256, two per SM of a 128-SM-class GPU) tries one consumer of the short tiles second: half
// the rows per block, twice the blocks, and causal attention's uneven blocks spread over more SMs
// (it won at 1024 tokens x 16 heads on an H100 and an H200, 128 blocks of two consumers, and the
// 1 x 128 layer's tunes chose one consumer; search_replay-2026-12-06e.md). Head 64 with as few
// blocks (fewer than 256 of two consumers) tries one consumer of 128-key tiles at one block per
// SM first, with and without the overlap: two blocks per SM were 16-22% slower on the two such
// H100 spaces (1024 tokens x 2 x 8 heads, 768 x 1 x 16), and the overlap's absence 0-3% faster;
// the H200's 1024 x 2 x 8 space agrees (search_replay-2026-12-06f.md). A guess the space
// refuses (a 128-key tile past twice a short prompt, or blocks_per_sm on a space recorded before
// it) is left out.
std::vector<std::string> attention_prefill_seeds(const Problem& p) {
  const std::int64_t seq = *p.int_attr("seq");
  const std::int64_t two_consumer_blocks =
      *p.int_attr("batch") * *p.int_attr("q_heads") * ((seq + 127) / 128);
  const std::string short_tiles = "kernel=wgmma,block_n=64,consumers=2,stages=4,overlap=1",
                    long_tiles = "kernel=wgmma,block_n=128,consumers=2,stages=3,overlap=1",
                    one_short = "kernel=wgmma,block_n=64,consumers=1,stages=4,overlap=1",
                    two_blocks =
                        "kernel=wgmma,block_n=64,consumers=1,stages=2,overlap=1,blocks_per_sm=2";
  if (*p.int_attr("head") == 64) {
    const std::string one_long =
        "kernel=wgmma,block_n=128,consumers=1,stages=3,overlap=1,blocks_per_sm=2";
    // Few blocks: one block per SM, whose register budget two per SM would halve for nothing.
    if (two_consumer_blocks < 256)
      return {"kernel=wgmma,block_n=128,consumers=1,stages=3,overlap=1",
              "kernel=wgmma,block_n=128,consumers=1,stages=2,overlap=0", one_long, one_short};
    if (seq >= 1024) return {one_long, long_tiles, one_short};
    return {one_short, one_long};
  }
  if (seq >= 2048) return {long_tiles, short_tiles, two_blocks};
  if (two_consumer_blocks < 256) return {short_tiles, one_short, long_tiles, two_blocks};
  return {short_tiles, long_tiles, two_blocks};
}

}  // namespace

const OpSignature& attention_prefill_op() {
  static const OpSignature op{
      .name = "attention_prefill",
      .sizes = {"seq", "batch", "head", "q_heads", "kv_heads"},
      .flags = {},
      .dtypes = {"bf16", "fp16"},
      .max_size = 1 << 20,
      .baseline_config = "kernel=split,block_n=128,consumers=2,stages=2,overlap=1,blocks_per_sm=1",
      .example_shape = "4096x1x128x32x8",
      .runtime_key = 3,
      .sweep_defaults = {{"batch", "1"}, {"q_heads", "32"}, {"kv_heads", "8"}},
      .sweep_default_per = {"head"},
      .check = &check_attention_prefill,
      .space = &attention_prefill_space,
      .work = &attention_prefill_work,
      .seed_configs = &attention_prefill_seeds};
  return op;
}

}  // namespace attune::kernels
