#include "verify/compare.h"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

namespace attune {
namespace {

TEST(Compare, ExactOutputPasses) {
  std::vector<double> ref = {1.0, -2.0, 3.5, 0.0};
  std::vector<float> out = {1.0f, -2.0f, 3.5f, 0.0f};
  auto c = compare(out, ref, tolerance_for("fp32"));
  EXPECT_EQ(c.verdict, Verdict::kOk);
  EXPECT_EQ(c.check.metric, "max_rel_err");
  EXPECT_LE(c.check.value, c.check.tolerance);
}

TEST(Compare, PoisonedElementsAreCaughtAsUnwritten) {
  std::vector<double> ref(16, 1.0);
  std::vector<float> out(16);
  poison(out);
  for (int i = 0; i < 13; ++i) out[i] = 1.0f;  // the tail was never written
  auto c = compare(out, ref, tolerance_for("fp32"));
  EXPECT_EQ(c.verdict, Verdict::kWrongOutput);
  EXPECT_EQ(c.unwritten, 3u);
  EXPECT_NE(c.message.find("never written"), std::string::npos);
}

TEST(Compare, NaNNeverPasses) {
  std::vector<double> ref(8, 1.0);
  std::vector<float> out(8, 1.0f);
  out[5] = std::nanf("");
  auto c = compare(out, ref, tolerance_for("bf16"));  // even at the loosest tolerance
  EXPECT_EQ(c.verdict, Verdict::kNonFinite);
  EXPECT_TRUE(std::isnan(c.check.value));
  out[5] = INFINITY;
  EXPECT_EQ(compare(out, ref, tolerance_for("bf16")).verdict, Verdict::kNonFinite);
}

TEST(Compare, OutOfToleranceIsWrongOutputWithTheWorstElement) {
  std::vector<double> ref = {1.0, 2.0, 3.0, 4.0};
  std::vector<float> out = {1.0f, 2.0f, 3.3f, 4.0f};
  auto c = compare(out, ref, tolerance_for("fp16"));
  EXPECT_EQ(c.verdict, Verdict::kWrongOutput);
  EXPECT_EQ(c.worst_index, 2u);
  EXPECT_EQ(c.mismatched, 1u);
  // The same error passes at bf16's tolerance? 0.3/3 = 10% does not.
  EXPECT_EQ(compare(out, ref, tolerance_for("bf16")).verdict, Verdict::kWrongOutput);
}

TEST(Compare, CancellationToNearZeroIsJudgedAgainstTheReferenceScale) {
  // ref[1] cancels to ~0; an absolute error of 1e-6 there is rounding, not a bug.
  std::vector<double> ref = {10.0, 1e-9, -10.0};
  std::vector<float> out = {10.0f, 1e-6f, -10.0f};
  EXPECT_EQ(compare(out, ref, tolerance_for("fp32", 256)).verdict, Verdict::kOk);
}

TEST(Compare, SizeMismatchIsWrongOutput) {
  std::vector<double> ref(4, 1.0);
  std::vector<float> out(3, 1.0f);
  EXPECT_EQ(compare(out, ref, tolerance_for("fp32")).verdict, Verdict::kWrongOutput);
}

}  // namespace
}  // namespace attune
