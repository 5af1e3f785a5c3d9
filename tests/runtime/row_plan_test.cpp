// The check libattune-rt runs on every row at open, with the real kernel plans: a table whose
// config names a kernel or lacks a knob this build has is refused whole, naming the row.
#include "runtime/row_plan.h"

#include <gtest/gtest.h>

#include "core/op.h"
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
  // attention_decode's flash row as the GPU test writes it, from before `combine` existed.
  table::OpTable ad{"attention_decode",
                    "bf16",
                    {table::MatchPolicy::Kind::kBucketed, "batch", "no-harm, least max regret"},
                    {}};
  ad.rows.push_back(row("attention_decode:dtype=bf16,head=64,kv=1000,kv_heads=2,q_heads=16,q_len=3",
                        "kernel=flash,splits=4,kv_tile=32,warps=2,vec=8,q_rows=4"));
  ad.rows.back().bucket = table::Bucket{"batch", 1, 4, {1, 2, 4}};
  t.ops.push_back(ad);
  EXPECT_EQ(refusal(t), "");
  t.ops.pop_back();

  // What the row does say is still held to the space: the wgmma kernel's tile under kernel=tiled.
  t.ops[3].rows[0].config =
      "kernel=tiled,tl_bm=64,tl_bn=128,tl_bk=32,tl_wm=2,tl_wn=2,tl_stages=3,tl_group=8,wg_bm=64";
  const std::string why = refusal(t);
  EXPECT_NE(why.find("gemm_rope bf16 row 1"), std::string::npos) << why;
  EXPECT_NE(why.find("breaks 'wg_bm is fixed unless kernel=wgmma'"), std::string::npos) << why;
}

// gemm's and rmsnorm's spaces are their signatures' too, so their rows are held to them at open:
// a knob value the family never tunes, or a config its space rules out at the row's shape, is
// refused in one line naming the row and what is wrong, instead of failing at its first call.
TEST(RuntimeRowPlan, AGemmOrRmsnormConfigOutsideTheOpsSpaceRefusesTheTable) {
  auto with = [](std::string config, const std::string& knob, const std::string& value) {
    const std::size_t at = config.find(knob + "=") + knob.size() + 1;
    return config.replace(at, config.find(',', at) - at, value);
  };
  // Rows of gemm bf16 (n = k = 4096): 1 is m=1, 3 is m=64.
  struct Case {
    std::size_t row;
    std::string config, says;
  };
  for (const Case& c : {
           Case{0, with(kSkinnyTc, "tc_warps", "-7"), "knob 'tc_warps' has no option '-7'"},
           Case{0, with(kSkinnyTc, "tc_nt", "3"), "knob 'tc_nt' has no option '3'"},
           Case{0, with(kSkinnyTc, "lt_algo", "12"), "knob 'lt_algo' has no option '12'"},
           Case{0, with(kSkinnyTc, "tl_bm", "64"), "breaks 'tl_bm is fixed unless kernel=tiled'"},
           Case{2, kSkinnyTc, "breaks 'the tensor-core skinny kernel is for M <= 16"},
           Case{2, with(kTiled, "tl_bm", "256"),
                "breaks 'kernel=tiled: a block tile under twice M"},
       }) {
    table::Table t = sample_table();
    t.ops[0].rows[c.row].config = c.config;
    const std::string why = refusal(t);
    const std::string row = "gemm bf16 row " + std::to_string(c.row + 1) + " (";
    EXPECT_NE(why.find(row), std::string::npos) << c.config << ": " << why;
    EXPECT_NE(why.find(c.says), std::string::npos) << c.config << ": " << why;
    EXPECT_EQ(why.find('\n'), std::string::npos) << why;
  }

  for (const auto& [config, says] :
       {std::pair<std::string, std::string>{"threads=100000,rows_per_block=1,vec=1,unroll=1",
                                            "knob 'threads' has no option '100000'"},
        {"threads=128,rows_per_block=1,vec=3,unroll=1", "knob 'vec' has no option '3'"},
        {"threads=1024,rows_per_block=2,vec=1,unroll=1",
         "breaks 'threads * rows_per_block <= 1024'"}}) {
    table::Table t = sample_table();
    t.ops[2].rows[1].config = config;  // rmsnorm bf16 rows=128 hidden=4096
    const std::string why = refusal(t);
    EXPECT_NE(why.find("rmsnorm bf16 row 2"), std::string::npos) << config << ": " << why;
    EXPECT_NE(why.find(says), std::string::npos) << config << ": " << why;
  }
}

// The legal rows still open: cuBLASLt's row as attune exports it (every knob, the other kernels'
// at their pins) and as the signature's baseline names it (cuBLASLt's knobs only), a ranked
// cuBLASLt algorithm, rmsnorm's baseline, and rows from before gemm's sk_split, tc_split and wg_*
// knobs existed (the sample table's) or naming only their kernel's knobs.
TEST(RuntimeRowPlan, LegalGemmAndRmsnormRowsOpen) {
  const OpSignature& gemm = *find_op("gemm");
  ASSERT_NE(gemm.space, nullptr) << "gemm's space is its signature's";
  ASSERT_NE(find_op("rmsnorm")->space, nullptr) << "rmsnorm's space is its signature's";
  auto space = gemm.space(*Problem::parse("gemm:bias=0,dtype=bf16,k=4096,m=16,n=4096"));
  ASSERT_TRUE(space.ok()) << space.error().message();
  const std::string exported = space->config(space->baseline()).text();
  EXPECT_NE(exported.find("kernel=cublaslt,lt_algo=0,lt_split=0,lt_tile=0,sk_warps=4"),
            std::string::npos)
      << exported;
  for (const std::string& config :
       {exported, gemm.baseline_config,
        std::string("kernel=cublaslt,lt_algo=3,lt_split=0,lt_tile=2"),
        std::string("kernel=wgmma,wg_bm=64,wg_bn=128,wg_stages=4,wg_split=1")}) {
    table::Table t = sample_table();
    t.ops[0].rows[1].config = config;  // gemm bf16 m=16
    t.ops[2].rows[0].config = find_op("rmsnorm")->baseline_config;
    EXPECT_EQ(refusal(t), "") << config;
  }
}

}  // namespace
}  // namespace attune::runtime
