#include "backends/sim/sim_backend.h"

#include <gtest/gtest.h>

#include "core/op.h"

namespace attune {
namespace {

TEST(Sim, OffersItsProblemsAndResolvesSpecs) {
  SimBackend sim;
  std::set<std::string> names;
  for (const auto& p : sim.problems()) names.insert(p.problem.name());
  EXPECT_EQ(names, (std::set<std::string>{"faults", "gemm", "rmsnorm", "attention_decode",
                                          "attention_prefill", "rope", "silu_mul", "gemm_rope"}));
  auto g = sim.resolve("gemm:m=16");
  ASSERT_TRUE(g.ok()) << g.error().message();
  EXPECT_EQ(*g->int_attr("m"), 16);
  EXPECT_EQ(*g->int_attr("n"), 4096);  // defaults fill the rest
  EXPECT_FALSE(sim.resolve("conv").ok());
  EXPECT_FALSE(sim.resolve("gemm:q=1").ok());
  EXPECT_FALSE(sim.resolve("gemm:m=-4").ok());
  EXPECT_FALSE(sim.resolve("gemm:m=abc").ok());
}

// The sim's problems take their sizes from the ops' signatures: their texts, hence the structural
// keys stored databases hold, stay what they were.
TEST(Sim, ProblemsKeepTheirStructuralKeys) {
  SimBackend sim;
  EXPECT_EQ(sim.resolve("gemm")->text(), "gemm:k=4096,landscape=1,m=64,n=4096");
  EXPECT_EQ(sim.resolve("rmsnorm")->text(), "rmsnorm:hidden=4096,landscape=2,rows=4096");
  EXPECT_EQ(sim.resolve("faults")->text(), "faults:landscape=3,n=65536");
  EXPECT_EQ(sim.resolve("gemm:m=16,n=4096,k=1024")->text(), "gemm:k=1024,landscape=1,m=16,n=4096");
}

// `--op gemm --shape ... --dtype bf16` without a GPU falls back to the sim with the same problem
// spec: the op's dtype and flags are taken; the defaults change nothing (same problem, same key),
// other values make a problem of their own, and values the op does not have are refused.
TEST(Sim, BuiltInOpsTakeTheirSignaturesDtypeAndFlags) {
  SimBackend sim;
  EXPECT_EQ(sim.resolve("gemm:m=16,n=4096,k=1024,dtype=bf16")->text(),
            "gemm:k=1024,landscape=1,m=16,n=4096");
  EXPECT_EQ(sim.resolve("gemm:m=16,dtype=fp16,bias=1")->text(),
            "gemm:bias=1,dtype=fp16,k=4096,landscape=1,m=16,n=4096");
  EXPECT_EQ(sim.resolve("rmsnorm:rows=8192,hidden=4096,residual=0")->text(),
            "rmsnorm:hidden=4096,landscape=2,rows=8192");
  EXPECT_EQ(sim.resolve("gemm:dtype=fp8").error().message(),
            "sim problem 'gemm': dtype 'fp8' is not one of the op's");
  EXPECT_EQ(sim.resolve("gemm:bias=2").error().message(), "sim problem 'gemm': bias is 0 or 1");
  EXPECT_EQ(sim.resolve("faults:dtype=bf16").error().message(),
            "sim problem 'faults' has no attribute 'dtype'");
  // Tuned like any sim problem.
  Problem p = *sim.resolve("gemm:m=16,dtype=fp16");
  EXPECT_TRUE(sim.space(p).ok());
}

TEST(Sim, LandscapeIsDeterministicWithAKnownOptimumAndCliffs) {
  SimBackend sim;
  Problem p = *sim.resolve("gemm");
  Space s = *sim.space(p);
  auto opt = sim.optimum(p);
  ASSERT_TRUE(opt.ok());
  std::set<long> distinct;
  double worst = 0;
  for (auto e = s.enumerate(); auto pt = e.next();) {
    double t = *sim.true_time_us(p, s.config(*pt), Regime::kRank);
    EXPECT_GE(t, opt->second);
    EXPECT_EQ(t, *sim.true_time_us(p, s.config(*pt), Regime::kRank));
    EXPECT_GT(*sim.true_time_us(p, s.config(*pt), Regime::kDeploy), t);  // cold L2 costs
    distinct.insert(static_cast<long>(t * 1000));
    worst = std::max(worst, t);
  }
  EXPECT_GT(distinct.size(), s.count() / 2);  // rugged, not flat
  EXPECT_GT(worst / opt->second, 10.0);       // cliffs exist
  // A different landscape seed moves the times.
  Problem q = *sim.resolve("gemm:landscape=9");
  EXPECT_NE(*sim.true_time_us(q, opt->first, Regime::kRank), opt->second);
}

// rope's landscape (issue 17): the op's one space (the chain baseline one config), the baseline
// well off the optimum, an optimum that moves with the token count (a decode step of 8 tokens
// splits each token's heads over more threads than a prefill of 4096, which computes its angles
// fewer times), the flag kept in the problem, and the op's own refusals.
TEST(Sim, RopeHasTheOpsSpaceAndAnOptimumThatMovesWithTheTokens) {
  SimBackend sim;
  auto p = sim.resolve("rope:qk_norm=1");
  ASSERT_TRUE(p.ok()) << p.error().message();
  EXPECT_EQ(p->text(),
            "rope:batch=8,head=128,kv=512,kv_heads=8,landscape=6,q_heads=16,qk_norm=1,seq=512,"
            "theta=1000000");
  Space s = *sim.space(*p);
  EXPECT_EQ(s.count(), find_op("rope")->space(*p)->count());
  EXPECT_EQ(s.config(s.baseline()).text(), find_op("rope")->baseline_config);
  auto prefill = sim.optimum(*p);
  ASSERT_TRUE(prefill.ok());
  EXPECT_EQ(prefill->first.get("kernel")->as_word(), "fused");
  EXPECT_GT(*sim.true_time_us(*p, s.config(s.baseline()), Regime::kRank) / prefill->second, 2.0);
  auto decode = sim.optimum(*sim.resolve("rope:seq=1,kv=2048,q_heads=32,qk_norm=1"));
  ASSERT_TRUE(decode.ok());
  EXPECT_NE(decode->first.text(), prefill->first.text());
  auto split = [](const Config& c) {
    return c.get("head_groups")->as_int() * c.get("head_blocks")->as_int();
  };
  EXPECT_GT(split(decode->first), split(prefill->first));
  auto bad = sim.resolve("rope:seq=600");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("seq=600 is more than kv=512"), std::string::npos);
  Outcome o = sim.execute(*p, prefill->first, Regime::kDeploy);
  EXPECT_EQ(o.verdict, Verdict::kOk) << o.message;
}

// silu_mul's landscape: the naive baseline one config, the vector kernel well ahead of it at 4096
// rows, and an optimum that moves with the rows (a single row is launch-bound).
TEST(Sim, SiluMulHasTheOpsSpaceAndAnOptimumThatMovesWithTheRows) {
  SimBackend sim;
  auto p = sim.resolve("silu_mul");
  ASSERT_TRUE(p.ok()) << p.error().message();
  EXPECT_EQ(p->text(), "silu_mul:inter=3072,landscape=7,rows=4096");
  Space s = *sim.space(*p);
  EXPECT_EQ(s.count(), find_op("silu_mul")->space(*p)->count());
  EXPECT_EQ(s.config(s.baseline()).text(), find_op("silu_mul")->baseline_config);
  auto many = sim.optimum(*p);
  ASSERT_TRUE(many.ok());
  EXPECT_EQ(many->first.get("kernel")->as_word(), "vector");
  EXPECT_GT(*sim.true_time_us(*p, s.config(s.baseline()), Regime::kRank) / many->second, 1.5);
  auto one = sim.optimum(*sim.resolve("silu_mul:rows=1"));
  ASSERT_TRUE(one.ok());
  EXPECT_NE(one->first.text(), many->first.text());
  Outcome o = sim.execute(*p, many->first, Regime::kDeploy);
  EXPECT_EQ(o.verdict, Verdict::kOk) << o.message;
}

// attention_prefill's landscape: the op's one space (the signature's, which the CUDA family serves
// too: the split baseline one config), the baseline far off the optimum, and an optimum that moves
// with the prompt (two consumer warpgroups for long prompts, one for a short prompt of few heads,
// where more, smaller row blocks fill the SMs).
TEST(Sim, AttentionPrefillHasTheOpsSpaceAndAnOptimumThatMovesWithSeq) {
  SimBackend sim;
  auto at = [&](int seq, int q_heads) {
    auto p = sim.resolve("attention_prefill:seq=" + std::to_string(seq) +
                         ",q_heads=" + std::to_string(q_heads) + ",kv_heads=8");
    EXPECT_TRUE(p.ok()) << p.error().message();
    return *p;
  };
  const Problem p = at(4096, 32);
  EXPECT_EQ(p.text(),
            "attention_prefill:batch=1,head=128,kv_heads=8,landscape=5,q_heads=32,seq=4096");
  Space s = *sim.space(p);
  EXPECT_EQ(s.count(), find_op("attention_prefill")->space(p)->count());
  EXPECT_EQ(s.config(s.baseline()).text(), find_op("attention_prefill")->baseline_config);
  auto opt = sim.optimum(p);
  ASSERT_TRUE(opt.ok());
  EXPECT_EQ(opt->first.get("kernel")->as_word(), "wgmma");
  EXPECT_EQ(opt->first.get("consumers")->as_int(), 2);
  EXPECT_GT(*sim.true_time_us(p, s.config(s.baseline()), Regime::kRank) / opt->second, 3.0);
  EXPECT_EQ(sim.optimum(at(256, 8))->first.get("consumers")->as_int(), 1);
  auto bad = sim.resolve("attention_prefill:head=256");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("head=256 is not supported"), std::string::npos);
  Outcome o = sim.execute(p, opt->first, Regime::kDeploy);
  EXPECT_EQ(o.verdict, Verdict::kOk) << o.message;
}

// attention_decode's landscape: the family's space (baseline first: the split baseline, one
// config), every config timed, the baseline well off the optimum, and an optimum that moves with
// batch and cache depth (many splits for one sequence, few for many), so a sweep has buckets.
TEST(Sim, AttentionDecodeHasTheFamilysSpaceAndAnOptimumThatMovesWithBatchAndKv) {
  SimBackend sim;
  auto at = [&](int batch, int kv) {
    auto p = sim.resolve("attention_decode:batch=" + std::to_string(batch) +
                         ",kv=" + std::to_string(kv));
    EXPECT_TRUE(p.ok()) << p.error().message();
    return *p;
  };
  const Problem p = at(8, 4096);
  EXPECT_EQ(p.text(),
            "attention_decode:batch=8,head=128,kv=4096,kv_heads=8,landscape=4,q_heads=32,q_len=1");
  Space s = *sim.space(p);
  const Config baseline = s.config(s.baseline());
  EXPECT_EQ(baseline.text(), find_op("attention_decode")->baseline_config);
  std::size_t splits_configs = 0;
  for (auto e = s.enumerate(); auto pt = e.next();)
    if (s.config(*pt).get("kernel")->as_word() == "split") ++splits_configs;
  EXPECT_EQ(splits_configs, 1u);  // knobs of the flash kernel do not multiply the baseline
  EXPECT_GT(s.count(), 100u);
  auto opt = sim.optimum(p);
  ASSERT_TRUE(opt.ok());
  EXPECT_NE(opt->first.get("kernel")->as_word(), "split");
  EXPECT_GT(*sim.true_time_us(p, baseline, Regime::kRank) / opt->second, 1.5);
  for (auto e = s.enumerate(); auto pt = e.next();) {
    const double t = *sim.true_time_us(p, s.config(*pt), Regime::kRank);
    EXPECT_GE(t, opt->second);
    EXPECT_GT(*sim.true_time_us(p, s.config(*pt), Regime::kDeploy), t);
  }
  auto splits_at = [&](int batch, int kv) {
    return sim.optimum(at(batch, kv))->first.get("splits")->as_int();
  };
  EXPECT_GT(splits_at(1, 16384), splits_at(64, 16384));
  EXPECT_GE(splits_at(1, 32768), splits_at(1, 1024));
  EXPECT_NE(sim.optimum(at(1, 4096))->first.text(), sim.optimum(at(32, 4096))->first.text());
  EXPECT_NE(sim.optimum(at(1, 1024))->first.text(), sim.optimum(at(1, 32768))->first.text());

  // The op's own rules hold in the sim as on the GPU.
  auto bad = sim.resolve("attention_decode:q_heads=12");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("not a multiple of kv_heads=8"), std::string::npos);
  // A candidate computes its small real result through the gate.
  Outcome o = sim.execute(p, opt->first, Regime::kDeploy);
  EXPECT_EQ(o.verdict, Verdict::kOk) << o.message;
  EXPECT_TRUE(o.measurement.has_value());
}

TEST(Sim, FaultsPlantsEveryFailureClass) {
  SimBackend sim;
  Problem p = *sim.resolve("faults");
  Space s = *sim.space(p);
  int refused = 0;
  for (auto e = s.enumerate(); auto pt = e.next();)
    if (sim.can_implement(p, s.config(*pt))) ++refused;
  EXPECT_EQ(refused, 6);
  EXPECT_TRUE(sim.can_implement(p, *s.parse("block=256,vec=4,unroll=1,stages=1")));
}

}  // namespace
}  // namespace attune
