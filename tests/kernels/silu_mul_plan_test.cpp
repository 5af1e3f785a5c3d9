// silu_mul's op and plans without a GPU: its one space (the naive baseline one config; the vector
// kernel's width dividing the row, no block wider than a row), the naive kernel's one thread per
// element, the vector kernel's grid of row blocks by column blocks, and NVRTC builds of both.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/config.h"
#include "core/problem.h"
#include "cuda/nvrtc_build.h"
#include "kernels/plan.h"
#include "kernels/plan_launch.h"

namespace attune::kernels {
extern const char* const kSiluMulRefSource;
namespace {

Problem problem(const std::string& spec) {
  auto p = silu_mul_op().resolve(*Problem::parse(spec));
  EXPECT_TRUE(p.ok()) << p.error().message();
  return *p;
}

Plan planned(const std::string& spec, const std::string& config) {
  auto plan = plan_silu_mul(problem(spec), *Config::parse(config));
  EXPECT_TRUE(plan.ok()) << plan.error().message();
  return plan ? *plan : Plan{};
}

TEST(SiluMulPlan, TheSpaceHasTheNaiveKernelAsItsOneBaseline) {
  const Problem p = problem("silu_mul:rows=4096,inter=3072");
  EXPECT_EQ(silu_mul_op().shape_syntax(), "ROWSxINTER");
  auto space = silu_mul_op().space(p);
  ASSERT_TRUE(space.ok()) << space.error().message();
  EXPECT_EQ(space->config(space->baseline()).text(), silu_mul_op().baseline_config);
  std::size_t naive = 0, vector = 0;
  for (auto e = space->enumerate(); auto pt = e.next();) {
    const Config c = space->config(*pt);
    (c.get("kernel")->as_word() == "naive" ? naive : vector)++;
    EXPECT_TRUE(plan_silu_mul(p, c).ok()) << c.text();
  }
  EXPECT_EQ(naive, 1u);
  EXPECT_GT(vector, 100u);
  // An odd row: only scalar accesses; a short one: no 1024-thread block.
  const Problem odd = problem("silu_mul:rows=3,inter=999,dtype=fp16");
  auto s = silu_mul_op().space(odd);
  ASSERT_TRUE(s.ok());
  for (auto e = s->enumerate(); auto pt = e.next();) {
    const Config c = s->config(*pt);
    EXPECT_EQ(c.get("vec")->as_int(), 1) << c.text();
    EXPECT_LE(c.get("rows_per_block")->as_int(), 3) << c.text();
    EXPECT_LE(c.get("threads")->as_int() * c.get("unroll")->as_int(), 999) << c.text();
  }
}

TEST(SiluMulPlan, NaiveIsOneThreadPerElementVectorIsRowBlocksByColumnBlocks) {
  const Plan naive = planned("silu_mul:rows=5,inter=1000", silu_mul_op().baseline_config);
  const auto& np = std::get<KernelPlan>(naive);
  ASSERT_EQ(np.steps.size(), 1u);
  EXPECT_EQ(np.steps[0].kernel, "silu_mul_naive");
  EXPECT_EQ(np.steps[0].grid.x, (5u * 1000 + 255) / 256);
  EXPECT_EQ(np.steps[0].block.x, 256u);
  EXPECT_EQ(np.steps[0].args, (std::vector<std::string>{"y", "x", "rows"}));
  EXPECT_TRUE(check_args(np).ok());

  const Plan vec = planned("silu_mul:rows=5,inter=1000",
                           "kernel=vector,vec=4,threads=64,unroll=2,rows_per_block=2");
  const auto& vp = std::get<KernelPlan>(vec);
  ASSERT_EQ(vp.steps.size(), 1u);
  EXPECT_EQ(vp.steps[0].kernel, "silu_mul_vector");
  EXPECT_EQ(vp.steps[0].grid.x, 3u);  // 5 rows, 2 a block
  EXPECT_EQ(vp.steps[0].grid.y, 2u);  // 1000 columns, 512 a block
  EXPECT_EQ(vp.steps[0].block.x, 64u);
  EXPECT_EQ(vp.workspace_bytes, 0u);
  EXPECT_FALSE(
      plan_silu_mul(problem("silu_mul:rows=5,inter=999"),
                    *Config::parse("kernel=vector,vec=4,threads=64,unroll=1,rows_per_block=1"))
          .ok())
      << "vec 4 does not divide 999";
  EXPECT_FALSE(
      plan_silu_mul(problem("silu_mul:rows=5,inter=1000"), *Config::parse("kernel=relu")).ok());
}

TEST(SiluMulPlan, BothKernelsCompileInBothDtypes) {
  cuda::Compiler c("sm_90a", "");
  for (const char* dtype : {"bf16", "fp16"}) {
    for (const char* config : {"kernel=naive,vec=1,threads=256,unroll=1,rows_per_block=1",
                               "kernel=vector,vec=8,threads=128,unroll=4,rows_per_block=2"}) {
      SCOPED_TRACE(std::string(dtype) + " " + config);
      const Plan p = planned(std::string("silu_mul:rows=7,inter=3072,dtype=") + dtype, config);
      const auto& kp = std::get<KernelPlan>(p);
      auto b = c.build(kp.build);
      ASSERT_TRUE(b.ok()) << b.error().message();
      EXPECT_TRUE(b->ok) << b->log;
      EXPECT_EQ(b->lowered_names.count(kp.steps[0].kernel), 1u);
    }
  }
  auto ref =
      c.build(cuda::BuildRequest{kSiluMulRefSource, "silu_mul_ref.cu", {}, {"silu_mul_ref"}});
  ASSERT_TRUE(ref.ok()) << ref.error().message();
  EXPECT_TRUE(ref->ok) << ref->log;
}

}  // namespace
}  // namespace attune::kernels
