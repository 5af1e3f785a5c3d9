#include "backends/sim/sim_backend.h"

#include <gtest/gtest.h>

namespace attune {
namespace {

TEST(Sim, OffersItsProblemsAndResolvesSpecs) {
  SimBackend sim;
  std::set<std::string> names;
  for (const auto& p : sim.problems()) names.insert(p.problem.name());
  EXPECT_EQ(names, (std::set<std::string>{"faults", "gemm", "rmsnorm"}));
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
