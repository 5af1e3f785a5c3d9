// gemm_rope's op and plans without a GPU: its sizes' refusals (rope's, and the projection's), its
// one space (the split baseline one config; the tiled kernel's tiles holding whole heads within a
// block's shared memory), the split form's two steps through the workspace, the fused kernel's
// one launch and its argument names, and NVRTC builds of the fused kernel for every head size,
// dtype and flag, and of the float64-input reference.
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
  auto p = gemm_rope_op().resolve(*Problem::parse(spec));
  EXPECT_TRUE(p.ok()) << p.error().message();
  return *p;
}

Plan planned(const std::string& spec, const std::string& config) {
  auto plan = plan_gemm_rope(problem(spec), *Config::parse(config));
  EXPECT_TRUE(plan.ok()) << plan.error().message();
  return plan ? *plan : Plan{};
}

bool has_option(const cuda::BuildRequest& b, const std::string& o) {
  return std::find(b.options.begin(), b.options.end(), o) != b.options.end();
}

// Qwen3-Embedding-0.6B's QKV projection at a prefill of 3 x 77 tokens.
constexpr const char* kQwen =
    "gemm_rope:batch=3,seq=77,kv=100,q_heads=16,kv_heads=8,head=128,theta=1000000,hidden=1024,"
    "qk_norm=1";

std::string tiled(int bm, int bn, int bk, int wm, int wn, int stages, int group) {
  return "kernel=tiled,tl_bm=" + std::to_string(bm) + ",tl_bn=" + std::to_string(bn) +
         ",tl_bk=" + std::to_string(bk) + ",tl_wm=" + std::to_string(wm) +
         ",tl_wn=" + std::to_string(wn) + ",tl_stages=" + std::to_string(stages) +
         ",tl_group=" + std::to_string(group);
}

TEST(GemmRopePlan, TheSignatureRefusesSizesItsKernelsAreNotWrittenFor) {
  const OpSignature& op = gemm_rope_op();
  EXPECT_EQ(op.sizes.size(), 8u);
  for (const char* bad :
       {"gemm_rope:batch=1,seq=4,kv=4,q_heads=8,kv_heads=2,head=96,theta=10000,hidden=512",
        "gemm_rope:batch=1,seq=4,kv=4,q_heads=6,kv_heads=4,head=64,theta=10000,hidden=512",
        "gemm_rope:batch=1,seq=5,kv=4,q_heads=8,kv_heads=2,head=64,theta=10000,hidden=512",
        "gemm_rope:batch=1,seq=4,kv=4,q_heads=8,kv_heads=2,head=64,theta=10000,hidden=500"}) {
    SCOPED_TRACE(bad);
    auto r = op.resolve(*Problem::parse(bad));
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message().find("gemm_rope"), std::string::npos) << r.error().message();
  }
  EXPECT_TRUE(op.resolve(*Problem::parse(kQwen)).ok());
  // The key of libattune-rt holds all eight sizes and both flags.
  EXPECT_TRUE(op.runtime_key.has_value());
}

TEST(GemmRopePlan, TheSpaceHasTheSplitFormAsItsOneBaselineAndTilesOfWholeHeads) {
  for (const char* head : {"64", "128", "256"}) {
    SCOPED_TRACE(head);
    const Problem p = problem(
        std::string("gemm_rope:batch=2,seq=300,kv=300,q_heads=8,kv_heads=2,theta=10000,hidden="
                    "1024,head=") +
        head);
    auto space = gemm_rope_op().space(p);
    ASSERT_TRUE(space.ok()) << space.error().message();
    std::size_t split = 0, tiled_configs = 0, wgmma_configs = 0, staged_configs = 0,
                pingpong_configs = 0, cooperative_configs = 0, cooperative_staged = 0;
    std::set<std::int64_t> widths, wgmma_widths;
    for (auto e = space->enumerate(); auto pt = e.next();) {
      const Config c = space->config(*pt);
      if (c.get("kernel")->as_word() == "split") {
        ++split;
        EXPECT_EQ(c.text(), gemm_rope_op().baseline_config);
        continue;
      }
      if (c.get("kernel")->as_word() == "wgmma") {
        ++wgmma_configs;
        const std::int64_t bn = c.get("wg_bn")->as_int();
        wgmma_widths.insert(bn);
        EXPECT_EQ(bn % std::stoi(head), 0) << c.text();
        const bool staged = c.get("wg_staged")->as_int() == 1;
        staged_configs += staged;
        const bool pingpong = c.get("wg_pingpong")->as_int() == 1;
        pingpong_configs += pingpong;
        cooperative_configs += !pingpong;
        cooperative_staged += !pingpong && staged;
        // Ping-pong consumers take 64-row tiles, two or more a block.
        if (pingpong) {
          EXPECT_EQ(c.get("wg_bm")->as_int(), 64) << c.text();
          EXPECT_GE(c.get("wg_tiles")->as_int(), 2) << c.text();
        }
        EXPECT_LE(
            gemm_wgmma_rope_shared_bytes(c.get("wg_bm")->as_int(), bn, c.get("wg_stages")->as_int(),
                                         staged, pingpong, std::stoi(head), p.flag("qk_norm")),
            kMaxBlockSharedBytes)
            << c.text();
        auto plan = plan_gemm_rope(p, c);
        ASSERT_TRUE(plan.ok()) << c.text() << ": " << plan.error().message();
        continue;
      }
      ++tiled_configs;
      const std::int64_t bm = c.get("tl_bm")->as_int(), bn = c.get("tl_bn")->as_int();
      widths.insert(bn);
      EXPECT_EQ(bn % std::stoi(head), 0) << c.text();
      EXPECT_LE(std::max(gemm_tiled_ring_bytes(bm, bn, c.get("tl_bk")->as_int(),
                                               c.get("tl_stages")->as_int()),
                         gemm_tiled_rope_tile_bytes(bm, bn)),
                static_cast<std::int64_t>(kMaxBlockSharedBytes))
          << c.text();
      auto plan = plan_gemm_rope(p, c);
      ASSERT_TRUE(plan.ok()) << c.text() << ": " << plan.error().message();
    }
    EXPECT_EQ(split, 1u);
    EXPECT_GT(tiled_configs, 50u);
    EXPECT_GE(wgmma_configs, 5u);
    // wg_staged doubles the cooperative wgmma configs: each of their rings leaves room for the
    // slabs (ping-pong consumers' two sets of slabs need 16 KiB more than one 64-row consumer's).
    EXPECT_EQ(2 * cooperative_staged, cooperative_configs);
    EXPECT_GT(pingpong_configs, 0u);
    EXPECT_GT(staged_configs, cooperative_staged);
    EXPECT_EQ(*wgmma_widths.rbegin(), 256);
    EXPECT_EQ(wgmma_widths.count(64), std::string(head) == "64" ? 1u : 0u);
    EXPECT_EQ(*widths.rbegin(), 256);
    EXPECT_EQ(widths.count(64), std::string(head) == "64" ? 1u : 0u);
  }
}

// The first guesses are wgmma configs of the space (the baseline with their knobs set), one
// consumer warpgroup for a decode step's few tokens, two as well past 64 tokens, where each is
// also tried with staged stores.
TEST(GemmRopePlan, TheFirstGuessesAreWgmmaConfigsOfTheSpace) {
  ASSERT_NE(gemm_rope_op().seed_configs, nullptr);
  for (const char* head : {"64", "128", "256"})
    for (const char* tokens : {"seq=1,kv=2048", "seq=512,kv=512"}) {
      const Problem p = problem(std::string("gemm_rope:batch=8,q_heads=32,kv_heads=8,theta=500000,"
                                            "hidden=4096,head=") +
                                head + "," + tokens);
      auto space = gemm_rope_op().space(p);
      ASSERT_TRUE(space.ok());
      const auto seeds = gemm_rope_op().seed_configs(p);
      const bool decode = std::string(tokens).starts_with("seq=1,");
      EXPECT_EQ(seeds.size(), decode ? 1u : 4u) << p.text();
      // The first: 64-row tiles as narrow as the head allows, the deepest ring that fits with the
      // staged slabs (eight 24 KiB stages at 128 columns, five 40 KiB ones at 256).
      const bool wide = std::string(head) == "256";
      EXPECT_EQ(seeds.at(0), std::string("kernel=wgmma,wg_bm=64,wg_bn=") +
                                 (wide ? "256,wg_stages=5" : "128,wg_stages=8"));
      // Past 64 tokens, each seed also with the epilogue's staged stores.
      EXPECT_EQ(std::ranges::count_if(
                    seeds, [](const std::string& x) { return x.ends_with(",wg_staged=1"); }),
                decode ? 0 : 2)
          << p.text();
      for (const std::string& seed : seeds) {
        SCOPED_TRACE(p.text() + " " + seed);
        Config base = *Config::parse(gemm_rope_op().baseline_config);
        std::vector<Config::Entry> entries = base.entries();
        const Config set = *Config::parse(seed);
        for (const auto& [name, value] : set.entries())
          for (auto& e : entries)
            if (e.first == name) e.second = value;
        const Config c(std::move(entries));
        EXPECT_TRUE(space->point(c).ok()) << c.text();
        EXPECT_EQ(c.get("kernel")->as_word(), "wgmma");
        EXPECT_TRUE(plan_gemm_rope(p, c).ok());
      }
    }
}

TEST(GemmRopePlan, TheSplitFormIsCublasLtsMatmulThenRopeReadingTheWorkspace) {
  const Plan p = planned(kQwen, gemm_rope_op().baseline_config);
  const auto* chain = std::get_if<ChainPlan>(&p);
  ASSERT_NE(chain, nullptr);
  ASSERT_EQ(chain->steps.size(), 2u);
  const auto& mm = std::get<LtMatmul>(chain->steps[0]);
  EXPECT_EQ(mm.m, 3 * 77);
  EXPECT_EQ(mm.n, (16 + 2 * 8) * 128);
  EXPECT_EQ(mm.k, 1024);
  EXPECT_EQ(mm.c.arg, "workspace");
  const std::size_t product = (3 * 77 * 4096 * 2 + 255) / 256 * 256;
  EXPECT_EQ(mm.workspace_offset, product);
  EXPECT_EQ(chain->workspace_bytes, product + mm.workspace_bytes);
  const auto& rope = std::get<LaunchStep>(chain->steps[1]);
  EXPECT_EQ(rope.kernel, "rope_fused");
  EXPECT_EQ(rope.args, (std::vector<std::string>{"q", "k", "v", "workspace", "q_norm", "k_norm",
                                                 "rows", "seq", "kv", "eps"}));
  EXPECT_TRUE(has_option(chain->build, "-DQK_NORM=1"));
  EXPECT_TRUE(check_args(*chain).ok());
}

// rms_norm=1 (the input RMSNorm folded in): the split form runs the weightless RMSNorm kernel
// first into the workspace behind the product, cuBLASLt reads x's scaled rows there and its own
// workspace moves behind them; the wgmma kernel compiles the row scale in (every variant builds);
// the tiled kernel has none, so the space leaves it out and its plan refuses it.
TEST(GemmRopePlan, RmsNormIsTheSplitFormsFirstStepAndTheWgmmaKernelsRowScale) {
  const std::string spec = std::string(kQwen) + ",rms_norm=1";
  const Plan p = planned(spec, gemm_rope_op().baseline_config);
  const auto* chain = std::get_if<ChainPlan>(&p);
  ASSERT_NE(chain, nullptr);
  ASSERT_EQ(chain->steps.size(), 3u);
  const std::size_t product = (3 * 77 * 4096 * 2 + 255) / 256 * 256,
                    scaled = (3 * 77 * 1024 * 2 + 255) / 256 * 256;
  const auto& norm = std::get<LaunchStep>(chain->steps[0]);
  EXPECT_EQ(norm.kernel, "gemm_row_rms");
  EXPECT_EQ(norm.grid.x, 3u * 77u);
  EXPECT_EQ(norm.args, (std::vector<std::string>{"workspace", "a", "rows", "eps"}));
  EXPECT_EQ(norm.workspace_offset, product);
  const auto& mm = std::get<LtMatmul>(chain->steps[1]);
  EXPECT_EQ(mm.a.arg, "workspace");
  EXPECT_EQ(mm.a.offset, product);
  EXPECT_EQ(mm.c.arg, "workspace");
  EXPECT_EQ(mm.c.offset, 0u);
  EXPECT_EQ(mm.workspace_offset, product + scaled);
  EXPECT_EQ(chain->workspace_bytes, product + scaled + mm.workspace_bytes);
  EXPECT_EQ(std::get<LaunchStep>(chain->steps[2]).kernel, "rope_fused");
  EXPECT_TRUE(has_option(chain->build, "-DROW_RMS_K=1024"));
  EXPECT_TRUE(check_args(*chain).ok());
  cuda::Compiler c("sm_90a", "");
  auto split = c.build(chain->build);
  ASSERT_TRUE(split.ok()) << split.error().message();
  EXPECT_TRUE(split->ok) << split->log;
  EXPECT_EQ(split->lowered_names.count("gemm_row_rms"), 1u);
  EXPECT_EQ(split->lowered_names.count("rope_fused"), 1u);
  for (const char* config : {"kernel=wgmma,wg_bm=128,wg_bn=256,wg_stages=2",
                             "kernel=wgmma,wg_bm=64,wg_bn=128,wg_stages=8,wg_staged=1",
                             "kernel=wgmma,wg_bm=64,wg_bn=256,wg_stages=4,wg_tiles=2,"
                             "wg_pingpong=1",
                             "kernel=wgmma,wg_bm=64,wg_bn=128,wg_stages=4,wg_cluster=2"}) {
    SCOPED_TRACE(config);
    const Plan w = planned(spec, config);
    const auto& kp = std::get<KernelPlan>(w);
    EXPECT_TRUE(has_option(kp.build, "-DRMS_NORM=1"));
    EXPECT_EQ(kp.steps.front().args.back(), "eps");
    auto b = c.build(kp.build);
    ASSERT_TRUE(b.ok()) << b.error().message();
    EXPECT_TRUE(b->ok) << b->log;
  }
  EXPECT_FALSE(has_option(std::get<KernelPlan>(planned(kQwen,
                                                       "kernel=wgmma,wg_bm=128,wg_bn=256,"
                                                       "wg_stages=2"))
                              .build,
                          "-DRMS_NORM=1"));
  auto tiled_plan = plan_gemm_rope(problem(spec), *Config::parse(tiled(64, 256, 32, 2, 2, 3, 8)));
  ASSERT_FALSE(tiled_plan.ok());
  EXPECT_NE(tiled_plan.error().message().find("no rms_norm"), std::string::npos);
  auto space = gemm_rope_op().space(problem(spec));
  ASSERT_TRUE(space.ok()) << space.error().message();
  std::size_t n = 0;
  for (auto e = space->enumerate(); auto pt = e.next(); ++n)
    EXPECT_NE(space->config(*pt).get("kernel")->as_word(), "tiled");
  EXPECT_GT(n, 100u);
}

TEST(GemmRopePlan, TheTiledFormIsOneLaunchOfTheGemmWithTheRopeEpilogue) {
  const std::string config = tiled(64, 256, 32, 2, 2, 3, 8);
  const Plan p = planned(kQwen, config);
  const auto* kp = std::get_if<KernelPlan>(&p);
  ASSERT_NE(kp, nullptr);
  ASSERT_EQ(kp->steps.size(), 1u);
  const LaunchStep& s = kp->steps[0];
  EXPECT_EQ(s.kernel, "gemm_tiled_rope");
  EXPECT_EQ(s.grid.x, 4u * 16u);  // ceil(231 / 64) x 4096 / 256 tiles, no K split
  EXPECT_EQ(s.block.x, 128u);
  EXPECT_EQ(s.shared_bytes, static_cast<unsigned>(64 * (256 + 4) * 4));  // the fp32 tile
  EXPECT_EQ(s.args, (std::vector<std::string>{"q", "k", "v", "a", "b", "q_norm", "k_norm", "seq",
                                              "kv", "eps"}));
  EXPECT_EQ(kp->workspace_bytes, 0u);
  EXPECT_TRUE(check_args(*kp).ok());
  for (const char* o : {"-DROPE=1", "-DSPLIT=1", "-DM=231", "-DN=4096", "-DK=1024", "-DHEAD=128",
                        "-DQ_HEADS=16", "-DKV_HEADS=8", "-DQK_NORM=1"})
    EXPECT_TRUE(has_option(kp->build, o)) << o;
  // A tile narrower than a head, or a config off the space, is refused by the plan too.
  EXPECT_FALSE(plan_gemm_rope(problem(kQwen), *Config::parse(tiled(64, 64, 32, 2, 2, 3, 8))).ok());
  EXPECT_FALSE(plan_gemm_rope(problem(kQwen), *Config::parse("kernel=wgmma")).ok());
}

TEST(GemmRopePlan, TheWgmmaFormIsOneLaunchWithTensorMaps) {
  const Plan p = planned(kQwen, "kernel=wgmma,wg_bm=128,wg_bn=256,wg_stages=2");
  const auto* kp = std::get_if<KernelPlan>(&p);
  ASSERT_NE(kp, nullptr);
  ASSERT_EQ(kp->steps.size(), 1u);
  const LaunchStep& s = kp->steps[0];
  EXPECT_EQ(s.kernel, "gemm_wgmma_rope");
  EXPECT_EQ(s.grid.x, 2u * 16u);  // ceil(231 / 128) x 4096 / 256 tiles
  EXPECT_EQ(s.block.x, 384u);     // a producer and two consumer warpgroups
  // The ring, its mbarriers and the q and k norm weights as fp32: the epilogue rotates in
  // registers.
  EXPECT_EQ(s.shared_bytes, static_cast<unsigned>(1024 + 2 * 384 * 128 + 16 * 2 + 2 * 128 * 4));
  EXPECT_EQ(s.args, (std::vector<std::string>{"q", "k", "v", "tensor_map0", "tensor_map1", "q_norm",
                                              "k_norm", "seq", "kv", "eps"}));
  ASSERT_EQ(s.tensor_maps.size(), 2u);
  EXPECT_EQ(s.tensor_maps[0].arg, "a");
  EXPECT_EQ(s.tensor_maps[0].rows, 231u);
  EXPECT_EQ(s.tensor_maps[0].cols, 1024u);
  EXPECT_EQ(s.tensor_maps[0].box_rows, 128u);
  EXPECT_EQ(s.tensor_maps[1].arg, "b");
  EXPECT_EQ(s.tensor_maps[1].rows, 4096u);
  EXPECT_EQ(s.tensor_maps[1].box_rows, 256u);
  EXPECT_TRUE(check_args(*kp).ok());
  EXPECT_TRUE(has_option(kp->build, "-DROPE=1"));
  EXPECT_TRUE(has_option(kp->build, "-DSPLIT=1"));
  EXPECT_TRUE(has_option(kp->build, "-DROPE_STAGED=0"));
  EXPECT_FALSE(
      plan_gemm_rope(problem(kQwen), *Config::parse("kernel=wgmma,wg_bm=128,wg_bn=64,wg_stages=4"))
          .ok());
}

// wg_staged 1: the epilogue's slabs take the TMA store's staging size after the ring (16 KiB a
// consumer warpgroup), and a ring too deep to leave room for them is refused.
TEST(GemmRopePlan, TheStagedEpilogueAddsItsSlabsToTheSharedMemory) {
  const Plan p = planned(kQwen, "kernel=wgmma,wg_bm=128,wg_bn=256,wg_stages=2,wg_staged=1");
  const auto* kp = std::get_if<KernelPlan>(&p);
  ASSERT_NE(kp, nullptr);
  EXPECT_TRUE(has_option(kp->build, "-DROPE_STAGED=1"));
  EXPECT_EQ(kp->steps[0].shared_bytes,
            static_cast<unsigned>(1024 + 2 * 384 * 128 + 2 * 16384 + 16 * 2 + 2 * 128 * 4));
  // Four stages of 128 x 256 tiles (192 KiB) leave room for the slabs; seven of 128 x 128 (224
  // KiB) fit alone, not with them.
  EXPECT_TRUE(
      plan_gemm_rope(problem(kQwen), *Config::parse("kernel=wgmma,wg_bm=128,wg_bn=256,wg_stages=4,"
                                                    "wg_staged=1"))
          .ok());
  EXPECT_TRUE(
      plan_gemm_rope(problem(kQwen), *Config::parse("kernel=wgmma,wg_bm=128,wg_bn=128,wg_stages=7"))
          .ok());
  EXPECT_FALSE(
      plan_gemm_rope(problem(kQwen), *Config::parse("kernel=wgmma,wg_bm=128,wg_bn=128,wg_stages=7,"
                                                    "wg_staged=1"))
          .ok());
  EXPECT_FALSE(
      plan_gemm_rope(problem(kQwen), *Config::parse("kernel=wgmma,wg_bm=128,wg_bn=256,wg_stages=2,"
                                                    "wg_staged=2"))
          .ok());
  // qk_norm's weights count too: at head 256 (2 KiB of them) those four stages with the slabs no
  // longer fit, in the plan and in the space alike.
  const std::string head256 =
      "gemm_rope:batch=2,seq=300,kv=300,q_heads=8,kv_heads=2,head=256,theta=10000,hidden=1024";
  const char* deep = "kernel=wgmma,wg_bm=128,wg_bn=256,wg_stages=4,wg_staged=1";
  for (bool qk_norm : {false, true}) {
    SCOPED_TRACE(qk_norm);
    const Problem p = problem(head256 + (qk_norm ? ",qk_norm=1" : ""));
    EXPECT_EQ(plan_gemm_rope(p, *Config::parse(deep)).ok(), !qk_norm);
    auto space = gemm_rope_op().space(p);
    ASSERT_TRUE(space.ok());
    auto pt = space->point_over_baseline(*Config::parse(deep));
    ASSERT_TRUE(pt.ok()) << pt.error().message();
    EXPECT_EQ(space->prefix_legal(*pt), !qk_norm);
  }
}

// wg_pingpong 1: two consumer warpgroups (384 threads) take 64-row tiles in turn, each with its
// own slabs; only at wg_bm 64.
TEST(GemmRopePlan, PingPongConsumersAreTwoWarpgroupsOf64RowTiles) {
  const Plan p = planned(kQwen,
                         "kernel=wgmma,wg_bm=64,wg_bn=256,wg_stages=4,wg_tiles=2,wg_pingpong=1,"
                         "wg_staged=1");
  const auto* kp = std::get_if<KernelPlan>(&p);
  ASSERT_NE(kp, nullptr);
  EXPECT_TRUE(has_option(kp->build, "-DPINGPONG=1"));
  EXPECT_EQ(kp->steps[0].block.x, 384u);
  EXPECT_EQ(kp->steps[0].shared_bytes,
            static_cast<unsigned>(1024 + 4 * 320 * 128 + 2 * 16384 + 16 * 4 + 2 * 128 * 4));
  EXPECT_FALSE(
      plan_gemm_rope(problem(kQwen), *Config::parse("kernel=wgmma,wg_bm=128,wg_bn=256,wg_stages=4,"
                                                    "wg_tiles=2,wg_pingpong=1"))
          .ok());
}

TEST(GemmRopePlan, TheFusedKernelCompilesOnEveryHeadSizeDtypeAndFlag) {
  cuda::Compiler c("sm_90a", "");
  const std::string configs[] = {tiled(64, 256, 32, 2, 2, 3, 8), tiled(128, 128, 64, 4, 1, 2, 1),
                                 tiled(16, 256, 64, 1, 4, 4, 16), tiled(32, 64, 32, 2, 1, 5, 4)};
  std::size_t next = 0;
  for (const char* head : {"64", "128", "256"}) {
    for (const char* tail : {",dtype=bf16,qk_norm=1", ",dtype=fp16,qk_norm=0",
                             ",dtype=bf16,qk_norm=0,llama3_scaling=1"}) {
      const std::string spec =
          std::string(
              "gemm_rope:batch=2,seq=5,kv=9,q_heads=4,kv_heads=2,theta=65536,hidden=136,"
              "head=") +
          head + tail;
      std::string config = configs[next++ % std::size(configs)];
      if (std::string(head) != "64" && config.find("tl_bn=64") != std::string::npos)
        config = configs[0];
      if (std::string(head) == "256") config = tiled(16, 256, 64, 1, 4, 4, 16);
      SCOPED_TRACE(spec + " " + config);
      const Plan p = planned(spec, config);
      const auto& kp = std::get<KernelPlan>(p);
      auto b = c.build(kp.build);
      ASSERT_TRUE(b.ok()) << b.error().message();
      EXPECT_TRUE(b->ok) << b->log;
      EXPECT_EQ(b->lowered_names.count("gemm_tiled_rope"), 1u);
      EXPECT_EQ(has_option(kp.build, "-DLLAMA3_SCALING=1"),
                spec.find("llama3_scaling=1") != std::string::npos);
    }
  }
  // The wgmma kernel with the epilogue: every head size, both dtypes, one and two consumers, and
  // clusters of two blocks sharing their B tile.
  for (const char* tail :
       {",head=64,dtype=bf16,qk_norm=1", ",head=128,dtype=fp16,qk_norm=0,llama3_scaling=1",
        ",head=256,dtype=bf16,qk_norm=1"}) {
    const std::string spec =
        std::string("gemm_rope:batch=2,seq=77,kv=90,q_heads=4,kv_heads=2,theta=65536,hidden=136") +
        tail;
    for (const char* config : {"kernel=wgmma,wg_bm=64,wg_bn=256,wg_stages=4",
                               "kernel=wgmma,wg_bm=128,wg_bn=256,wg_stages=2",
                               "kernel=wgmma,wg_bm=64,wg_bn=256,wg_stages=4,wg_cluster=2",
                               "kernel=wgmma,wg_bm=128,wg_bn=256,wg_stages=3,wg_staged=1",
                               "kernel=wgmma,wg_bm=64,wg_bn=256,wg_stages=4,wg_staged=1",
                               "kernel=wgmma,wg_bm=64,wg_bn=256,wg_stages=4,wg_tiles=2,"
                               "wg_pingpong=1,wg_staged=1",
                               "kernel=wgmma,wg_bm=64,wg_bn=256,wg_stages=3,wg_tiles=2,"
                               "wg_cluster=2,wg_pingpong=1"}) {
      SCOPED_TRACE(spec + " " + config);
      const Plan p = planned(spec, config);
      const auto& kp = std::get<KernelPlan>(p);
      auto b = c.build(kp.build);
      ASSERT_TRUE(b.ok()) << b.error().message();
      EXPECT_TRUE(b->ok) << b->log;
      EXPECT_EQ(b->lowered_names.count("gemm_wgmma_rope"), 1u);
    }
  }
  // gemm's TMA store of C is not gemm_rope's (its epilogue stores the heads): a config asking for
  // it is refused, not built with a C nobody reads.
  auto tma = plan_gemm_rope(
      problem("gemm_rope:batch=2,seq=128,kv=200,q_heads=8,kv_heads=2,theta=65536,hidden=264,"
              "head=128,dtype=bf16"),
      *Config::parse("kernel=wgmma,wg_bm=128,wg_bn=256,wg_stages=4,wg_tma_store=1"));
  ASSERT_FALSE(tma.ok());
  EXPECT_NE(tma.error().message().find("no TMA store"), std::string::npos);
  auto ref = c.build(cuda::BuildRequest{kRopeRefSource, "rope_ref.cu", {}, {"rope_ref_f64"}});
  ASSERT_TRUE(ref.ok()) << ref.error().message();
  EXPECT_TRUE(ref->ok) << ref->log;
}

}  // namespace
}  // namespace attune::kernels
