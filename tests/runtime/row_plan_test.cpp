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

}  // namespace
}  // namespace attune::runtime
