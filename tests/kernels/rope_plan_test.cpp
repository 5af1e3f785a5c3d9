// rope's op and plans without a GPU: its sizes' refusals, its one space (the chain baseline one
// config; the fused kernel's knobs bounded by a head's lanes, the heads and the tokens), the
// chain's three launches through a workspace (two without the q/k norm) and the fused kernel's
// one, their argument names, and NVRTC builds of both forms for every head size and dtype.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "core/config.h"
#include "core/problem.h"
#include "cuda/nvrtc_build.h"
#include "kernels/plan.h"
#include "kernels/plan_launch.h"

namespace attune::kernels {
extern const char* const kRopeRefSource;
namespace {

Problem problem(const std::string& spec) {
  auto p = rope_op().resolve(*Problem::parse(spec));
  EXPECT_TRUE(p.ok()) << p.error().message();
  return *p;
}

Plan planned(const std::string& spec, const std::string& config) {
  auto plan = plan_rope(problem(spec), *Config::parse(config));
  EXPECT_TRUE(plan.ok()) << plan.error().message();
  return plan ? *plan : Plan{};
}

bool has_option(const cuda::BuildRequest& b, const std::string& o) {
  return std::find(b.options.begin(), b.options.end(), o) != b.options.end();
}

constexpr const char* kQwen =
    "rope:batch=3,seq=77,kv=100,q_heads=16,kv_heads=8,head=128,theta=1000000,qk_norm=1";

TEST(RopePlan, TheSignatureRefusesSizesItsKernelsAreNotWrittenFor) {
  const OpSignature& op = rope_op();
  EXPECT_EQ(op.shape_syntax(), "BATCHxSEQxKVxQ_HEADSxKV_HEADSxHEADxTHETA");
  auto bad = [&](const std::string& shape) {
    auto spec = op.problem_from_shape(shape, "");
    if (!spec) return spec.error().message();
    auto r = op.resolve(*spec);
    return r.ok() ? std::string() : r.error().message();
  };
  EXPECT_EQ(bad(op.example_shape), "");
  EXPECT_EQ(bad("8x1x2048x32x8x128x1000000"), "");
  EXPECT_EQ(bad("8x512x512x16x8x96x10000"), "rope head=96 is not supported (64, 128, 256)");
  EXPECT_EQ(bad("8x512x512x12x8x128x10000"),
            "rope q_heads=12 is not a multiple of kv_heads=8 (grouped-query attention shares each "
            "KV head among q_heads / kv_heads query heads)");
  EXPECT_EQ(bad("8x512x511x16x8x128x10000"),
            "rope seq=512 is more than kv=511 (the cache holds the new tokens; a prefill is kv == "
            "seq)");
  EXPECT_EQ(bad("8x512x512x16x8x128x1"),
            "rope theta=1 is not a RoPE base (Llama-3: 500000, Qwen3: 1000000)");
  auto p = op.resolve(*Problem::parse(
      "rope:batch=2,seq=3,kv=5,q_heads=4,kv_heads=2,head=64,theta=10000,qk_norm=1,dtype=fp16"));
  ASSERT_TRUE(p.ok()) << p.error().message();
  EXPECT_EQ(
      p->text(),
      "rope:batch=2,dtype=fp16,head=64,kv=5,kv_heads=2,q_heads=4,qk_norm=1,seq=3,theta=10000");
  auto s = rope_shape(*p);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->tokens(), 6);
  EXPECT_EQ(s->heads(), 8);
  EXPECT_TRUE(s->qk_norm);
  EXPECT_FALSE(s->bf16);
}

TEST(RopePlan, TheSpaceHasTheChainAsItsOneBaselineAndBoundsTheFusedKnobs) {
  const Problem p = problem(kQwen);
  auto space = rope_op().space(p);
  ASSERT_TRUE(space.ok()) << space.error().message();
  EXPECT_EQ(space->config(space->baseline()).text(), rope_op().baseline_config);
  std::size_t chain = 0, fused = 0;
  std::set<std::int64_t> vecs;
  for (auto e = space->enumerate(); auto pt = e.next();) {
    const Config c = space->config(*pt);
    if (c.get("kernel")->as_word() == "chain") {
      ++chain;
      continue;
    }
    ++fused;
    vecs.insert(c.get("vec")->as_int());
    EXPECT_LE(128 / 2 / c.get("vec")->as_int(), 32) << c.text();
    EXPECT_TRUE(plan_rope(p, c).ok()) << c.text();
  }
  EXPECT_EQ(chain, 1u);
  // vec 2, 4, 8 (vec 1 would spread a head of 128 over 64 lanes); head groups and head blocks
  // 1-8 each, at most 32 together (32 heads); 1, 2 or 4 tokens.
  EXPECT_EQ(vecs, (std::set<std::int64_t>{2, 4, 8}));
  EXPECT_EQ(fused, 3u * 15 * 3);
  // One token of two KV heads: at most 4 head groups over the blocks (4 heads), one token a
  // block.
  const Problem tiny = problem("rope:batch=1,seq=1,kv=9,q_heads=2,kv_heads=1,head=64,theta=10000");
  auto small = rope_op().space(tiny);
  ASSERT_TRUE(small.ok());
  for (auto e = small->enumerate(); auto pt = e.next();) {
    const Config c = small->config(*pt);
    EXPECT_LE(c.get("head_groups")->as_int() * c.get("head_blocks")->as_int(), 4) << c.text();
    EXPECT_EQ(c.get("tokens")->as_int(), 1) << c.text();
  }
}

TEST(RopePlan, TheChainIsANormARotateAndACopyThroughAWorkspace) {
  const Plan p = planned(kQwen, rope_op().baseline_config);
  const auto& kp = std::get<KernelPlan>(p);
  ASSERT_EQ(kp.steps.size(), 3u);
  EXPECT_EQ(kp.steps[0].kernel, "rope_chain_norm");
  EXPECT_EQ(kp.steps[0].grid.x, 3u * 77 * 24);  // a block per (token, q or k head)
  EXPECT_EQ(kp.steps[0].block.x, 128u);
  EXPECT_EQ(kp.steps[1].kernel, "rope_chain_rotate");
  EXPECT_EQ(kp.steps[1].grid.x, (3u * 77 * 24 * 128 + 255) / 256);
  EXPECT_EQ(kp.steps[2].kernel, "rope_chain_copy_v");
  EXPECT_EQ(kp.steps[2].grid.x, (3u * 77 * 8 * 128 + 255) / 256);
  EXPECT_EQ(kp.workspace_bytes, 3u * 77 * 24 * 128 * 2);  // the normalized heads, 16-bit
  EXPECT_TRUE(check_args(kp).ok());
  for (const char* o : {"-DT=__nv_bfloat16", "-DHEAD=128", "-DQ_HEADS=16", "-DKV_HEADS=8",
                        "-DQK_NORM=1", "-DLOG2_THETA=19.9315686f"})
    EXPECT_TRUE(has_option(kp.build, o)) << o;
  // The token count, sequence and cache depth are arguments: a decode step's build serves every
  // position.
  for (const auto& o : kp.build.options) {
    EXPECT_EQ(o.find("=77"), std::string::npos) << o;
    EXPECT_EQ(o.find("=100"), std::string::npos) << o;
  }
  // Without the norm: the rotate reads qkv itself, no workspace.
  const Plan plain =
      planned("rope:batch=3,seq=77,kv=100,q_heads=16,kv_heads=8,head=128,theta=10000",
              "kernel=chain,vec=1,head_groups=1,head_blocks=1,tokens=1");
  const auto& pp = std::get<KernelPlan>(plain);
  ASSERT_EQ(pp.steps.size(), 2u);
  EXPECT_EQ(pp.steps[0].kernel, "rope_chain_rotate");
  EXPECT_EQ(pp.workspace_bytes, 0u);
  EXPECT_TRUE(has_option(pp.build, "-DQK_NORM=0"));
  // A base whose log2 is whole is still a float literal ("16f" is not one).
  const Plan pow2 = planned("rope:batch=1,seq=1,kv=8,q_heads=2,kv_heads=1,head=64,theta=65536",
                            rope_op().baseline_config);
  EXPECT_TRUE(has_option(std::get<KernelPlan>(pow2).build, "-DLOG2_THETA=16.0000000f"));
  auto built = cuda::Compiler("sm_90a", "").build(std::get<KernelPlan>(pow2).build);
  ASSERT_TRUE(built.ok()) << built.error().message();
  EXPECT_TRUE(built->ok) << built->log;
}

TEST(RopePlan, TheFusedKernelIsOneLaunchOfHeadGroupsAndTokens) {
  const Plan p = planned(kQwen, "kernel=fused,vec=4,head_groups=8,head_blocks=3,tokens=2");
  const auto& kp = std::get<KernelPlan>(p);
  ASSERT_EQ(kp.steps.size(), 1u);
  const LaunchStep& s = kp.steps[0];
  EXPECT_EQ(s.kernel, "rope_fused");
  EXPECT_EQ(s.grid.x, (3u * 77 + 1) / 2);
  EXPECT_EQ(s.grid.y, 3u);    // a token's 32 heads over 3 blocks of 8 head groups
  EXPECT_EQ(s.block.x, 16u);  // 64 pairs, 4 per lane
  EXPECT_EQ(s.block.y, 8u);
  EXPECT_EQ(kp.workspace_bytes, 0u);
  EXPECT_EQ(s.args, (std::vector<std::string>{"q", "k", "v", "qkv", "q_norm", "k_norm", "rows",
                                              "seq", "kv", "eps"}));
  EXPECT_TRUE(check_args(kp).ok());
  for (const char* o : {"-DVEC=4", "-DHEAD_GROUPS=8", "-DTOKENS=2"})
    EXPECT_TRUE(has_option(kp.build, o)) << o;
  EXPECT_FALSE(plan_rope(problem(kQwen),
                         *Config::parse("kernel=fused,vec=1,head_groups=1,head_blocks=1,tokens=1"))
                   .ok())
      << "64 lanes per head";
  EXPECT_FALSE(plan_rope(problem(kQwen), *Config::parse("kernel=rotary")).ok());
  EXPECT_FALSE(plan_rope(problem(kQwen), *Config::parse("vec=4")).ok());
}

// llama3_scaling (an optional flag: written in a problem only when set, so every rope key stored
// before it existed still matches) builds Llama 3.1's four rope_scaling values into both forms.
TEST(RopePlan, Llama3ScalingIsAnOptionalFlagBuiltIntoBothForms) {
  const std::string llama =
      "rope:batch=8,seq=1,kv=2048,q_heads=32,kv_heads=8,head=128,theta=500000,llama3_scaling=1";
  const Problem scaled = problem(llama);
  EXPECT_EQ(scaled.text(),
            "rope:batch=8,dtype=bf16,head=128,kv=2048,kv_heads=8,llama3_scaling=1,q_heads=32,"
            "qk_norm=0,seq=1,theta=500000");
  EXPECT_EQ(problem(kQwen).text().find("llama3_scaling"), std::string::npos);
  ASSERT_TRUE(rope_shape(scaled).ok());
  EXPECT_TRUE(rope_shape(scaled)->llama3_scaling);
  EXPECT_FALSE(rope_shape(problem(kQwen))->llama3_scaling);
  cuda::Compiler c("sm_90a", "");
  for (const std::string& config : {std::string(rope_op().baseline_config),
                                    std::string("kernel=fused,vec=4,head_groups=4,head_blocks=2,"
                                                "tokens=1")}) {
    SCOPED_TRACE(config);
    const Plan p = planned(llama, config);
    const auto& kp = std::get<KernelPlan>(p);
    for (const char* o :
         {"-DLLAMA3_SCALING=1", "-DLLAMA3_FACTOR=8.00000000f", "-DLLAMA3_LOW=1.00000000f",
          "-DLLAMA3_HIGH=4.00000000f", "-DLLAMA3_ORIGINAL=8192.00000f"})
      EXPECT_TRUE(has_option(kp.build, o)) << o;
    auto b = c.build(kp.build);
    ASSERT_TRUE(b.ok()) << b.error().message();
    EXPECT_TRUE(b->ok) << b->log;
    const Plan plain = planned(kQwen, config);
    EXPECT_FALSE(has_option(std::get<KernelPlan>(plain).build, "-DLLAMA3_SCALING=1"));
  }
}

TEST(RopePlan, BothFormsCompileOnEveryHeadSizeAndDtype) {
  cuda::Compiler c("sm_90a", "");
  const char* fused[] = {"kernel=fused,vec=2,head_groups=1,head_blocks=1,tokens=1",
                         "kernel=fused,vec=8,head_groups=4,head_blocks=2,tokens=4",
                         "kernel=fused,vec=4,head_groups=2,head_blocks=1,tokens=2"};
  std::size_t next = 0;
  for (const char* head : {"64", "128", "256"}) {
    for (const char* tail : {",dtype=bf16,qk_norm=1", ",dtype=fp16,qk_norm=0"}) {
      const std::string spec =
          std::string("rope:batch=2,seq=5,kv=9,q_heads=4,kv_heads=2,theta=10000,head=") + head +
          tail;
      for (const std::string& config : {std::string(rope_op().baseline_config),
                                        std::string(fused[next++ % std::size(fused)])}) {
        if (std::string(head) == "256" && config.find("vec=2") != std::string::npos) continue;
        SCOPED_TRACE(spec + " " + config);
        const Plan p = planned(spec, config);
        const auto& kp = std::get<KernelPlan>(p);
        auto b = c.build(kp.build);
        ASSERT_TRUE(b.ok()) << b.error().message();
        EXPECT_TRUE(b->ok) << b->log;
        for (const auto& step : kp.steps) EXPECT_EQ(b->lowered_names.count(step.kernel), 1u);
      }
    }
  }
  auto ref = c.build(
      cuda::BuildRequest{kRopeRefSource, "rope_ref.cu", {}, {"rope_ref", "rope_ref_cache"}});
  ASSERT_TRUE(ref.ok()) << ref.error().message();
  EXPECT_TRUE(ref->ok) << ref->log;
}

}  // namespace
}  // namespace attune::kernels
