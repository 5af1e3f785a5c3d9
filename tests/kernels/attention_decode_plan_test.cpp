// attention_decode's kernel plans on odd shapes, without a GPU: the flash kernel's grid, block
// and workspace, the combine that follows a split, and the split baseline's chain of two batched
// cuBLASLt matmuls around the softmax, with their strides and workspace regions laid out as the
// softmax kernel reads them.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/config.h"
#include "core/problem.h"
#include "kernels/plan.h"
#include "kernels/plan_launch.h"

namespace attune::kernels {
namespace {

Problem problem(const std::string& spec) {
  auto p = attention_decode_op().resolve(*Problem::parse(spec));
  EXPECT_TRUE(p.ok()) << p.error().message();
  return *p;
}

Plan planned(const std::string& spec, const std::string& config) {
  auto plan = plan_attention_decode(problem(spec), *Config::parse(config));
  EXPECT_TRUE(plan.ok()) << plan.error().message();
  return plan ? *plan : Plan{};
}

bool has_option(const cuda::BuildRequest& b, const std::string& o) {
  return std::find(b.options.begin(), b.options.end(), o) != b.options.end();
}

TEST(AttentionDecodePlan, FlashWithoutSplitsIsOneLaunchWritingTheOutput) {
  // 3 sequences, GQA 4 (q_len 3: 12 rows per KV head), q_rows 8: two row groups, the second
  // mostly padding.
  const Plan p = planned("attention_decode:batch=3,kv=1000,head=64,q_heads=8,kv_heads=2,q_len=3",
                         "kernel=flash,splits=1,kv_tile=32,warps=2,vec=8,q_rows=8");
  const auto& kp = std::get<KernelPlan>(p);
  ASSERT_EQ(kp.steps.size(), 1u);
  const LaunchStep& s = kp.steps[0];
  EXPECT_EQ(s.kernel, "attn_decode_flash");
  EXPECT_EQ(s.grid.x, 1u);      // splits
  EXPECT_EQ(s.grid.y, 2u);      // ceil(4 * 3 / 8) row groups
  EXPECT_EQ(s.grid.z, 3u * 2);  // sequences x KV heads
  EXPECT_EQ(s.block.x, 64u);
  EXPECT_EQ(s.args, (std::vector<std::string>{"o", "workspace", "q", "k", "v", "kv"}));
  EXPECT_EQ(kp.workspace_bytes, 0u);
  for (const char* o : {"-DT=__nv_bfloat16", "-DHEAD=64", "-DGROUP=4", "-DQ_LEN=3", "-DSPLITS=1",
                        "-DKV_TILE=32", "-DWARPS=2", "-DVEC=8", "-DQ_ROWS=8"})
    EXPECT_TRUE(has_option(kp.build, o)) << o;
  // The cache depth is an argument, not a define: one build serves every depth.
  for (const auto& o : kp.build.options) EXPECT_EQ(o.find("1000"), std::string::npos) << o;
}

TEST(AttentionDecodePlan, SplitsAddTheCombineAndItsWorkspace) {
  const Plan p =
      planned("attention_decode:batch=1,kv=4097,head=256,q_heads=32,kv_heads=8,q_len=1,dtype=fp16",
              "kernel=flash,splits=16,kv_tile=64,warps=4,vec=4,q_rows=4");
  const auto& kp = std::get<KernelPlan>(p);
  ASSERT_EQ(kp.steps.size(), 2u);
  EXPECT_EQ(kp.steps[0].grid.x, 16u);
  EXPECT_EQ(kp.steps[0].grid.y, 1u);
  EXPECT_EQ(kp.steps[0].grid.z, 8u);
  EXPECT_EQ(kp.steps[1].kernel, "attn_decode_combine");
  EXPECT_EQ(kp.steps[1].args, (std::vector<std::string>{"o", "workspace", "rows"}));
  // 32 rows of 256: one warp per row, four rows per block.
  EXPECT_EQ(kp.steps[1].grid.x, 8u);
  EXPECT_EQ(kp.steps[1].block.x, 128u);
  // fp32 partial rows and (max, sum) per row for each split.
  EXPECT_EQ(kp.workspace_bytes, 16u * 32 * (256 + 2) * 4);
  EXPECT_TRUE(has_option(kp.build, "-DT=__half"));
  EXPECT_EQ(kp.build.name_expressions,
            (std::vector<std::string>{"attn_decode_flash", "attn_decode_combine"}));
}

TEST(AttentionDecodePlan, ATileTheWarpsCannotSplitIsRefused) {
  // head 128, vec 8: 16 lanes per key, 2 keys per warp load; 8 warps load 16 keys at once.
  auto p = plan_attention_decode(
      problem("attention_decode:batch=1,kv=64,head=128,q_heads=8,kv_heads=8,q_len=1"),
      *Config::parse("kernel=flash,splits=1,kv_tile=8,warps=8,vec=8,q_rows=1"));
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message().find("multiple of the keys"), std::string::npos);
}

TEST(AttentionDecodePlan, TheSplitBaselineIsScoresSoftmaxValuesInOneChain) {
  // GQA 4, q_len 2: 8 query rows per (sequence, KV head), contiguous in q; an odd depth.
  const std::int64_t batch = 3, kv = 7, head = 128, kv_heads = 2, gl = 8;
  const Plan p = planned("attention_decode:batch=3,kv=7,head=128,q_heads=8,kv_heads=2,q_len=2",
                         "kernel=split,splits=1,kv_tile=16,warps=4,vec=8,q_rows=1");
  const auto& cp = std::get<ChainPlan>(p);
  ASSERT_EQ(cp.steps.size(), 3u);
  const auto& qk = std::get<LtMatmul>(cp.steps[0]);
  const auto& sm = std::get<LaunchStep>(cp.steps[1]);
  const auto& pv = std::get<LtMatmul>(cp.steps[2]);
  const std::size_t rows = batch * kv_heads * gl;  // 48 output rows
  const std::size_t scores = (rows * kv * 4 + 255) / 256 * 256;
  const std::size_t probs = (rows * kv * 2 + 255) / 256 * 256;

  EXPECT_EQ(qk.m, gl);
  EXPECT_EQ(qk.n, kv);
  EXPECT_EQ(qk.k, head);
  EXPECT_EQ(qk.batch, batch * kv_heads);
  EXPECT_TRUE(qk.b_transposed);
  EXPECT_TRUE(qk.c_fp32);
  EXPECT_EQ(qk.a.arg, "q");
  EXPECT_EQ(qk.a.stride, gl * head);
  EXPECT_EQ(qk.b.arg, "k");
  EXPECT_EQ(qk.b.stride, kv * head);
  EXPECT_EQ(qk.c.arg, "workspace");
  EXPECT_EQ(qk.c.offset, 0u);
  EXPECT_EQ(qk.c.stride, gl * kv);

  EXPECT_EQ(sm.kernel, "attn_decode_softmax");
  EXPECT_EQ(sm.grid.x, rows);
  EXPECT_EQ(sm.args, (std::vector<std::string>{"workspace", "kv", "rows"}));
  EXPECT_TRUE(has_option(cp.build, "-DQ_LEN=2"));

  EXPECT_EQ(pv.m, gl);
  EXPECT_EQ(pv.n, head);
  EXPECT_EQ(pv.k, kv);
  EXPECT_FALSE(pv.b_transposed);
  EXPECT_FALSE(pv.c_fp32);
  EXPECT_EQ(pv.a.arg, "workspace");
  EXPECT_EQ(pv.a.offset, scores);  // P right after S, where the softmax writes it
  EXPECT_EQ(pv.b.arg, "v");
  EXPECT_EQ(pv.c.arg, "o");
  EXPECT_EQ(pv.c.stride, gl * head);

  // cuBLASLt's workspace after both, within the plan's.
  EXPECT_EQ(qk.workspace_offset, scores + probs);
  EXPECT_EQ(cp.workspace_bytes, scores + probs + qk.workspace_bytes);
  EXPECT_GT(qk.workspace_bytes, 0u);
}

// Every argument a chain names binds to PlanArgs (the launcher enqueues by these names); a name
// no launcher knows is the plan's bug, caught before any launch.
TEST(AttentionDecodePlan, AChainsArgumentsAllBindAndAStrayNameIsCaught) {
  Plan p = planned("attention_decode:batch=2,kv=33,head=64,q_heads=4,kv_heads=1,q_len=1",
                   "kernel=split,splits=1,kv_tile=16,warps=4,vec=8,q_rows=1");
  auto& cp = std::get<ChainPlan>(p);
  EXPECT_TRUE(check_args(cp).ok());
  PlanArgs args;
  args.o = 0x1000;
  args.workspace = 0x2000;
  EXPECT_EQ(*pointer_arg("o", args), 0x1000u);
  EXPECT_EQ(*pointer_arg("workspace", args), 0x2000u);
  EXPECT_EQ(pointer_arg("kv", args), nullptr);  // an int, not a pointer
  std::get<LtMatmul>(cp.steps[2]).c.arg = "out";
  Status st = check_args(cp);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("'out'"), std::string::npos);
  const Plan f = planned("attention_decode:batch=2,kv=33,head=64,q_heads=4,kv_heads=1,q_len=1",
                         "kernel=flash,splits=2,kv_tile=16,warps=4,vec=8,q_rows=4");
  EXPECT_TRUE(check_args(std::get<KernelPlan>(f)).ok());
}

TEST(AttentionDecodePlan, TheSignaturesBaselineIsTheSplitBaseline) {
  const Plan p = planned("attention_decode:batch=8,kv=4096,head=128,q_heads=32,kv_heads=8,q_len=1",
                         attention_decode_op().baseline_config);
  EXPECT_TRUE(std::holds_alternative<ChainPlan>(p));
}

// kernel=mma's splits merge by attn_decode_combine (a second launch through the workspace) or,
// combine=cluster, inside the one launch by the thread block cluster of the 2-8 splits: no
// combine step, no workspace, the cluster header in the build.
TEST(AttentionDecodePlan, MmaSplitsMergeByTheCombineLaunchOrByTheCluster) {
  const std::string spec =
      "attention_decode:batch=1,kv=4096,head=128,q_heads=32,kv_heads=8,q_len=1";
  const Plan launch = planned(spec,
                              "kernel=mma,splits=8,kv_tile=32,warps=4,vec=8,q_rows=1,"
                              "combine=kernel");
  const auto& kl = std::get<KernelPlan>(launch);
  ASSERT_EQ(kl.steps.size(), 2u);
  EXPECT_EQ(kl.steps[1].kernel, "attn_decode_combine");
  EXPECT_GT(kl.workspace_bytes, 0u);
  EXPECT_TRUE(has_option(kl.build, "-DCLUSTER=0"));

  const Plan cluster = planned(spec,
                               "kernel=mma,splits=8,kv_tile=32,warps=4,vec=8,q_rows=1,"
                               "combine=cluster");
  const auto& kc = std::get<KernelPlan>(cluster);
  ASSERT_EQ(kc.steps.size(), 1u);
  EXPECT_EQ(kc.steps[0].kernel, "attn_decode_mma");
  EXPECT_EQ(kc.steps[0].grid.x, 8u);  // the cluster spans grid.x: the row group's splits
  EXPECT_EQ(kc.workspace_bytes, 0u);
  EXPECT_TRUE(has_option(kc.build, "-DCLUSTER=1"));
  ASSERT_EQ(kc.build.headers.size(), 2u);
  EXPECT_EQ(kc.build.headers[0].first, "attune_launch.cuh");
  EXPECT_EQ(kc.build.headers[1].first, "attune_cluster.cuh");

  // Past the portable 8 blocks: Hopper's non-portable 16 (the launch opts in, or refuses).
  const Plan sixteen = planned(spec,
                               "kernel=mma,splits=16,kv_tile=32,warps=4,vec=8,q_rows=1,"
                               "combine=cluster");
  const auto& k16 = std::get<KernelPlan>(sixteen);
  ASSERT_EQ(k16.steps.size(), 1u);
  EXPECT_EQ(k16.steps[0].grid.x, 16u);
  EXPECT_TRUE(has_option(k16.build, "-DSPLITS=16"));
  EXPECT_TRUE(has_option(k16.build, "-DCLUSTER=1"));
  auto too_many = plan_attention_decode(
      problem(spec),
      *Config::parse("kernel=mma,splits=32,kv_tile=32,warps=4,vec=8,q_rows=1,combine=cluster"));
  ASSERT_FALSE(too_many.ok());
  EXPECT_NE(too_many.error().message().find("2-16 splits"), std::string::npos);
  // The space offers the cluster only where the plan takes it.
  auto space = attention_decode_op().space(problem(spec));
  ASSERT_TRUE(space.ok()) << space.error().message();
  std::size_t clusters = 0;
  for (auto e = space->enumerate(); auto pt = e.next();) {
    const Config c = space->config(*pt);
    if (c.get("combine")->as_word() != "cluster") continue;
    ++clusters;
    EXPECT_TRUE(plan_attention_decode(problem(spec), c).ok()) << c.text();
  }
  EXPECT_GT(clusters, 0u);
}

// kernel=mma with q_rows=32: the 32 rows of a GQA group (8 query heads x 4 tokens) in one block,
// two m16 row tiles on each K/V tile loaded, so the cache is read once per split instead of once
// per 16 rows; the space offers it only past 16 rows a group, and the plan takes every mma config
// the space offers.
TEST(AttentionDecodePlan, MmaTwoRowTilesShareEachKvTile) {
  const std::string gqa = "attention_decode:batch=8,kv=4096,head=128,q_heads=32,kv_heads=4,q_len=4";
  const Plan two = planned(gqa,
                           "kernel=mma,splits=4,kv_tile=16,warps=8,vec=8,q_rows=32,"
                           "combine=cluster");
  const auto& kt = std::get<KernelPlan>(two);
  ASSERT_EQ(kt.steps.size(), 1u);
  EXPECT_EQ(kt.steps[0].grid.x, 4u);
  EXPECT_EQ(kt.steps[0].grid.y, 1u);  // one row group of 32
  EXPECT_EQ(kt.steps[0].grid.z, 32u);
  EXPECT_TRUE(has_option(kt.build, "-DMTILES=2"));
  // 32 query rows, then 8 warps x 3 stages of a 16-key K and V tile.
  EXPECT_EQ(kt.steps[0].shared_bytes, 32u * 128 * 2 + 8u * 3 * 16 * 128 * 4);
  const Plan one = planned(gqa,
                           "kernel=mma,splits=4,kv_tile=16,warps=8,vec=8,q_rows=1,"
                           "combine=kernel");
  const auto& ko = std::get<KernelPlan>(one);
  EXPECT_EQ(ko.steps[0].grid.y, 2u);  // two row groups of 16, each reading the cache
  EXPECT_TRUE(has_option(ko.build, "-DMTILES=1"));

  auto other = plan_attention_decode(
      problem(gqa),
      *Config::parse("kernel=mma,splits=4,kv_tile=16,warps=8,vec=8,q_rows=4,combine=kernel"));
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.error().message().find("q_rows 1"), std::string::npos);

  auto count_two = [](const std::string& spec) {
    auto space = attention_decode_op().space(problem(spec));
    EXPECT_TRUE(space.ok()) << space.error().message();
    std::size_t n = 0;
    for (auto e = space->enumerate(); auto pt = e.next();) {
      const Config c = space->config(*pt);
      if (c.get("kernel")->as_word() != "mma") continue;
      EXPECT_TRUE(plan_attention_decode(problem(spec), c).ok()) << c.text();
      if (c.get("q_rows")->as_int() == 32) {
        ++n;
        // Two row tiles: the registers bound head + kv_tile <= 144.
        EXPECT_LE(128 + c.get("kv_tile")->as_int(), 144) << c.text();
      }
    }
    return n;
  };
  EXPECT_GT(count_two(gqa), 0u);
  // 4 rows a group (32 / 8 heads, one token): one m16 tile holds them.
  EXPECT_EQ(count_two("attention_decode:batch=1,kv=4096,head=128,q_heads=32,kv_heads=8,q_len=1"),
            0u);
}

TEST(AttentionDecodePlan, AnUnknownKernelIsRefused) {
  auto p = plan_attention_decode(
      problem("attention_decode:batch=1,kv=64,head=64,q_heads=1,kv_heads=1,q_len=1"),
      *Config::parse("kernel=paged,splits=1,kv_tile=16,warps=4,vec=8,q_rows=1,combine=kernel"));
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message().find("unknown kernel 'paged'"), std::string::npos);
}

}  // namespace
}  // namespace attune::kernels
