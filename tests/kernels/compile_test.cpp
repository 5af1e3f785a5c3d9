// Every kernel source attune ships compiles with NVRTC for sm_90a (Hopper) with the defines its
// family passes, on a machine without a GPU; the cache answers a second build without compiling.
#include <gtest/gtest.h>

#include "backends/cuda/nvrtc_build.h"
#include "support/temp_dir.h"

namespace attune::kernels {
extern const char* const kGateSource;
extern const char* const kRmsnormSource;
extern const char* const kRmsnormRefSource;
extern const char* const kGemmSkinnySource;
extern const char* const kGemmSkinnyTcSource;
extern const char* const kGemmRefSource;
}  // namespace attune::kernels

namespace attune {
namespace {

using cuda::BuildRequest;

void expect_builds(const cuda::Compiler& c, const char* source, std::vector<std::string> options, std::string name) {
  BuildRequest r{source, name + ".cu", options, {name}};
  auto b = c.build(r);
  ASSERT_TRUE(b.ok()) << b.error().message();
  EXPECT_TRUE(b->ok) << name << ": " << b->log;
  EXPECT_FALSE(b->cubin.empty());
  EXPECT_EQ(b->lowered_names.count(name), 1u);
}

TEST(KernelSources, CompileForHopper) {
  cuda::Compiler c("sm_90a", "");
  expect_builds(c, kernels::kGateSource, {}, "check_half");
  expect_builds(c, kernels::kRmsnormRefSource, {}, "rmsnorm_ref");
  expect_builds(c, kernels::kGemmRefSource, {}, "gemm_ref");
  expect_builds(c, kernels::kRmsnormSource,
                {"-DT=__nv_bfloat16", "-DHIDDEN=999", "-DTHREADS=32", "-DROWS_PER_BLOCK=2", "-DVEC=1", "-DUNROLL=4", "-DRESIDUAL=1"},
                "rmsnorm");
  expect_builds(c, kernels::kGemmSkinnySource,
                {"-DT=__half", "-DM=7", "-DN=517", "-DK=999", "-DWARPS=2", "-DNB=4", "-DVEC=1", "-DUNROLL=2", "-DBIAS=1"},
                "gemm_skinny");
  for (const char* m : {"-DM=1", "-DM=16"})
    expect_builds(c, kernels::kGemmSkinnyTcSource,
                  {"-DT=__nv_bfloat16", "-DTNAME=\"bf16\"", m, "-DN=1001", "-DK=1000", "-DWARPS=4", "-DNT=2", "-DUNROLL=2", "-DBIAS=1"},
                  "gemm_skinny_tc");
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
}

}  // namespace
}  // namespace attune
