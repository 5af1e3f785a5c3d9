#include "core/expr.h"

#include <gtest/gtest.h>

namespace attune {
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
  // 3 * 2 * 2 * 3 = 36 configs; batch * threads <= 16 keeps (1,1)(1,2)(1,8)(4,1)(4,2)(16,1) = 6
  // of 9.
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

TEST(Constraint, TheMergedLanguageWorksInStackConstraints) {
  EXPECT_EQ(kept("dtype in ['fp32'] && batch in [1, 4, 16]"),
            kept("dtype == 'fp32' and batch <= 16"));
  EXPECT_EQ(kept("dtype in ['fp32'] || batch in [1, 4]").size(), 18u + 12u);
  EXPECT_EQ(kept("dtype not in ['bf16']").size(), 18u);
  EXPECT_EQ(kept("not batch == 16").size(), 24u);  // not is looser than ==
  EXPECT_EQ(kept("batch / 16 == 0").size(), 24u);  // integers divide as in C: 4 / 16 == 0
}

TEST(Constraint, ErrorsSayWhichConstraint) {
  auto bad = parse_constraint("dtype < 3", knobs());
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message(),
            "constraint 'dtype < 3': '<' needs numbers on both sides at column 7 in 'dtype < 3'");
  auto syntax = parse_constraint("batch ==", knobs());
  ASSERT_FALSE(syntax.ok());
  EXPECT_EQ(syntax.error().message().rfind("constraint 'batch ==': expected a number", 0), 0u);
  auto unknown = parse_constraint("batchsize <= 4", knobs());
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().message(),
            "constraint 'batchsize <= 4': 'batchsize' is not a knob (quote a word: 'batchsize')");
}

TEST(Constraint, KnobNamesWithDotsAndDashesReadWhole) {
  std::vector<Knob> ks = {Knob{"torch.compile", {0, 1}, 0}, Knob{"num-threads", {1, 2, 4}, 0}};
  auto c = parse_constraint("torch.compile == 0 or num-threads-1 >= 1", ks);
  ASSERT_TRUE(c.ok()) << c.error().message();
  EXPECT_EQ(c->knobs, (std::vector<std::string>{"torch.compile", "num-threads"}));
  auto space = Space::make(ks, {*c});
  ASSERT_TRUE(space.ok());
  EXPECT_EQ(space->count(), 3u + 2u);
}

TEST(Constraint, WordKnobsReadAsTextEvenWhenAnOptionLooksLikeANumber) {
  // A knob of options 1 and auto is a word knob: its 1 is the text '1', and ordering refuses it.
  std::vector<Knob> ks = {Knob{"unroll", {1, "auto"}, 0}, Knob{"bs", {32, 64}, 0}};
  EXPECT_EQ(knob_type(ks[0]), Expr::Type::kString);
  EXPECT_EQ(knob_type(ks[1]), Expr::Type::kInt);
  EXPECT_EQ(knob_type(Knob{"lr", {1, 0.5}, 0}), Expr::Type::kReal);
  EXPECT_EQ(knob_value(ks[0], Value(1)), Value("1"));
  auto c = parse_constraint("unroll == 1 or bs == 64", ks);
  ASSERT_TRUE(c.ok()) << c.error().message();
  EXPECT_EQ(Space::make(ks, {*c})->count(), 3u);
  EXPECT_FALSE(parse_constraint("unroll < 2", ks).ok());
}

TEST(MakeConstraint, ConstantsAreFixedAndAConfigThatCannotBeEvaluatedIsExcluded) {
  std::vector<Knob> ks = {Knob{"block", {0, 64, 128, 256}, 1}};
  auto e = Expr::parse("n % block == 0");
  ASSERT_TRUE(e.ok());
  auto c = make_constraint(*e, ks, {{"n", 384}});
  ASSERT_TRUE(c.ok()) << c.error().message();
  EXPECT_EQ(c->knobs, std::vector<std::string>{"block"});  // n is a constant, not a knob
  auto space = Space::make(ks, {*c});
  ASSERT_TRUE(space.ok());
  std::vector<std::string> kept_configs;
  for (auto en = space->enumerate(); auto p = en.next();)
    kept_configs.push_back(space->config(*p).text());
  // block 0 divides by zero: excluded, not a crash; 256 does not divide 384.
  EXPECT_EQ(kept_configs, (std::vector<std::string>{"block=64", "block=128"}));

  // A C-like condition (nonzero) is enough here; the stack's parse_constraint asks for more.
  auto truthy = make_constraint(*Expr::parse("block % 128"), ks);
  ASSERT_TRUE(truthy.ok());
  EXPECT_EQ(Space::make(ks, {*truthy}).ok(), true);
  EXPECT_FALSE(make_constraint(*Expr::parse("n > 1"), ks, {{"n", 2}}).ok());  // reads no knob
  EXPECT_FALSE(make_constraint(*Expr::parse("block < 'x'"), ks).ok());        // types checked
}

}  // namespace
}  // namespace attune
