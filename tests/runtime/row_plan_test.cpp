// The check libattune-rt runs on every row at open, with the real kernel plans: a table whose
// config names a kernel or lacks a knob this build has is refused whole, naming the row.
#include "runtime/row_plan.h"

#include <gtest/gtest.h>

#include "runtime/fixtures.h"
#include "runtime/selector.h"

namespace attune::runtime {
namespace {

using namespace attune::runtime::testing;

std::string refusal(const table::Table& t) {
  TempDir dir;
  auto s = Selector::open(dir.write("t.json", table::to_json_text(t)), h200(), {}, check_row_plan);
  return s ? "" : s.error().message();
}

TEST(RuntimeRowPlan, EveryRowOfTheSampleTablePlans) {
  EXPECT_EQ(refusal(sample_table()), "");
}

TEST(RuntimeRowPlan, AConfigThatDoesNotPlanRefusesTheTable) {
  table::Table t = sample_table();
  t.ops[0].rows[2].config = "kernel=wmma,tl_bm=64";
  std::string why = refusal(t);
  EXPECT_NE(why.find("gemm bf16 row 3"), std::string::npos) << why;
  EXPECT_NE(why.find("unknown kernel 'wmma'"), std::string::npos) << why;

  t = sample_table();
  t.ops[1].rows[1].config = "kernel=tiled,tl_bm=64";  // a bucket row missing knobs
  why = refusal(t);
  EXPECT_NE(why.find("gemm fp16 row 2"), std::string::npos) << why;
  EXPECT_NE(why.find("has no knob 'tl_bn'"), std::string::npos) << why;

  t = sample_table();
  t.ops[2].rows[0].config = "threads=128,vec=8";
  why = refusal(t);
  EXPECT_NE(why.find("rmsnorm bf16 row 1"), std::string::npos) << why;
  EXPECT_NE(why.find("rows_per_block"), std::string::npos) << why;
}

TEST(RuntimeRowPlan, AConfigOutsideTheOpsSpaceRefusesTheTable) {
  table::Table t = sample_table();
  table::OpTable silu{"silu_mul", "bf16", {}, {}};
  silu.rows.push_back(row("silu_mul:dtype=bf16,inter=14336,rows=8",
                          "kernel=vector,vec=8,threads=128,unroll=1,rows_per_block=1"));
  t.ops.push_back(silu);
  EXPECT_EQ(refusal(t), "");
  for (const auto& [config, says] :
       {std::pair<std::string, std::string>{
            "kernel=vector,vec=3,threads=128,unroll=1,rows_per_block=1", "vec"},
        {"kernel=vector,vec=8,threads=100000,unroll=1,rows_per_block=1", "threads"},
        {"kernel=vector,vec=8,threads=1024,unroll=4,rows_per_block=1", "legal config"},
        {"kernel=naive,vec=8,threads=128,unroll=1,rows_per_block=1", "legal config"}}) {
    t.ops.back().rows[0].config = config;
    const std::string why = refusal(t);
    EXPECT_NE(why.find("silu_mul bf16 row 1"), std::string::npos) << config << ": " << why;
    EXPECT_NE(why.find(says), std::string::npos) << config << ": " << why;
  }
}

// A row written before some of its op's knobs existed, or naming only its kernel's knobs, plans
// (kernels/plan_knobs.h knob_or): the knobs it leaves out count at the space's baseline values,
// which are their pins: gemm_rope's tiled and wgmma rows as libattune-rt's GPU test writes them.
TEST(RuntimeRowPlan, ARowLeavingOutKnobsItsKernelDoesNotReadOpens) {
  table::Table t = sample_table();
  table::OpTable gr{"gemm_rope", "bf16", {}, {}};
  gr.rows.push_back(
      row("gemm_rope:batch=3,dtype=bf16,head=128,hidden=1032,kv=100,kv_heads=2,q_heads=8,"
          "qk_norm=1,seq=77,theta=1000000",
          "kernel=tiled,tl_bm=64,tl_bn=128,tl_bk=32,tl_wm=2,tl_wn=2,tl_stages=3,tl_group=8"));
  gr.rows.push_back(
      row("gemm_rope:batch=1,dtype=bf16,head=128,hidden=1032,kv=130,kv_heads=2,q_heads=8,"
          "qk_norm=0,seq=130,theta=500000",
          "kernel=wgmma,wg_bm=128,wg_bn=128,wg_stages=4"));
  t.ops.push_back(gr);
  EXPECT_EQ(refusal(t), "");

  // What the row does say is still held to the space: the wgmma kernel's tile under kernel=tiled.
  t.ops[3].rows[0].config =
      "kernel=tiled,tl_bm=64,tl_bn=128,tl_bk=32,tl_wm=2,tl_wn=2,tl_stages=3,tl_group=8,wg_bm=64";
  const std::string why = refusal(t);
  EXPECT_NE(why.find("gemm_rope bf16 row 1"), std::string::npos) << why;
  EXPECT_NE(why.find("breaks 'wg_bm is fixed unless kernel=wgmma'"), std::string::npos) << why;
}

}  // namespace
}  // namespace attune::runtime
