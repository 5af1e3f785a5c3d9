// attention_prefill's kernel plans without a GPU: the wgmma kernel's grid (query heads, row blocks,
// sequences), block (a producer warpgroup plus the consumers) and shared memory; the split
// baseline's chain of two batched cuBLASLt matmuls around the softmax with the prompt's tokens as
// its new tokens; the op's refusals; and its one space, which the CUDA family and the sim share.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/config.h"
#include "core/problem.h"
#include "kernels/plan.h"
#include "kernels/plan_launch.h"

namespace attune::kernels {
namespace {

Problem problem(const std::string& spec) {
  auto p = attention_prefill_op().resolve(*Problem::parse(spec));
  EXPECT_TRUE(p.ok()) << p.error().message();
  return *p;
}

Plan planned(const std::string& spec, const std::string& config) {
  auto plan = plan_attention_prefill(problem(spec), *Config::parse(config));
  EXPECT_TRUE(plan.ok()) << plan.error().message();
  return plan ? *plan : Plan{};
}

bool has_option(const cuda::BuildRequest& b, const std::string& o) {
  return std::find(b.options.begin(), b.options.end(), o) != b.options.end();
}

TEST(AttentionPrefillPlan, WgmmaIsOneLaunchPerHeadRowBlockAndSequence) {
  // 1000 tokens in blocks of 128 rows: 8 row blocks, the last one partly past the prompt.
  const Plan p = planned("attention_prefill:seq=1000,batch=3,head=128,q_heads=16,kv_heads=4",
                         "kernel=wgmma,block_n=64,consumers=2,stages=3,overlap=1");
  const auto& kp = std::get<KernelPlan>(p);
  ASSERT_EQ(kp.steps.size(), 1u);
  const LaunchStep& s = kp.steps[0];
  EXPECT_EQ(s.kernel, "attn_prefill_wgmma");
  EXPECT_EQ(s.grid.x, 16u);  // query heads side by side: a KV head's group shares its tiles in L2
  EXPECT_EQ(s.grid.y, 8u);
  EXPECT_EQ(s.grid.z, 3u);
  EXPECT_EQ(s.block.x, 384u);  // producer + 2 consumer warpgroups
  EXPECT_EQ(s.shared_bytes, attention_prefill_shared_bytes(128, 64, 2, 3));
  EXPECT_EQ(s.shared_bytes, 1024u + 128 * 128 * 2 + 3 * 2 * 64 * 128 * 2 + 8 * 7);
  EXPECT_EQ(s.args, (std::vector<std::string>{"o", "q", "k", "v", "kv"}));
  EXPECT_EQ(kp.workspace_bytes, 0u);
  for (const char* o : {"-DT=__nv_bfloat16", "-DBF16=1", "-DHEAD=128", "-DGROUP=4", "-DBLOCK_N=64",
                        "-DCONSUMERS=2", "-DSTAGES=3", "-DOVERLAP=1"})
    EXPECT_TRUE(has_option(kp.build, o)) << o;
  // The sequence is an argument, not a define: one build serves every prompt length.
  for (const auto& o : kp.build.options) EXPECT_EQ(o.find("1000"), std::string::npos) << o;
}

TEST(AttentionPrefillPlan, OneConsumerHalvesTheRowBlock) {
  const Plan p =
      planned("attention_prefill:seq=1000,batch=1,head=64,q_heads=8,kv_heads=8,dtype=fp16",
              "kernel=wgmma,block_n=128,consumers=1,stages=2,overlap=0");
  const auto& kp = std::get<KernelPlan>(p);
  EXPECT_EQ(kp.steps[0].grid.y, 16u);  // ceil(1000 / 64)
  EXPECT_EQ(kp.steps[0].block.x, 256u);
  EXPECT_TRUE(has_option(kp.build, "-DT=__half"));
  EXPECT_TRUE(has_option(kp.build, "-DBF16=0"));
  EXPECT_TRUE(has_option(kp.build, "-DGROUP=1"));
  EXPECT_TRUE(has_option(kp.build, "-DOVERLAP=0"));
}

TEST(AttentionPrefillPlan, TwoBlocksPerSmBudgetTheRegistersForTwoOneConsumerBlocks) {
  const std::string spec = "attention_prefill:seq=512,batch=8,head=128,q_heads=16,kv_heads=8";
  const Plan two = planned(spec,
                           "kernel=wgmma,block_n=64,consumers=1,stages=2,overlap=1,"
                           "blocks_per_sm=2");
  const auto& kp = std::get<KernelPlan>(two);
  EXPECT_TRUE(has_option(kp.build, "-DMIN_BLOCKS=2"));
  EXPECT_EQ(kp.steps[0].block.x, 256u);
  // Two blocks and their system reserve fit the SM's shared memory.
  EXPECT_LE(2 * (kp.steps[0].shared_bytes + kBlockReservedSharedBytes), kSmSharedBytes);
  // A row written before the knob existed: one block per SM, as the kernel then budgeted.
  const Plan old = planned(spec, "kernel=wgmma,block_n=64,consumers=1,stages=2,overlap=1");
  EXPECT_TRUE(has_option(std::get<KernelPlan>(old).build, "-DMIN_BLOCKS=1"));
  for (const char* bad :
       {"kernel=wgmma,block_n=64,consumers=2,stages=2,overlap=1,blocks_per_sm=2",
        "kernel=wgmma,block_n=64,consumers=1,stages=3,overlap=1,blocks_per_sm=2",
        "kernel=wgmma,block_n=64,consumers=1,stages=2,overlap=1,blocks_per_sm=3"}) {
    auto refused = plan_attention_prefill(problem(spec), *Config::parse(bad));
    ASSERT_FALSE(refused.ok()) << bad;
    EXPECT_NE(refused.error().message().find("blocks_per_sm"), std::string::npos) << bad;
  }
}

// The first guesses are wgmma configs of the space, each planned, in an order that follows the
// head size and the prompt: head 128 takes two consumers of 128-key tiles first from 2048 tokens,
// 64-key tiles below, and two blocks per SM last, and below 256 blocks of two consumers one
// consumer of 64-key tiles second; head 64 one consumer, 128-key tiles with two blocks per SM
// first from 1024 tokens. A prompt too short for a 128-key tile leaves those out.
TEST(AttentionPrefillPlan, TheFirstGuessesAreWgmmaConfigsOfTheSpace) {
  ASSERT_NE(attention_prefill_op().seed_configs, nullptr);
  struct Case {
    const char* spec;
    std::vector<std::string> expected;  // block_n/consumers/blocks_per_sm of each guess
  };
  const Case cases[] = {
      {"attention_prefill:seq=4096,batch=1,head=128,q_heads=32,kv_heads=8",
       {"128/2/1", "64/2/1", "64/1/2"}},
      {"attention_prefill:seq=512,batch=8,head=128,q_heads=16,kv_heads=8",
       {"64/2/1", "128/2/1", "64/1/2"}},
      // 1024 tokens x 16 heads: 128 blocks of two consumers; 1000 x 2 x 16: 256.
      {"attention_prefill:seq=1024,batch=1,head=128,q_heads=16,kv_heads=8",
       {"64/2/1", "64/1/1", "128/2/1", "64/1/2"}},
      {"attention_prefill:seq=1000,batch=2,head=128,q_heads=16,kv_heads=8",
       {"64/2/1", "128/2/1", "64/1/2"}},
      {"attention_prefill:seq=2048,batch=1,head=64,q_heads=16,kv_heads=16",
       {"128/1/2", "128/2/1", "64/1/1"}},
      {"attention_prefill:seq=512,batch=2,head=64,q_heads=32,kv_heads=8", {"64/1/1", "128/1/2"}},
      // Head 64 with fewer than 256 blocks of two consumers (2 x 8 x 8 = 128): one block per SM
      // first; a short prompt refuses the 128-key tiles and keeps the short ones.
      {"attention_prefill:seq=1024,batch=2,head=64,q_heads=8,kv_heads=2",
       {"128/1/1", "128/1/1", "128/1/2", "64/1/1"}},
      {"attention_prefill:seq=33,batch=2,head=64,q_heads=8,kv_heads=2", {"64/1/1"}},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.spec);
    const Problem p = problem(k.spec);
    auto space = attention_prefill_op().space(p);
    ASSERT_TRUE(space.ok());
    std::vector<std::string> got;
    for (const std::string& seed : attention_prefill_op().seed_configs(p)) {
      auto pt = space->point_over_baseline(*Config::parse(seed));
      ASSERT_TRUE(pt.ok()) << seed;
      if (!space->prefix_legal(*pt)) continue;
      const Config c = space->config(*pt);
      EXPECT_EQ(c.get("kernel")->as_word(), "wgmma") << c.text();
      EXPECT_TRUE(space->point(c).ok()) << c.text();
      EXPECT_TRUE(plan_attention_prefill(p, c).ok()) << c.text();
      got.push_back(std::to_string(c.get("block_n")->as_int()) + "/" +
                    std::to_string(c.get("consumers")->as_int()) + "/" +
                    std::to_string(c.get("blocks_per_sm")->as_int()));
    }
    EXPECT_EQ(got, k.expected);
  }
}

TEST(AttentionPrefillPlan, SplitBaselineIsScoresSoftmaxValuesWithEveryTokenNew) {
  const Plan p = planned("attention_prefill:seq=300,batch=2,head=64,q_heads=8,kv_heads=2",
                         "kernel=split,block_n=128,consumers=2,stages=2,overlap=1");
  const auto& cp = std::get<ChainPlan>(p);
  ASSERT_EQ(cp.steps.size(), 3u);
  const auto& qk = std::get<LtMatmul>(cp.steps[0]);
  // Per (sequence, KV head): the group's 4 query heads x 300 tokens against 300 keys.
  EXPECT_EQ(qk.m, 4 * 300);
  EXPECT_EQ(qk.n, 300);
  EXPECT_EQ(qk.k, 64);
  EXPECT_EQ(qk.batch, 2 * 2);
  EXPECT_TRUE(qk.b_transposed);
  EXPECT_TRUE(qk.c_fp32);
  EXPECT_EQ(qk.a.stride, 4 * 300 * 64);
  EXPECT_EQ(qk.b.stride, 300 * 64);
  const auto& sm = std::get<LaunchStep>(cp.steps[1]);
  EXPECT_EQ(sm.grid.x, 2u * 8 * 300);  // one block per score row
  EXPECT_EQ(sm.args, (std::vector<std::string>{"workspace", "kv", "rows"}));
  // The softmax's causal rule: row r is token r % Q_LEN and sees keys [0, r % Q_LEN].
  EXPECT_TRUE(has_option(cp.build, "-DQ_LEN=300"));
  const auto& pv = std::get<LtMatmul>(cp.steps[2]);
  EXPECT_EQ(pv.n, 64);
  EXPECT_EQ(pv.k, 300);
  EXPECT_FALSE(pv.b_transposed);
  EXPECT_EQ(pv.c.arg, "o");
  const std::size_t scores = 2 * 8 * 300 * 300 * 4, probs = 2 * 8 * 300 * 300 * 2;
  EXPECT_EQ(pv.a.offset, (scores + 255) / 256 * 256);
  EXPECT_GE(cp.workspace_bytes, scores + probs);
  EXPECT_TRUE(check_args(cp).ok());
}

TEST(AttentionPrefillPlan, RefusesWhatTheKernelsAreNotWrittenFor) {
  auto refused = [](const std::string& spec) {
    auto p = attention_prefill_op().resolve(*Problem::parse(spec));
    EXPECT_FALSE(p.ok()) << spec;
    return p ? std::string() : p.error().message();
  };
  EXPECT_NE(refused("attention_prefill:seq=128,batch=1,head=256,q_heads=8,kv_heads=8")
                .find("head=256 is not supported"),
            std::string::npos);
  EXPECT_NE(refused("attention_prefill:seq=128,batch=1,head=128,q_heads=6,kv_heads=4")
                .find("not a multiple of kv_heads=4"),
            std::string::npos);
  EXPECT_NE(refused("attention_prefill:seq=16385,batch=1,head=128,q_heads=8,kv_heads=8")
                .find("seq=16385 is more than 16384"),
            std::string::npos);
  auto bad = plan_attention_prefill(
      problem("attention_prefill:seq=128,batch=1,head=128,"
              "q_heads=8,kv_heads=8"),
      *Config::parse("kernel=wgmma,block_n=128,consumers=2,stages=4,overlap=1"));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("shared memory"), std::string::npos);
  auto unknown = plan_attention_prefill(
      problem("attention_prefill:seq=128,batch=1,head=128,q_heads=8,kv_heads=8"),
      *Config::parse("kernel=mma,block_n=128,consumers=2,stages=2,overlap=1"));
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message().find("unknown kernel 'mma'"), std::string::npos);
}

TEST(AttentionPrefillPlan, EveryConfigOfTheSpacePlansAndTheBaselineIsTheSignaturesConfig) {
  for (const char* spec : {"attention_prefill:seq=1,batch=1,head=64,q_heads=4,kv_heads=4",
                           "attention_prefill:seq=4096,batch=1,head=128,q_heads=32,kv_heads=8"}) {
    SCOPED_TRACE(spec);
    const Problem p = problem(spec);
    ASSERT_NE(attention_prefill_op().space, nullptr);
    auto space = attention_prefill_op().space(p);
    ASSERT_TRUE(space.ok()) << space.error().message();
    EXPECT_EQ(space->config(space->baseline()).text(),
              Config::parse(attention_prefill_op().baseline_config)->text());
    std::size_t n = 0, wgmma = 0;
    for (auto e = space->enumerate(); auto pt = e.next(); ++n) {
      const Config c = space->config(*pt);
      auto plan = plan_attention_prefill(p, c);
      EXPECT_TRUE(plan.ok()) << c.text() << ": " << plan.error().message();
      if (c.get("kernel")->as_word() == "wgmma") ++wgmma;
    }
    EXPECT_EQ(n, wgmma + 1);  // the split baseline is one config
    // seq 1: a 128-key tile is more than twice the prompt, so only 64-key tiles (6 configs),
    // and the 3 of one consumer again with two blocks per SM; head 128: 10 of the 12 fit a
    // block's shared memory, and one of them (one consumer, 64-key tiles, 2 stages) two blocks
    // per SM. Each with and without overlap.
    EXPECT_EQ(wgmma, std::string(spec).find("seq=1,") != std::string::npos ? 18u : 22u);
  }
}

}  // namespace
}  // namespace attune::kernels
