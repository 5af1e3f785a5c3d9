// rope and silu_mul on a real GPU (issue 17), backend-ops style: every config of each op's space
// on odd shapes against the float64 reference, through the family's gate (fresh random inputs,
// poisoned outputs with guard elements, NaN checks; for rope also the caches' old rows, which must
// be left as they were). Skipped where no GPU answers.
#include <cstdint>
#include <string>
#include <vector>

#include "gpu/gpu_support.h"

namespace attune {
namespace {

// Every config of the space (or, with `at_most`, that many spread evenly over it, the baseline
// first) passes the gate and is timed; returns how many ran.
std::size_t every_config_passes(Backend& cuda, const std::string& spec,
                                std::size_t at_most = SIZE_MAX) {
  auto p = cuda.resolve(spec);
  EXPECT_TRUE(p.ok()) << p.error().message();
  if (!p) return 0;
  auto space = cuda.space(*p);
  EXPECT_TRUE(space.ok()) << space.error().message();
  if (!space) return 0;
  std::vector<Config> configs;
  for (auto e = space->enumerate(); auto pt = e.next();) configs.push_back(space->config(*pt));
  if (configs.size() > at_most) {
    std::vector<Config> spread;
    for (std::size_t i = 0; i < at_most; ++i)
      spread.push_back(configs[i * configs.size() / at_most]);
    configs = std::move(spread);
  }
  for (const Config& c : configs) cuda.prepare(*p, c);
  std::size_t n = 0;
  for (const Config& c : configs) {
    EXPECT_FALSE(cuda.can_implement(*p, c).has_value()) << c.text();
    Outcome o = cuda.execute(*p, c, Regime::kRank);
    EXPECT_EQ(o.verdict, Verdict::kOk) << spec << " " << c.text() << ": " << o.message;
    if (o.verdict != Verdict::kOk) continue;
    EXPECT_TRUE(o.check && o.check->value <= o.check->tolerance);
    EXPECT_TRUE(o.measurement && o.measurement->median_us > 0);
    ++n;
  }
  std::cout << spec << ": " << n << " of " << configs.size() << " configs ok\n";
  return n;
}

// rope on odd shapes: every head size, both dtypes, with and without the q/k norm; prefills
// (kv == seq) and appends into deeper caches (kv > seq, old rows kept), one token or 77 a
// sequence, GQA ratios 1, 2 and 4, batch 1-5, the RoPE bases of Llama-2, Llama-3 and Qwen3.
TEST(LayerOpsGpu, RopeEveryConfigOnOddShapes) {
  ATTUNE_REQUIRE_GPU(cuda);
  EXPECT_GE(
      every_config_passes(*cuda,
                          "rope:batch=3,seq=77,kv=77,q_heads=16,kv_heads=8,head=128,theta=1000000,"
                          "qk_norm=1"),
      30u);
  EXPECT_GE(
      every_config_passes(*cuda,
                          "rope:batch=5,seq=1,kv=1001,q_heads=8,kv_heads=2,head=128,theta=500000,"
                          "dtype=fp16"),
      20u);
  EXPECT_GE(
      every_config_passes(*cuda,
                          "rope:batch=1,seq=33,kv=4099,q_heads=4,kv_heads=4,head=64,theta=10000,"
                          "qk_norm=1,dtype=fp16"),
      20u);
  EXPECT_GE(
      every_config_passes(*cuda,
                          "rope:batch=2,seq=3,kv=9,q_heads=2,kv_heads=1,head=256,theta=1000000,"
                          "qk_norm=1"),
      10u);
}

// rope with Llama 3.1's frequency rewrite: decode steps and a prefill at positions up to 8191,
// where the rewritten frequencies (pairs 35-63 of a 128 head divided by 8, pairs 29-34 mixed) turn
// a pair by radians more or less than the plain ones, so a kernel that ignored the flag fails.
TEST(LayerOpsGpu, RopeLlama3ScalingEveryConfig) {
  ATTUNE_REQUIRE_GPU(cuda);
  EXPECT_GE(
      every_config_passes(*cuda,
                          "rope:batch=3,seq=1,kv=8191,q_heads=32,kv_heads=8,head=128,theta=500000,"
                          "llama3_scaling=1"),
      30u);
  EXPECT_GE(
      every_config_passes(*cuda,
                          "rope:batch=1,seq=300,kv=3000,q_heads=8,kv_heads=2,head=64,theta=500000,"
                          "llama3_scaling=1,dtype=fp16"),
      20u);
}

// silu_mul on odd shapes: rows of an odd length (scalar accesses only), of lengths 8 divides,
// one row and many, both dtypes.
TEST(LayerOpsGpu, SiluMulEveryConfigOnOddShapes) {
  ATTUNE_REQUIRE_GPU(cuda);
  EXPECT_GE(every_config_passes(*cuda, "silu_mul:rows=37,inter=999"), 10u);
  EXPECT_GE(every_config_passes(*cuda, "silu_mul:rows=1,inter=3072,dtype=fp16"), 30u);
  EXPECT_GE(every_config_passes(*cuda, "silu_mul:rows=333,inter=1000"), 50u);
}

// gemm_rope (the QKV projection with RoPE in its epilogue) on odd shapes against the float64
// projection rotated by rope's reference: token counts that leave partial tiles (231, 5), a hidden
// size that is not a multiple of the K tile, every head size, both dtypes, with and without the
// q/k norm, an append into a deeper cache (its old rows kept), positions past 65536 (the fused
// epilogues' long-angle reduction) and Llama 3.1's scaling. The split baseline and the tiled and
// wgmma kernels' tiles, warps, stages and groups, spread over each space.
TEST(LayerOpsGpu, GemmRopeEveryConfigOnOddShapes) {
  ATTUNE_REQUIRE_GPU(cuda);
  EXPECT_GE(every_config_passes(*cuda,
                                "gemm_rope:batch=3,seq=77,kv=77,q_heads=16,kv_heads=8,head=128,"
                                "theta=1000000,hidden=1032,qk_norm=1",
                                120),
            100u);
  EXPECT_GE(every_config_passes(*cuda,
                                "gemm_rope:batch=5,seq=1,kv=1001,q_heads=8,kv_heads=2,head=128,"
                                "theta=500000,hidden=520,dtype=fp16,llama3_scaling=1",
                                40),
            30u);
  EXPECT_GE(every_config_passes(*cuda,
                                "gemm_rope:batch=1,seq=33,kv=4099,q_heads=4,kv_heads=4,head=64,"
                                "theta=10000,hidden=264,qk_norm=1,dtype=fp16",
                                40),
            30u);
  EXPECT_GE(every_config_passes(*cuda,
                                "gemm_rope:batch=2,seq=3,kv=9,q_heads=2,kv_heads=1,head=256,"
                                "theta=1000000,hidden=136,qk_norm=1",
                                40),
            20u);
  EXPECT_GE(every_config_passes(*cuda,
                                "gemm_rope:batch=1,seq=3,kv=70001,q_heads=2,kv_heads=1,head=64,"
                                "theta=10000,hidden=136,qk_norm=1",
                                40),
            20u);
}

// gemm_rope rms_norm=1 (the input RMSNorm folded in: x's rows scaled by their reciprocal RMS
// before the projection): the split baseline (an RMSNorm kernel, cuBLASLt, RoPE) and the wgmma
// kernel's configs, one and two consumers, ping-pong, staged stores, on partial tiles, a hidden
// size off the K tile, both dtypes, with and without the q/k norm.
TEST(LayerOpsGpu, GemmRopeRmsNormEveryConfigOnOddShapes) {
  ATTUNE_REQUIRE_GPU(cuda);
  EXPECT_GE(every_config_passes(*cuda,
                                "gemm_rope:batch=3,seq=77,kv=77,q_heads=16,kv_heads=8,head=128,"
                                "theta=1000000,hidden=1032,qk_norm=1,rms_norm=1",
                                120),
            100u);
  EXPECT_GE(every_config_passes(*cuda,
                                "gemm_rope:batch=5,seq=1,kv=1001,q_heads=8,kv_heads=2,head=128,"
                                "theta=500000,hidden=520,dtype=fp16,rms_norm=1",
                                40),
            30u);
  EXPECT_GE(every_config_passes(*cuda,
                                "gemm_rope:batch=1,seq=33,kv=4099,q_heads=4,kv_heads=4,head=64,"
                                "theta=10000,hidden=264,qk_norm=1,rms_norm=1",
                                40),
            30u);
}

}  // namespace
}  // namespace attune
