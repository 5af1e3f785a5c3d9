#include "backends/command/constraint.h"

#include <gtest/gtest.h>

namespace attune::command {
namespace {

std::vector<Knob> knobs() {
  return {Knob{"batch", {1, 4, 16}, 0}, Knob{"dtype", {"fp32", "bf16"}, 0},
          Knob{"compile", {0, 1}, 0}, Knob{"threads", {1, 2, 8}, 0}};
}

// The configs a constraint keeps, as canonical texts.
std::vector<std::string> kept(const std::string& text) {
  auto c = parse_constraint(text, knobs());
  EXPECT_TRUE(c.ok()) << (c ? "" : c.error().message());
  auto space = Space::make(knobs(), {*c});
  EXPECT_TRUE(space.ok()) << (space ? "" : space.error().message());
  std::vector<std::string> out;
  for (auto e = space->enumerate(); auto p = e.next();) out.push_back(space->config(*p).text());
  return out;
}

TEST(Constraint, PrunesTheGridByArithmeticAndComparisons) {
  // 3 * 2 * 2 * 3 = 36 configs; batch * threads <= 16 keeps (1,1)(1,2)(1,8)(4,1)(4,2)(16,1) = 6 of 9.
  EXPECT_EQ(kept("batch * threads <= 16").size(), 24u);
  EXPECT_EQ(kept("batch * threads <= 16").front(), "batch=1,dtype=fp32,compile=0,threads=1");
}

TEST(Constraint, WordsAndNumbersCompareByTextOrValue) {
  // compile is numeric; '1' and 1 name the same value.
  auto a = kept("compile == 0 or dtype == 'bf16'");
  auto b = kept("compile == '0' || dtype == \"bf16\"");
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.size(), 27u);  // 36 minus the 9 with compile=1 and dtype=fp32
  for (const auto& s : a) EXPECT_EQ(s.find("dtype=fp32,compile=1"), std::string::npos) << s;
}

TEST(Constraint, NotAndParenthesesAndPrecedence) {
  EXPECT_EQ(kept("not (batch == 16 and threads == 8)").size(), 32u);
  EXPECT_EQ(kept("!(batch > 1) || threads - 1 >= 1").size(), 4u * 3u + 2u * 4u * 2u);
  EXPECT_EQ(kept("batch % 4 == 1 or threads % 2 == 0").size(), 28u);
}

TEST(Constraint, ErrorsNameWhatIsWrong) {
  auto unknown = parse_constraint("batchsize <= 4", knobs());
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message().find("'batchsize' is not a knob"), std::string::npos);

  auto order_on_word = parse_constraint("dtype < 3", knobs());
  ASSERT_FALSE(order_on_word.ok());
  EXPECT_NE(order_on_word.error().message().find("needs numbers"), std::string::npos);

  auto not_condition = parse_constraint("batch * 2", knobs());
  ASSERT_FALSE(not_condition.ok());
  EXPECT_NE(not_condition.error().message().find("not a condition"), std::string::npos);

  EXPECT_FALSE(parse_constraint("(batch == 1", knobs()).ok());
  EXPECT_FALSE(parse_constraint("batch == 'x", knobs()).ok());
  EXPECT_FALSE(parse_constraint("1 == 1", knobs()).ok());  // reads no knob
  EXPECT_FALSE(parse_constraint("batch == 1 extra", knobs()).ok());
}

}  // namespace
}  // namespace attune::command
