// gemm's wgmma plan without a GPU: its step takes the TMA descriptors of A and B as arguments
// "tensor_map0" and "tensor_map1", which bind to PlanArgs' encoded maps (libattune-rt's bound
// launches and the tuner's named ones alike), and a map of a pointer no plan argument names is
// refused as the plan's bug it is.
#include <gtest/gtest.h>

#include <cstddef>

#include "core/config.h"
#include "core/problem.h"
#include "kernels/plan.h"
#include "kernels/plan_launch.h"

namespace attune::kernels {
namespace {

KernelPlan wgmma_plan() {
  auto plan = plan_gemm(*Problem::parse("gemm:bias=1,dtype=bf16,k=1024,m=128,n=4096"),
                        *Config::parse("kernel=wgmma,wg_bm=128,wg_bn=128,wg_stages=4,wg_split=2"));
  EXPECT_TRUE(plan.ok()) << plan.error().message();
  return plan ? std::get<KernelPlan>(*plan) : KernelPlan{};
}

TEST(GemmPlan, WgmmaTensorMapsBindToThePlanArgs) {
  const KernelPlan p = wgmma_plan();
  ASSERT_EQ(p.steps.size(), 1u);
  ASSERT_TRUE(check_args(p).ok());
  auto binding = bind_args(p);
  ASSERT_TRUE(binding.ok()) << binding.error().message();
  const auto& offsets = binding->offsets.at(0);
  ASSERT_EQ(offsets.size(), 6u);  // c, tensor_map0, tensor_map1, bias, r (residual), eps
  EXPECT_EQ(offsets[0], offsetof(PlanArgs, c));
  EXPECT_EQ(offsets[1], offsetof(PlanArgs, tensor_maps));
  EXPECT_EQ(offsets[2], offsetof(PlanArgs, tensor_maps) + sizeof(CUtensorMap));
  EXPECT_EQ(offsets[3], offsetof(PlanArgs, bias));
  EXPECT_EQ(offsets[4], offsetof(PlanArgs, r));
  EXPECT_EQ(offsets[5], offsetof(PlanArgs, eps));
  // The maps are the kernel's by-value parameters: 64-byte aligned, as CUtensorMap requires.
  EXPECT_EQ(offsetof(PlanArgs, tensor_maps) % 64, 0u);
}

// A chain step's workspace offset moves its "workspace" argument (gemm rms_norm=1's split form
// writes the scaled A behind the product); the bound launches of libattune-rt's kernel plans have
// no place for one and refuse it.
TEST(GemmPlan, AWorkspaceOffsetIsAChainsOnly) {
  auto chain =
      plan_gemm(*Problem::parse("gemm:bias=0,dtype=bf16,k=1024,m=8,n=6144,rms_norm=1,silu_mul=1"),
                *Config::parse("kernel=cublaslt,lt_algo=0,lt_split=0,lt_tile=0"));
  ASSERT_TRUE(chain.ok()) << chain.error().message();
  const auto& cp = std::get<ChainPlan>(*chain);
  ASSERT_TRUE(check_args(cp).ok());
  const auto& norm = std::get<LaunchStep>(cp.steps.front());
  EXPECT_EQ(norm.workspace_offset, 8u * 6144 * 2);  // behind the [m, n] product
  KernelPlan p = wgmma_plan();
  p.steps[0].workspace_offset = 256;
  EXPECT_FALSE(bind_args(p).ok());
}

TEST(GemmPlan, TensorMapOfAnUnknownPointerIsRefused) {
  KernelPlan p = wgmma_plan();
  ASSERT_EQ(p.steps.at(0).tensor_maps.size(), 2u);
  p.steps[0].tensor_maps[1].arg = "weights";
  EXPECT_FALSE(check_args(p).ok());
  p.steps[0].tensor_maps[1].arg = "b";
  while (p.steps[0].tensor_maps.size() <= kMaxTensorMaps)  // past kMaxTensorMaps
    p.steps[0].tensor_maps.push_back(p.steps[0].tensor_maps[0]);
  EXPECT_FALSE(check_args(p).ok());
}

}  // namespace
}  // namespace attune::kernels
