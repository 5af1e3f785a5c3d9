// Every kernel source attune ships compiles with NVRTC for sm_90a (Hopper) with the defines its
// family passes, on a machine without a GPU; the cache answers a second build without compiling.
#include <gtest/gtest.h>

#include <algorithm>
#include <utility>

#include "core/config.h"
#include "core/problem.h"
#include "cuda/nvrtc_build.h"
#include "kernels/ops.h"
#include "kernels/plan.h"
#include "support/temp_dir.h"

namespace attune::kernels {
extern const char* const kGateSource;
extern const char* const kRmsnormSource;
extern const char* const kRmsnormRefSource;
extern const char* const kGemmSkinnySource;
extern const char* const kGemmSkinnyTcSource;
extern const char* const kGemmRefSource;
extern const char* const kClusterHeader;
extern const char* const kL2FlushSource;
extern const char* const kAttentionDecodeRefSource;
extern const char* const kGemmTiledSource;
extern const char* const kGemmWgmmaSource;
extern const char* const kAttentionDecodeFlashSource;
extern const char* const kAttentionDecodeSoftmaxSource;
extern const char* const kAttentionPrefillFlashSource;
extern const char* const kRopeSource;
extern const char* const kSiluMulSource;
}  // namespace attune::kernels

namespace attune {
namespace {

using cuda::BuildRequest;

void expect_builds(const cuda::Compiler& c, const BuildRequest& r, const std::string& name) {
  auto b = c.build(r);
  ASSERT_TRUE(b.ok()) << b.error().message();
  EXPECT_TRUE(b->ok) << name << ": " << b->log;
  EXPECT_FALSE(b->cubin.empty());
  EXPECT_EQ(b->lowered_names.count(name), 1u);
}

// A source with explicit options, given the headers the skinny GEMMs include (as their plans give
// them).
void expect_builds(const cuda::Compiler& c, const char* source, std::vector<std::string> options,
                   std::string name) {
  expect_builds(
      c,
      BuildRequest{source,
                   name + ".cu",
                   options,
                   {name},
                   {kernels::launch_header(), {"attune_cluster.cuh", kernels::kClusterHeader}}},
      name);
}

TEST(KernelSources, CompileForHopper) {
  cuda::Compiler c("sm_90a", "");
  expect_builds(c, kernels::kGateSource, {}, "check_half");
  expect_builds(c, kernels::kGateSource, {}, "check_typed");
  expect_builds(c, kernels::kRmsnormRefSource, {}, "rmsnorm_ref");
  expect_builds(c, kernels::kGemmRefSource, {}, "gemm_ref");
  expect_builds(c,
                BuildRequest{kernels::kL2FlushSource, "l2_flush.cu", {}, {"attune_l2_flush_read"}},
                "attune_l2_flush_read");
  expect_builds(c, kernels::kRmsnormSource,
                {"-DT=__nv_bfloat16", "-DHIDDEN=999", "-DTHREADS=32", "-DROWS_PER_BLOCK=2",
                 "-DVEC=1", "-DUNROLL=4", "-DRESIDUAL=1"},
                "rmsnorm");
  expect_builds(c, kernels::kGemmSkinnySource,
                {"-DT=__half", "-DM=7", "-DN=517", "-DK=999", "-DWARPS=2", "-DNB=4", "-DVEC=1",
                 "-DUNROLL=2", "-DBIAS=1"},
                "gemm_skinny");
  for (const char* m : {"-DM=1", "-DM=16"})
    expect_builds(c, kernels::kGemmSkinnyTcSource,
                  {"-DT=__nv_bfloat16", "-DTNAME=\"bf16\"", m, "-DN=1001", "-DK=1000", "-DWARPS=4",
                   "-DNT=2", "-DUNROLL=2", "-DBIAS=1"},
                  "gemm_skinny_tc");
}

// The tiled tensor-core GEMM through the same plan the tuner and the runtime launch: every
// pipeline depth, warp layout and split on odd shapes compiles as one launch; a K split is a
// cluster of `split` blocks per tile (grid times split) with room for its fp32 partial tile, and
// for an older GPU its build fails with the reason.
TEST(KernelSources, TiledGemmPlansCompile) {
  cuda::Compiler hopper("sm_90a", ""), ampere("sm_80", "");
  struct Case {
    const char* problem;
    const char* config;
    unsigned grid;
    unsigned smem;
  };
  const Case cases[] = {
      {"gemm:bias=1,dtype=bf16,k=1000,m=77,n=517",
       "kernel=tiled,tl_bm=64,tl_bn=128,tl_bk=32,tl_wm=2,tl_wn=2,tl_stages=3,tl_split=1,tl_group=8",
       2 * 5, 3 * (64 + 128) * 32 * 2},
      {"gemm:bias=0,dtype=fp16,k=1032,m=300,n=1001",
       "kernel=tiled,tl_bm=128,tl_bn=64,tl_bk=64,tl_wm=4,tl_wn=1,tl_stages=4,tl_split=4,tl_group=1",
       3 * 16 * 4, 4 * (128 + 64) * 64 * 2},
      {"gemm:bias=1,dtype=fp16,k=4096,m=5,n=333",
       "kernel=tiled,tl_bm=16,tl_bn=256,tl_bk=64,tl_wm=1,tl_wn=4,tl_stages=2,tl_split=8,tl_group=4",
       1 * 2 * 8, 2 * (16 + 256) * 64 * 2},
      // The partial tile outgrows the pipeline: 128 x 128 fp32 is 64 KiB against 2 x 256 x 32 x 2.
      {"gemm:bias=0,dtype=bf16,k=1024,m=128,n=1024",
       "kernel=tiled,tl_bm=128,tl_bn=128,tl_bk=32,tl_wm=2,tl_wn=2,tl_stages=2,tl_split=2,tl_group="
       "8",
       1 * 8 * 2, 128 * 128 * 4},
      {"gemm:bias=0,dtype=bf16,k=64,m=2049,n=4097",
       "kernel=tiled,tl_bm=256,tl_bn=128,tl_bk=32,tl_wm=4,tl_wn=2,tl_stages=5,tl_split=1,tl_group="
       "16",
       9 * 33, 5 * (256 + 128) * 32 * 2},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.config);
    auto plan = kernels::plan_gemm(*Problem::parse(k.problem), *Config::parse(k.config));
    ASSERT_TRUE(plan.ok()) << plan.error().message();
    const auto& kp = std::get<kernels::KernelPlan>(*plan);
    ASSERT_EQ(kp.steps.size(), 1u);
    EXPECT_EQ(kp.workspace_bytes, 0u);
    EXPECT_EQ(kp.steps[0].grid.x, k.grid);
    EXPECT_EQ(kp.steps[0].shared_bytes, k.smem);
    expect_builds(hopper, kp.build, kp.steps[0].kernel);
    auto old = ampere.build(kp.build);
    ASSERT_TRUE(old.ok());
    const bool split = std::string(k.config).find("tl_split=1") == std::string::npos;
    EXPECT_EQ(old->ok, !split);
    if (split) {
      EXPECT_NE(old->log.find("needs sm_90"), std::string::npos) << old->log;
    }
  }
}

// Hopper's warpgroup-MMA GEMM through its plans: one producer and one or two consumer warpgroups
// per block, a K split as a cluster of `split` blocks per tile, shared memory for the ring (or the
// split's fp32 partial tile) plus its mbarriers; every tile width, plain, with bias and with the
// SiLU * mul epilogue, compiles for Hopper, and for an older GPU the build fails with the reason.
// attention_prefill's kernel shares its wgmma header and compiles with it.
TEST(KernelSources, WgmmaGemmPlansCompile) {
  cuda::Compiler hopper("sm_90a", ""), ampere("sm_80", "");
  struct Case {
    const char* problem;
    const char* config;
    unsigned grid, threads;
    std::size_t smem;
  };
  const Case cases[] = {
      {"gemm:bias=0,dtype=bf16,k=1024,m=128,n=4096",
       "kernel=wgmma,wg_bm=128,wg_bn=128,wg_stages=4,wg_split=1", 32, 384,
       1024 + 4 * 256 * 128 + 64},
      {"gemm:bias=1,dtype=fp16,k=1000,m=77,n=517",
       "kernel=wgmma,wg_bm=64,wg_bn=256,wg_stages=3,wg_split=2", 2 * 3 * 2, 256,
       1024 + 3 * 320 * 128 + 48},
      // The partial tile outgrows the ring: 128 x 256 fp32 is 128 KiB against 2 x 384 x 128.
      {"gemm:bias=0,dtype=bf16,k=3072,m=128,n=1024",
       "kernel=wgmma,wg_bm=128,wg_bn=256,wg_stages=2,wg_split=8", 4 * 8, 384,
       1024 + 128 * 256 * 4 + 32},
      {"gemm:bias=0,dtype=bf16,k=1024,m=128,n=6144,silu_mul=1",
       "kernel=wgmma,wg_bm=128,wg_bn=64,wg_stages=6,wg_split=4", 96 * 4, 384,
       1024 + 6 * 192 * 128 + 96},
      // Three tiles per block: 32 x 16 tiles on ceil(512 / 3) blocks.
      {"gemm:bias=0,dtype=bf16,k=1024,m=4096,n=4096",
       "kernel=wgmma,wg_bm=128,wg_bn=256,wg_stages=4,wg_split=1,wg_tiles=3", 171, 384,
       1024 + 4 * 384 * 128 + 64},
      // Clusters of two blocks sharing B: 3 tile rows make 2 pairs (the last block's row past M)
      // of 5 tile columns, two blocks each.
      {"gemm:bias=1,dtype=fp16,k=4104,m=300,n=517",
       "kernel=wgmma,wg_bm=128,wg_bn=128,wg_stages=4,wg_split=1,wg_cluster=2", 2 * 5 * 2, 384,
       1024 + 4 * 256 * 128 + 64},
      // ... and under silu_mul, 5 pairs two to a cluster: 3 clusters.
      {"gemm:bias=0,dtype=bf16,k=1000,m=77,n=1056,silu_mul=1",
       "kernel=wgmma,wg_bm=64,wg_bn=256,wg_stages=4,wg_split=1,wg_tiles=2,wg_cluster=2", 3 * 2, 256,
       1024 + 4 * 320 * 128 + 64},
      // C through the TMA: two 8 KiB staging buffers per consumer warpgroup after the ring.
      {"gemm:bias=1,dtype=bf16,k=1000,m=300,n=1032",
       "kernel=wgmma,wg_bm=128,wg_bn=256,wg_stages=4,wg_split=1,wg_tiles=2,wg_tma_store=1",
       (3 * 5 + 1) / 2, 384, 1024 + 4 * 384 * 128 + 2 * 2 * 8192 + 64},
      {"gemm:bias=0,dtype=fp16,k=1024,m=77,n=1280,silu_mul=1",
       "kernel=wgmma,wg_bm=64,wg_bn=128,wg_stages=5,wg_split=1,wg_cluster=2,wg_tma_store=1", 2 * 10,
       256, 1024 + 5 * 192 * 128 + 2 * 8192 + 80},
      // Ping-pong consumers: two warpgroups of 64-row tiles (384 threads), each with its staging
      // buffers; 5 x 5 tiles two to a block.
      {"gemm:bias=1,dtype=bf16,k=1000,m=300,n=1032",
       "kernel=wgmma,wg_bm=64,wg_bn=256,wg_stages=4,wg_split=1,wg_tiles=2,wg_pingpong=1,"
       "wg_tma_store=1",
       13, 384, 1024 + 4 * 320 * 128 + 2 * 2 * 8192 + 64},
      // ... and under silu_mul in clusters of two blocks: 1 pair of tile rows x 5 columns, two
      // pairs to a cluster.
      {"gemm:bias=0,dtype=bf16,k=1000,m=77,n=1056,silu_mul=1",
       "kernel=wgmma,wg_bm=64,wg_bn=256,wg_stages=4,wg_split=1,wg_tiles=2,wg_cluster=2,"
       "wg_pingpong=1",
       3 * 2, 384, 1024 + 4 * 320 * 128 + 64},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.config);
    auto plan = kernels::plan_gemm(*Problem::parse(k.problem), *Config::parse(k.config));
    ASSERT_TRUE(plan.ok()) << plan.error().message();
    const auto& kp = std::get<kernels::KernelPlan>(*plan);
    ASSERT_EQ(kp.steps.size(), 1u);
    EXPECT_EQ(kp.steps[0].grid.x, k.grid);
    EXPECT_EQ(kp.steps[0].block.x, k.threads);
    EXPECT_EQ(kp.steps[0].shared_bytes, k.smem);
    // The TMA reads A and B through tensor maps of 64-wide K boxes, one block tile (under
    // silu_mul, half of one: the gate rows, then the up rows) per box.
    const auto shape = *kernels::gemm_shape(*Problem::parse(k.problem));
    const auto config = *Config::parse(k.config);
    const auto bm = static_cast<std::uint32_t>(config.get("wg_bm")->as_int());
    const auto bn = static_cast<std::uint32_t>(config.get("wg_bn")->as_int());
    ASSERT_GE(kp.steps[0].tensor_maps.size(), 2u);
    const auto& ta = kp.steps[0].tensor_maps[0];
    const auto& tb = kp.steps[0].tensor_maps[1];
    const bool tma_store = config.get("wg_tma_store") && config.get("wg_tma_store")->as_int() == 1;
    const std::vector<std::string> args =
        tma_store ? std::vector<std::string>{"c",    "tensor_map0", "tensor_map1", "tensor_map2",
                                             "bias", "r",           "eps"}
                  : std::vector<std::string>{"c", "tensor_map0", "tensor_map1", "bias", "r", "eps"};
    EXPECT_EQ(kp.steps[0].args, args);
    EXPECT_EQ(ta.arg, "a");
    EXPECT_EQ(ta.rows, static_cast<std::uint64_t>(shape.m));
    EXPECT_EQ(ta.cols, static_cast<std::uint64_t>(shape.k));
    EXPECT_EQ(ta.box_rows, bm);
    EXPECT_EQ(tb.arg, "b");
    EXPECT_EQ(tb.rows, static_cast<std::uint64_t>(shape.n));
    // Under wg_cluster 2 each block loads half the B tile for both (the gate or the up half).
    const bool cluster = config.get("wg_cluster") && config.get("wg_cluster")->as_int() == 2;
    EXPECT_EQ(tb.box_rows, shape.silu_mul || cluster ? bn / 2 : bn);
    EXPECT_EQ(ta.box_cols, 64u);
    EXPECT_EQ(tb.box_cols, 64u);
    // Under wg_tma_store 1 the kernel takes C's map too, in 64 x 64 boxes of the output.
    ASSERT_EQ(kp.steps[0].tensor_maps.size(), tma_store ? 3u : 2u);
    if (tma_store) {
      const auto& tc = kp.steps[0].tensor_maps[2];
      EXPECT_EQ(tc.arg, "c");
      EXPECT_EQ(tc.rows, static_cast<std::uint64_t>(shape.m));
      EXPECT_EQ(tc.cols, static_cast<std::uint64_t>(shape.out_n()));
      EXPECT_EQ(tc.box_rows, 64u);
      EXPECT_EQ(tc.box_cols, 64u);
    }
    expect_builds(hopper, kp.build, kp.steps[0].kernel);
    auto old = ampere.build(kp.build);
    ASSERT_TRUE(old.ok());
    EXPECT_FALSE(old->ok);
    EXPECT_NE(old->log.find("needs sm_90"), std::string::npos) << old->log;
  }
  // Past a block's shared memory the plan says so.
  auto big =
      kernels::plan_gemm(*Problem::parse("gemm:bias=0,dtype=bf16,k=1024,m=128,n=4096"),
                         *Config::parse("kernel=wgmma,wg_bm=128,wg_bn=256,wg_stages=5,wg_split=1"));
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.error().message().find("shared memory"), std::string::npos);
  // A K split takes one tile per block.
  auto split_tiles = kernels::plan_gemm(
      *Problem::parse("gemm:bias=0,dtype=bf16,k=1024,m=4096,n=4096"),
      *Config::parse("kernel=wgmma,wg_bm=128,wg_bn=128,wg_stages=4,wg_split=2,wg_tiles=2"));
  ASSERT_FALSE(split_tiles.ok());
  EXPECT_NE(split_tiles.error().message().find("under a K split wg_tiles 1, wg_cluster 1"),
            std::string::npos);
  // The TMA store takes whole 64-column boxes of 16-byte-aligned rows.
  for (const char* bad : {"gemm:bias=0,dtype=bf16,k=1024,m=256,n=1030",
                          "gemm:bias=0,dtype=bf16,k=1024,m=256,n=256,silu_mul=1"}) {
    auto narrow = kernels::plan_gemm(
        *Problem::parse(bad),
        *Config::parse("kernel=wgmma,wg_bm=128,wg_bn=64,wg_stages=4,wg_split=1,wg_tma_store=1"));
    ASSERT_FALSE(narrow.ok()) << bad;
    EXPECT_NE(narrow.error().message().find("whole 64-column boxes"), std::string::npos);
  }
  // Ping-pong consumers take 64-row tiles and no K split.
  for (const char* bad : {"kernel=wgmma,wg_bm=128,wg_bn=128,wg_stages=4,wg_tiles=2,wg_pingpong=1",
                          "kernel=wgmma,wg_bm=64,wg_bn=128,wg_stages=4,wg_split=2,wg_pingpong=1"}) {
    auto pp = kernels::plan_gemm(*Problem::parse("gemm:bias=0,dtype=bf16,k=1024,m=4096,n=4096"),
                                 *Config::parse(bad));
    ASSERT_FALSE(pp.ok()) << bad;
    EXPECT_NE(pp.error().message().find("ping-pong consumers (wg_pingpong 1) only at wg_bm 64"),
              std::string::npos);
  }
  auto split_cluster = kernels::plan_gemm(
      *Problem::parse("gemm:bias=0,dtype=bf16,k=1024,m=4096,n=4096"),
      *Config::parse("kernel=wgmma,wg_bm=128,wg_bn=128,wg_stages=4,wg_split=2,wg_cluster=2"));
  ASSERT_FALSE(split_cluster.ok());
  EXPECT_NE(split_cluster.error().message().find("under a K split wg_tiles 1, wg_cluster 1"),
            std::string::npos);
  // Two blocks per SM: the registers split by setmaxnreg under the launch bound of two blocks.
  for (const char* config : {"kernel=wgmma,block_n=128,consumers=2,stages=2,overlap=1",
                             "kernel=wgmma,block_n=64,consumers=1,stages=2,overlap=1,"
                             "blocks_per_sm=2"}) {
    auto prefill = kernels::plan_attention_prefill(
        *kernels::attention_prefill_op().resolve(
            *Problem::parse("attention_prefill:seq=1000,batch=1,head=128,q_heads=16,kv_heads=8")),
        *Config::parse(config));
    ASSERT_TRUE(prefill.ok()) << prefill.error().message();
    const auto& pk = std::get<kernels::KernelPlan>(*prefill);
    expect_builds(hopper, pk.build, pk.steps[0].kernel);
  }
}

// The skinny kernels' K split through the plans: a cluster of `split` blocks per group of rows
// (grid times split), compiled for Hopper; for an older GPU the build fails with the reason.
TEST(KernelSources, SkinnySplitPlansCompileAsClusters) {
  cuda::Compiler hopper("sm_90a", ""), ampere("sm_80", "");
  struct Case {
    const char* problem;
    const char* config;
    unsigned grid;
  };
  const Case cases[] = {
      {"gemm:bias=1,dtype=bf16,k=1000,m=3,n=1001",
       "kernel=skinny,sk_warps=2,sk_nb=4,sk_vec=8,sk_unroll=2,sk_split=4", 251 * 4},
      {"gemm:bias=0,dtype=fp16,k=3072,m=16,n=1024",
       "kernel=skinny_tc,tc_warps=4,tc_nt=2,tc_unroll=2,tc_split=8", 32 * 8},
      {"gemm:bias=1,dtype=bf16,k=1000,m=9,n=1001",
       "kernel=skinny_tc,tc_warps=1,tc_nt=1,tc_unroll=1,tc_split=2", 63 * 2},
      // A config from before the split knob existed means no split.
      {"gemm:bias=0,dtype=bf16,k=1024,m=1,n=512", "kernel=skinny_tc,tc_warps=4,tc_nt=1,tc_unroll=1",
       32},
  };
  for (const Case& k : cases) {
    auto plan = kernels::plan_gemm(*Problem::parse(k.problem), *Config::parse(k.config));
    ASSERT_TRUE(plan.ok()) << plan.error().message();
    const auto& kp = std::get<kernels::KernelPlan>(*plan);
    ASSERT_EQ(kp.steps.size(), 1u);
    EXPECT_EQ(kp.steps[0].grid.x, k.grid) << k.config;
    expect_builds(hopper, kp.build, kp.steps[0].kernel);
    auto old = ampere.build(kp.build);
    ASSERT_TRUE(old.ok());
    const bool split = std::string(k.config).find("split=") != std::string::npos;
    EXPECT_EQ(old->ok, !split) << k.config;
    if (split) {
      EXPECT_NE(old->log.find("needs sm_90"), std::string::npos) << old->log;
    }
  }
}

// gemm with SiLU * mul in its epilogue (silu_mul=1) through the plans: attune's three kernels
// compile with the epilogue (the tiled one with and without split-K, whose cluster applies it),
// their grids cover the n / 2 outputs, and cuBLASLt's form is the split chain: the matmul into the
// workspace, then silu_mul's kernel reading it.
TEST(KernelSources, GemmSiluMulPlansCompile) {
  cuda::Compiler c("sm_90a", "");
  expect_builds(c, kernels::kGemmRefSource, {}, "silu_mul_ref");
  struct Case {
    const char* problem;
    const char* config;
    unsigned grid;
    std::size_t steps;
  };
  const Case cases[] = {
      {"gemm:bias=0,dtype=bf16,k=1000,m=3,n=1002,silu_mul=1",
       "kernel=skinny,sk_warps=2,sk_nb=4,sk_vec=8,sk_unroll=2,sk_split=2", 126 * 2, 1},
      {"gemm:bias=0,dtype=fp16,k=1024,m=16,n=6144,silu_mul=1",
       "kernel=skinny_tc,tc_warps=4,tc_nt=2,tc_unroll=2,tc_split=1", 96, 1},
      {"gemm:bias=0,dtype=bf16,k=1024,m=9,n=6144,silu_mul=1",
       "kernel=skinny_tc,tc_warps=2,tc_nt=4,tc_unroll=1,tc_split=4", 48 * 4, 1},
      {"gemm:bias=0,dtype=bf16,k=1024,m=128,n=6144,silu_mul=1",
       "kernel=tiled,tl_bm=64,tl_bn=128,tl_bk=32,tl_wm=2,tl_wn=2,tl_stages=3,tl_split=1,tl_group=8",
       2 * 48, 1},
      {"gemm:bias=0,dtype=fp16,k=1024,m=77,n=1056,silu_mul=1",
       "kernel=tiled,tl_bm=128,tl_bn=64,tl_bk=64,tl_wm=4,tl_wn=1,tl_stages=4,tl_split=4,tl_group=1",
       1 * 17 * 4, 1},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.config);
    auto plan = kernels::plan_gemm(*Problem::parse(k.problem), *Config::parse(k.config));
    ASSERT_TRUE(plan.ok()) << plan.error().message();
    const auto& kp = std::get<kernels::KernelPlan>(*plan);
    ASSERT_EQ(kp.steps.size(), k.steps);
    EXPECT_EQ(kp.steps[0].grid.x, k.grid);
    for (const auto& step : kp.steps) expect_builds(c, kp.build, step.kernel);
  }
  auto lt =
      kernels::plan_gemm(*Problem::parse("gemm:bias=0,dtype=bf16,k=1024,m=8,n=6144,silu_mul=1"),
                         *Config::parse("kernel=cublaslt,lt_algo=0,lt_split=0,lt_tile=0"));
  ASSERT_TRUE(lt.ok()) << lt.error().message();
  const auto& chain = std::get<kernels::ChainPlan>(*lt);
  ASSERT_EQ(chain.steps.size(), 2u);
  const auto& mm = std::get<kernels::LtMatmul>(chain.steps[0]);
  EXPECT_EQ(mm.m, 8);
  EXPECT_EQ(mm.n, 6144);
  EXPECT_EQ(mm.c.arg, "workspace");
  EXPECT_GE(chain.workspace_bytes, 8u * 6144 * 2 + mm.workspace_bytes);
  const auto& act = std::get<kernels::LaunchStep>(chain.steps[1]);
  EXPECT_EQ(act.args, (std::vector<std::string>{"c", "workspace", "rows"}));
  expect_builds(c, chain.build, act.kernel);
  // Only cuBLASLt's own algorithm: the chain has no place for the variants' overrides.
  EXPECT_FALSE(
      kernels::plan_gemm(*Problem::parse("gemm:bias=0,dtype=bf16,k=1024,m=8,n=6144,silu_mul=1"),
                         *Config::parse("kernel=cublaslt,lt_algo=2,lt_split=0,lt_tile=0"))
          .ok());
}

// gemm with an RMSNorm folded in (rms_norm=1) and a residual added (residual=1): the wgmma kernel
// compiles with both epilogues (straight stores, the TMA store, a K split under residual alone,
// the SiLU * mul form under rms_norm) and takes the residual and epsilon after the bias;
// cuBLASLt's rms_norm form is the split chain (the weightless row kernel into the workspace, the
// matmul from there, under silu_mul its kernel), its residual the matmul's; the other kernels and
// a K split under rms_norm are refused.
TEST(KernelSources, GemmRmsNormAndResidualPlansCompile) {
  cuda::Compiler c("sm_90a", "");
  expect_builds(c, kernels::kGemmRefSource, {}, "row_rms_scale_ref");
  expect_builds(c, kernels::kGemmRefSource, {}, "add_residual_ref");
  const std::pair<const char*, const char*> cases[] = {
      {"gemm:bias=0,dtype=bf16,k=1024,m=128,n=4096,rms_norm=1",
       "kernel=wgmma,wg_bm=64,wg_bn=128,wg_stages=8,wg_split=1"},
      {"gemm:bias=0,dtype=fp16,k=1000,m=77,n=6144,rms_norm=1,silu_mul=1",
       "kernel=wgmma,wg_bm=128,wg_bn=256,wg_stages=4,wg_split=1,wg_tma_store=1"},
      {"gemm:bias=0,dtype=bf16,k=2048,m=128,n=1024,residual=1",
       "kernel=wgmma,wg_bm=64,wg_bn=128,wg_stages=8,wg_split=4"},
      {"gemm:bias=0,dtype=bf16,k=1024,m=300,n=1024,residual=1,rms_norm=1",
       "kernel=wgmma,wg_bm=128,wg_bn=128,wg_stages=4,wg_split=1,wg_tma_store=1,wg_tiles=2"},
      {"gemm:bias=0,dtype=bf16,k=1024,m=300,n=2048,rms_norm=1",
       "kernel=wgmma,wg_bm=64,wg_bn=128,wg_stages=4,wg_split=1,wg_tiles=3,wg_pingpong=1,"
       "wg_cluster=2"},
  };
  for (const auto& [problem, config] : cases) {
    SCOPED_TRACE(std::string(problem) + " " + config);
    auto plan = kernels::plan_gemm(*Problem::parse(problem), *Config::parse(config));
    ASSERT_TRUE(plan.ok()) << plan.error().message();
    const auto& kp = std::get<kernels::KernelPlan>(*plan);
    ASSERT_EQ(kp.steps.size(), 1u);
    const auto& args = kp.steps[0].args;
    ASSERT_GE(args.size(), 2u);
    EXPECT_EQ(args[args.size() - 2], "r");
    EXPECT_EQ(args.back(), "eps");
    expect_builds(c, kp.build, kp.steps[0].kernel);
  }
  for (const char* problem : {"gemm:bias=0,dtype=bf16,k=1024,m=8,n=1024,rms_norm=1",
                              "gemm:bias=0,dtype=bf16,k=1000,m=8,n=6144,rms_norm=1,silu_mul=1",
                              "gemm:bias=0,dtype=bf16,k=1024,m=8,n=1024,residual=1,rms_norm=1"}) {
    SCOPED_TRACE(problem);
    const Problem p = *Problem::parse(problem);
    auto lt =
        kernels::plan_gemm(p, *Config::parse("kernel=cublaslt,lt_algo=0,lt_split=0,lt_tile=0"));
    ASSERT_TRUE(lt.ok()) << lt.error().message();
    const auto& chain = std::get<kernels::ChainPlan>(*lt);
    const bool silu = p.flag("silu_mul");
    ASSERT_EQ(chain.steps.size(), silu ? 3u : 2u);
    const auto& norm = std::get<kernels::LaunchStep>(chain.steps[0]);
    EXPECT_EQ(norm.args[0], "workspace");
    const auto& mm = std::get<kernels::LtMatmul>(chain.steps[1]);
    // The matmul reads the scaled A where the row kernel wrote it, and writes past nothing.
    EXPECT_EQ(mm.a.arg, "workspace");
    EXPECT_EQ(mm.a.offset, norm.workspace_offset);
    EXPECT_EQ(mm.c.arg, silu ? "workspace" : "c");
    EXPECT_EQ(mm.residual.arg, p.flag("residual") ? "r" : "");
    EXPECT_GE(mm.workspace_offset, norm.workspace_offset + 8u * *p.int_attr("k") * 2);
    EXPECT_GE(chain.workspace_bytes, mm.workspace_offset + mm.workspace_bytes);
    for (const auto& step : chain.steps)
      if (const auto* k = std::get_if<kernels::LaunchStep>(&step))
        expect_builds(c, chain.build, k->kernel);
    EXPECT_FALSE(
        kernels::plan_gemm(p, *Config::parse("kernel=cublaslt,lt_algo=1,lt_split=0,lt_tile=0"))
            .ok());
  }
  // A residual alone keeps cuBLASLt's every variant (beta = 1).
  auto variant =
      kernels::plan_gemm(*Problem::parse("gemm:bias=0,dtype=bf16,k=1024,m=8,n=1024,residual=1"),
                         *Config::parse("kernel=cublaslt,lt_algo=3,lt_split=0,lt_tile=0"));
  ASSERT_TRUE(variant.ok()) << variant.error().message();
  EXPECT_TRUE(std::holds_alternative<kernels::LtPlan>(*variant));
  EXPECT_FALSE(
      kernels::plan_gemm(*Problem::parse("gemm:bias=0,dtype=bf16,k=1024,m=128,n=1024,rms_norm=1"),
                         *Config::parse("kernel=wgmma,wg_bm=64,wg_bn=128,wg_stages=8,wg_split=2"))
          .ok());
  EXPECT_FALSE(
      kernels::plan_gemm(
          *Problem::parse("gemm:bias=0,dtype=bf16,k=1024,m=8,n=1024,residual=1"),
          *Config::parse("kernel=skinny,sk_warps=4,sk_nb=2,sk_vec=8,sk_unroll=1,sk_split=1"))
          .ok());
}

// attention_decode through its plans, on every head size and dtype: a sample of flash configs
// (with and without the combine of splits, every warp count and both load widths), two of the
// tensor-core form (its splits merged by the combine launch and by a thread block cluster), the
// split baseline's softmax, and the float64 reference. The flash kernel's unrolled loops cost
// seconds of NVRTC each (ptxas: 3 s for head 256 at q_rows 8), so each pair gets one sampled
// config.
TEST(KernelSources, AttentionDecodePlansCompileOnEveryHeadSize) {
  cuda::Compiler c("sm_90a", "");
  const char* configs[] = {
      "kernel=flash,splits=1,kv_tile=16,warps=4,vec=8,q_rows=1",
      "kernel=flash,splits=8,kv_tile=32,warps=2,vec=4,q_rows=4",
      "kernel=flash,splits=32,kv_tile=128,warps=8,vec=8,q_rows=8",
      "kernel=flash,splits=2,kv_tile=64,warps=1,vec=4,q_rows=16",
      "kernel=mma,splits=8,kv_tile=32,warps=2,vec=8,q_rows=1,combine=cluster",
      "kernel=mma,splits=4,kv_tile=16,warps=4,vec=8,q_rows=1,combine=kernel",
  };
  std::size_t next = 0;
  for (const char* head : {"64", "128", "256"}) {
    for (const char* dtype : {"bf16", "fp16"}) {
      const std::string spec = std::string(
                                   "attention_decode:batch=3,kv=1000,q_heads=16,kv_heads=2,"
                                   "q_len=3,head=") +
                               head + ",dtype=" + dtype;
      auto p = kernels::attention_decode_op().resolve(*Problem::parse(spec));
      ASSERT_TRUE(p.ok()) << p.error().message();
      // One config per (head, dtype), rotating through the sample: every config and every
      // head size and dtype compile, at a sixth of the NVRTC time of all pairs.
      {
        const char* config = configs[next++ % std::size(configs)];
        SCOPED_TRACE(spec + " " + config);
        auto plan = kernels::plan_attention_decode(*p, *Config::parse(config));
        ASSERT_TRUE(plan.ok()) << plan.error().message();
        const auto& kp = std::get<kernels::KernelPlan>(*plan);
        const std::string text = config;
        const bool one_launch = text.find("splits=1,") != std::string::npos ||
                                text.find("combine=cluster") != std::string::npos;
        EXPECT_EQ(kp.steps.size(), one_launch ? 1u : 2u);
        for (const auto& step : kp.steps) expect_builds(c, kp.build, step.kernel);
      }
      auto split = kernels::plan_attention_decode(
          *p, *Config::parse(kernels::attention_decode_op().baseline_config));
      ASSERT_TRUE(split.ok()) << split.error().message();
      const auto& chain = std::get<kernels::ChainPlan>(*split);
      expect_builds(c, chain.build, "attn_decode_softmax");
    }
  }
  expect_builds(c, kernels::kAttentionDecodeRefSource, {}, "attention_decode_ref");
  // The tensor-core form's two row tiles per block (q_rows=32) in a cluster of 16 splits, the
  // non-portable size, on the head sizes the space gives two row tiles (head + kv_tile <= 144).
  for (const char* spec :
       {"attention_decode:batch=3,kv=1000,q_heads=32,kv_heads=4,q_len=4,head=128,dtype=bf16",
        "attention_decode:batch=1,kv=4097,q_heads=16,kv_heads=2,q_len=3,head=64,dtype=fp16"}) {
    SCOPED_TRACE(spec);
    auto p = kernels::attention_decode_op().resolve(*Problem::parse(spec));
    ASSERT_TRUE(p.ok()) << p.error().message();
    auto plan = kernels::plan_attention_decode(
        *p, *Config::parse("kernel=mma,splits=16,kv_tile=16,warps=8,vec=8,q_rows=32,"
                           "combine=cluster"));
    ASSERT_TRUE(plan.ok()) << plan.error().message();
    const auto& kp = std::get<kernels::KernelPlan>(*plan);
    ASSERT_EQ(kp.steps.size(), 1u);
    expect_builds(c, kp.build, kp.steps[0].kernel);
  }
}

// Plan kernels may be launched programmatically dependent on the kernel ahead (plan_launch.cpp), so
// each must wait for it before touching global memory: in every source a plan launches, every
// entry point's first statement is attune_grid_dependency() (no ';' between the entry point and
// the call, and no other entry point).
TEST(KernelSources, EveryPlanKernelFirstWaitsForTheKernelAhead) {
  const std::pair<const char*, const char*> sources[] = {
      {"rmsnorm.cu", kernels::kRmsnormSource},
      {"gemm_skinny.cu", kernels::kGemmSkinnySource},
      {"gemm_skinny_tc.cu", kernels::kGemmSkinnyTcSource},
      {"gemm_tiled.cu", kernels::kGemmTiledSource},
      {"gemm_wgmma.cu", kernels::kGemmWgmmaSource},
      {"attention_decode_flash.cu", kernels::kAttentionDecodeFlashSource},
      {"attention_decode_softmax.cu", kernels::kAttentionDecodeSoftmaxSource},
      {"attention_prefill_flash.cu", kernels::kAttentionPrefillFlashSource},
      {"rope.cu", kernels::kRopeSource},
      {"silu_mul.cu", kernels::kSiluMulSource}};
  const std::string entry = "extern \"C\" __global__", wait = "attune_grid_dependency();";
  int entries = 0;
  for (const auto& [name, text] : sources) {
    const std::string src = text;
    for (auto at = src.find(entry); at != std::string::npos; at = src.find(entry, at + 1)) {
      ++entries;
      const auto call = src.find(wait, at);
      ASSERT_NE(call, std::string::npos) << name << ": an entry point that never waits";
      const std::string between = src.substr(at, call - at);
      const auto line =
          std::count(src.begin(), src.begin() + static_cast<std::ptrdiff_t>(at), '\n');
      EXPECT_EQ(between.find(';'), std::string::npos)
          << name << ":" << line + 1 << ": a statement before attune_grid_dependency()";
      EXPECT_EQ(between.find(entry, 1), std::string::npos)
          << name << ":" << line + 1 << ": an entry point without attune_grid_dependency()";
    }
  }
  EXPECT_EQ(entries, 16);  // rope 4, attention_decode_flash 3, silu_mul 2, the others 1
}

TEST(KernelSources, CompileErrorsComeBackWithTheLogAndAreCached) {
  testing::TempDir dir;
  cuda::Compiler c("sm_90a", dir.path());
  BuildRequest bad{"extern \"C\" __global__ void k() { undeclared_thing(); }", "bad.cu", {}, {"k"}};
  auto first = c.build(bad);
  ASSERT_TRUE(first.ok());
  EXPECT_FALSE(first->ok);
  EXPECT_NE(first->log.find("undeclared_thing"), std::string::npos) << first->log;
  auto second = c.build(bad);
  ASSERT_TRUE(second.ok());
  EXPECT_TRUE(second->from_cache);
  EXPECT_FALSE(second->ok);

  BuildRequest good{kernels::kGateSource, "gate.cu", {}, {"fill_random_half"}};
  EXPECT_FALSE(c.build(good)->from_cache);
  auto again = c.build(good);
  EXPECT_TRUE(again->from_cache);
  EXPECT_TRUE(again->ok);
  // Another option is another build.
  good.options = {"-DUNUSED=1"};
  EXPECT_FALSE(c.build(good)->from_cache);
  // So is another text of a header the source includes.
  BuildRequest with_header{
      "#include \"h.cuh\"\nextern \"C\" __global__ void k(int* p) { *p = VALUE; }",
      "k.cu",
      {},
      {"k"},
      {{"h.cuh", "#define VALUE 1\n"}}};
  auto h1 = c.build(with_header);
  ASSERT_TRUE(h1.ok());
  EXPECT_TRUE(h1->ok) << h1->log;
  EXPECT_TRUE(c.build(with_header)->from_cache);
  with_header.headers[0].second = "#define VALUE 2\n";
  EXPECT_FALSE(c.build(with_header)->from_cache);
}

}  // namespace
}  // namespace attune
