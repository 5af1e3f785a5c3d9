#include "core/expr.h"

#include <cstdint>
#include <limits>
#include <string>

#include <gtest/gtest.h>

namespace attune {
namespace {

using Vars = Expr::Vars;
using Lookup = Expr::Lookup;

std::int64_t eval(const std::string& text, const Vars& vars = {}) {
  auto e = Expr::parse(text);
  EXPECT_TRUE(e.ok()) << text << ": " << e.error().message();
  if (!e) return -999999;
  auto v = e->eval_int(vars);
  EXPECT_TRUE(v.ok()) << text << ": " << v.error().message();
  return v ? *v : -999999;
}

std::string parse_error(const std::string& text) {
  auto e = Expr::parse(text);
  EXPECT_FALSE(e.ok()) << text << " parsed";
  return e ? "" : e.error().message();
}

std::string eval_error(const std::string& text, const Vars& vars = {}) {
  auto e = Expr::parse(text);
  EXPECT_TRUE(e.ok()) << text << ": " << e.error().message();
  if (!e) return "";
  auto v = e->eval_int(vars);
  EXPECT_FALSE(v.ok()) << text << " evaluated to " << *v;
  return v ? "" : v.error().message();
}

TEST(Expr, Literals) {
  EXPECT_EQ(eval("42"), 42);
  EXPECT_EQ(eval("0x1F"), 31);
  EXPECT_EQ(eval("0"), 0);
  EXPECT_EQ(eval("  7  "), 7);
  EXPECT_EQ(eval("9223372036854775807"), std::numeric_limits<std::int64_t>::max());
}

TEST(Expr, PrecedenceFollowsC) {
  EXPECT_EQ(eval("2 + 3 * 4"), 14);
  EXPECT_EQ(eval("(2 + 3) * 4"), 20);
  EXPECT_EQ(eval("10 - 4 - 3"), 3);  // left associative
  EXPECT_EQ(eval("64 / 4 / 2"), 8);
  EXPECT_EQ(eval("-2 * 3"), -6);
  EXPECT_EQ(eval("- -5"), 5);
  EXPECT_EQ(eval("1 + 2 < 4"), 1);    // arithmetic binds tighter than comparison
  EXPECT_EQ(eval("1 < 2 == 1"), 1);   // relational tighter than equality
  EXPECT_EQ(eval("1 || 0 && 0"), 1);  // && tighter than ||
  EXPECT_EQ(eval("!0 + 1"), 2);       // unary tighter than binary
  EXPECT_EQ(eval("!(2 > 1)"), 0);
  EXPECT_EQ(eval("0 ? 1 : 2 ? 3 : 4"), 3);  // ?: is right associative
  EXPECT_EQ(eval("1 + 1 ? 10 : 20"), 10);   // ?: is the loosest
}

TEST(Expr, CIntegerDivisionAndModulo) {
  EXPECT_EQ(eval("7 / 2"), 3);
  EXPECT_EQ(eval("-7 / 2"), -3);  // truncates toward zero
  EXPECT_EQ(eval("7 % 3"), 1);
  EXPECT_EQ(eval("-7 % 3"), -1);  // sign of the dividend
  EXPECT_EQ(eval("7 % -3"), 1);
}

TEST(Expr, ComparisonsAndLogic) {
  Vars v{{"a", 4}, {"b", 8}};
  EXPECT_EQ(eval("a == 4", v), 1);
  EXPECT_EQ(eval("a != 4", v), 0);
  EXPECT_EQ(eval("a < b", v), 1);
  EXPECT_EQ(eval("a <= 4", v), 1);
  EXPECT_EQ(eval("a > b", v), 0);
  EXPECT_EQ(eval("b >= 9", v), 0);
  EXPECT_EQ(eval("a && b", v), 1);
  EXPECT_EQ(eval("a && 0", v), 0);
  EXPECT_EQ(eval("0 || b", v), 1);
  EXPECT_EQ(eval("a < b ? a : b", v), 4);
}

TEST(Expr, ShortCircuitAvoidsErrorsInUnneededOperands) {
  Vars v{{"b", 0}};
  EXPECT_EQ(eval("b != 0 && 10 / b > 2", v), 0);
  EXPECT_EQ(eval("b == 0 || 10 / b > 2", v), 1);
  EXPECT_EQ(eval("b ? 10 / b : -1", v), -1);
}

TEST(Expr, Functions) {
  Vars v{{"n", 1000}, {"bs", 256}};
  EXPECT_EQ(eval("ceil_div(n, bs)", v), 4);
  EXPECT_EQ(eval("ceil_div(1024, 256)"), 4);
  EXPECT_EQ(eval("ceil_div(0, 256)"), 0);
  EXPECT_EQ(eval("ceil_div(-5, 2)"), -2);
  EXPECT_EQ(eval("round_up(n, bs)", v), 1024);
  EXPECT_EQ(eval("min(n, bs)", v), 256);
  EXPECT_EQ(eval("max(n, bs)", v), 1000);
  EXPECT_EQ(eval("is_pow2(bs)", v), 1);
  EXPECT_EQ(eval("is_pow2(n)", v), 0);
  EXPECT_EQ(eval("is_pow2(0)"), 0);
  EXPECT_EQ(eval("abs(-3)"), 3);
  EXPECT_EQ(eval("max(min(n, 512), ceil_div(n, 2))", v), 512);
}

TEST(Expr, NamesAreListedOnceInOrder) {
  auto e = Expr::parse("ceil_div(n, block_size * items) + n * block_size");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->names(), (std::vector<std::string>{"n", "block_size", "items"}));
  EXPECT_TRUE(e->reads("items"));
  EXPECT_FALSE(e->reads("ceil_div"));
  EXPECT_FALSE(e->constant().has_value());
  EXPECT_EQ(Expr::parse("3 * 4")->constant(), 12);
  EXPECT_EQ(Expr::parse("3 * 4")->text(), "3 * 4");
}

TEST(Expr, ParseErrorsNameTheColumnAndQuoteTheText) {
  EXPECT_EQ(parse_error("ceil_div(n, block"),
            "expected ')', found end of expression at column 18 in 'ceil_div(n, block'");
  EXPECT_EQ(parse_error("2 +"),
            "expected a number, a name or '(', found end of expression at column 4 in '2 +'");
  EXPECT_EQ(parse_error("a b"), "unexpected 'b' at column 3 in 'a b'");
  EXPECT_EQ(parse_error("(a + 1"), "expected ')', found end of expression at column 7 in '(a + 1'");
  EXPECT_EQ(parse_error("a = 1"),
            "'=' is not an operator (compare with '==') at column 3 in 'a = 1'");
  EXPECT_EQ(parse_error(""), "empty expression");
  EXPECT_NE(parse_error("12abc").find("malformed number '12abc' at column 1"), std::string::npos);
  EXPECT_NE(parse_error("0x").find("malformed number"), std::string::npos);
  EXPECT_NE(parse_error("99999999999999999999").find("does not fit in 64 bits"), std::string::npos);
  EXPECT_NE(parse_error("a $ b").find("column 3"), std::string::npos);
  EXPECT_NE(parse_error("a & b").find("column 3"), std::string::npos);
  EXPECT_NE(parse_error("1 ? 2").find("expected ':'"), std::string::npos);
}

TEST(Expr, FunctionErrorsAtParseTime) {
  EXPECT_EQ(parse_error("floor(n, 2)"),
            "unknown function 'floor' (known: min, max, ceil_div, round_up, is_pow2, abs) at "
            "column 1 in 'floor(n, 2)'");
  EXPECT_NE(parse_error("min(n)").find("min() takes 2 arguments, given 1"), std::string::npos);
  EXPECT_NE(parse_error("is_pow2(a, b)").find("is_pow2() takes 1 argument, given 2"),
            std::string::npos);
}

TEST(Expr, DeepNestingIsRefusedNotAStackOverflow) {
  std::string deep(100000, '(');
  EXPECT_NE(parse_error(deep + "1").find("nested too deeply"), std::string::npos);
  std::string negs(100000, '-');
  EXPECT_NE(parse_error(negs + "1").find("nested too deeply"), std::string::npos);
}

TEST(Expr, EvaluationErrorsAreValuesNotCrashes) {
  EXPECT_EQ(eval_error("n / (b - 256)", {{"n", 10}, {"b", 256}}),
            "division by zero at column 3 in 'n / (b - 256)'");
  EXPECT_NE(eval_error("n % 0", {{"n", 1}}).find("modulo by zero"), std::string::npos);
  EXPECT_NE(eval_error("ceil_div(n, 0)", {{"n", 1}}).find("positive divisor"), std::string::npos);
  EXPECT_NE(eval_error("9223372036854775807 + 1").find("overflow"), std::string::npos);
  EXPECT_NE(eval_error("4611686018427387904 * 4").find("overflow"), std::string::npos);
  EXPECT_NE(eval_error("-9223372036854775807 - 2").find("overflow"), std::string::npos);
  EXPECT_NE(eval_error("(-9223372036854775807 - 1) / -1").find("overflow"), std::string::npos);
  EXPECT_EQ(eval_error("x + 1"), "unknown name 'x' at column 1 in 'x + 1'");
}

TEST(Expr, EvaluatesThroughALookup) {
  auto e = Expr::parse("a * 10 + b");
  ASSERT_TRUE(e.ok());
  auto v = e->eval_int(Lookup([](std::string_view n) -> std::optional<Value> {
    if (n == "a") return 3;
    if (n == "b") return 4;
    return std::nullopt;
  }));
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, 34);
}

TEST(Expr, CopiesShareTheTreeAndStayValid) {
  Expr copy = [] {
    auto e = Expr::parse("n * 2");
    return *e;
  }();
  EXPECT_EQ(*copy.eval_int(Vars{{"n", 21}}), 42);
}

// ---- the merged language: what the stack's constraint language brought ------------------------

Value value_of(const std::string& text, const Vars& vars = {}) {
  auto e = Expr::parse(text);
  EXPECT_TRUE(e.ok()) << text << ": " << e.error().message();
  if (!e) return Value("parse failed");
  auto v = e->eval(vars);
  EXPECT_TRUE(v.ok()) << text << ": " << v.error().message();
  return v ? *v : Value("eval failed");
}

TEST(Expr, WordFormsMixWithTheCOperators) {
  Vars v{{"a", 4}, {"b", 0}};
  EXPECT_EQ(eval("a > 1 and b == 0", v), 1);
  EXPECT_EQ(eval("a > 1 && b == 0 or b", v), 1);
  EXPECT_EQ(eval("b or a == 4 && b", v), 0);  // && binds tighter than or
  EXPECT_EQ(eval("b and 1 || 1", v), 1);      // and binds tighter than ||
  EXPECT_EQ(eval("not b", v), 1);
  EXPECT_EQ(eval("not not a", v), 1);
  EXPECT_EQ(eval("b == 0 and not a < 2", v), 1);
  // and/or short-circuit like && and ||.
  EXPECT_EQ(eval("b != 0 and a / b > 1", v), 0);
  EXPECT_EQ(eval("b == 0 or a / b > 1", v), 1);
  // Words end at a word boundary: these are names, not operators.
  EXPECT_EQ(eval("order + inner + notch", {{"order", 1}, {"inner", 2}, {"notch", 3}}), 6);
}

TEST(Expr, NotIsLooserThanAComparisonAndBangIsC) {
  Vars v{{"a", 4}};
  EXPECT_EQ(eval("not a == 4", v), 0);  // not (a == 4)
  EXPECT_EQ(eval("!a == 4", v), 0);     // (!a) == 4
  EXPECT_EQ(eval("!a == 0", v), 1);     // (!a) == 0
  EXPECT_EQ(eval("not a == 0", v), 1);  // not (a == 0)
  EXPECT_EQ(eval("not 0 ? 5 : 6"), 5);  // ?: is looser than not
  EXPECT_NE(parse_error("1 + not a").find("found 'not' at column 5"), std::string::npos);
}

TEST(Expr, StringsCompareWithCOperators) {
  Vars v{{"dtype", "bf16"}, {"n", 1}};
  EXPECT_EQ(eval("dtype == 'bf16'", v), 1);
  EXPECT_EQ(eval("dtype == \"bf16\"", v), 1);
  EXPECT_EQ(eval("dtype != 'fp16' && n == 1", v), 1);
  EXPECT_EQ(eval("dtype == 'fp16' || n", v), 1);
  // Numbers and strings compare by canonical text, so a numeric knob equals its quoted value.
  EXPECT_EQ(eval("n == '1'", v), 1);
  EXPECT_EQ(eval("'2' == 1 + 1"), 1);
  EXPECT_EQ(eval("'' == ''"), 1);
  EXPECT_EQ(value_of("n ? 'yes' : 'no'", v), Value("yes"));
  EXPECT_EQ(value_of("'a b'"), Value("a b"));
}

TEST(Expr, InTestsMembershipOfAList) {
  Vars v{{"bs", 64}, {"dtype", "fp16"}};
  EXPECT_EQ(eval("bs in [32, 64, 128]", v), 1);
  EXPECT_EQ(eval("bs in [32, 128]", v), 0);
  EXPECT_EQ(eval("bs not in [32, 128]", v), 1);
  EXPECT_EQ(eval("dtype in [\"bf16\", \"fp16\"]", v), 1);
  EXPECT_EQ(eval("dtype in ['bf16']", v), 0);
  EXPECT_EQ(eval("bs in []", v), 0);
  EXPECT_EQ(eval("bs * 2 in [bs + 64, 1]", v), 1);  // items are expressions; + binds tighter
  EXPECT_EQ(eval("bs in [64] && dtype in ['fp16']", v), 1);
  EXPECT_EQ(eval("not bs in [64]", v), 0);
  EXPECT_EQ(eval("bs in ['64']", v), 1);  // the == of the language, text for strings
  // Evaluation stops at the first match, like ||.
  EXPECT_EQ(eval("bs in [64, 1 / 0]", v), 1);
  EXPECT_NE(parse_error("bs in 64").find("expected '[', found '64' at column 7"),
            std::string::npos);
  EXPECT_NE(parse_error("bs in [1, 2").find("expected ']'"), std::string::npos);
  EXPECT_NE(parse_error("bs not 3").find("unexpected 'not' at column 4"), std::string::npos);
}

// ---- Python-style restrictions, as Kernel Tuner users write them -----------------------------

TEST(Expr, ComparisonsChainAsInPython) {
  Vars v{{"a", 1}, {"b", 2}, {"c", 3}};
  EXPECT_EQ(eval("a < b < c", v), 1);
  EXPECT_EQ(eval("a < c < b", v), 0);  // C would say (1 < 3) < 2, true
  EXPECT_EQ(eval("c > b > a", v), 1);
  EXPECT_EQ(eval("1 <= a <= b < c", v), 1);
  EXPECT_EQ(eval("1 <= a <= b < 2", v), 0);
  EXPECT_EQ(eval("a == 1 == 1", v), 1);
  EXPECT_EQ(eval("b == 2 == 1", v), 0);  // C would say (2 == 2) == 1, true
  EXPECT_EQ(eval("a != b != a", v), 1);  // C would say (1 != 2) != 1, false
  // A parenthesized comparison is a condition, compared as a value: no chain.
  EXPECT_EQ(eval("(a < c) < b", v), 1);
  EXPECT_EQ(eval("(a < b < c) < 2", v), 1);
  // The levels stay C's: "a < b == 1" is "(a < b) == 1".
  EXPECT_EQ(eval("a < b == 1", v), 1);
  EXPECT_EQ(eval("1 < 2 == 1"), 1);
  // The middle operand is read once per link, with its errors: a division by zero stays one.
  EXPECT_NE(eval_error("0 < 1 / 0 < 2").find("division by zero"), std::string::npos);
  // Chains are conditions for a stack file's constraint too.
  std::vector<Knob> knobs{{"t", {Value(1), Value(2), Value(4)}, 0}};
  EXPECT_TRUE(parse_constraint("1 <= t < 4", knobs).ok());
}

TEST(Expr, FloorDivisionPowerAndTrueFalse) {
  EXPECT_EQ(eval("7 // 2"), 3);
  EXPECT_EQ(eval("-7 // 2"), -4);  // floors, as Python; '/' truncates, as C
  EXPECT_EQ(eval("-7 / 2"), -3);
  EXPECT_EQ(eval("7 // -2"), -4);
  EXPECT_EQ(eval("6 // 3"), 2);
  EXPECT_EQ(value_of("7.0 // 2"), Value(3.0));
  EXPECT_EQ(eval("2 ** 10"), 1024);
  EXPECT_EQ(eval("2 ** 3 ** 2"), 512);  // right-associative
  EXPECT_EQ(eval("-2 ** 2"), -4);       // binds tighter than a unary minus on its left
  EXPECT_EQ(eval("2 * 3 ** 2"), 18);
  EXPECT_EQ(eval("3 ** 0"), 1);
  EXPECT_EQ(value_of("2.0 ** -1"), Value(0.5));
  EXPECT_EQ(value_of("4 ** 0.5"), Value(2.0));
  EXPECT_NE(eval_error("2 ** 63").find("integer overflow"), std::string::npos);
  EXPECT_NE(eval_error("2 ** -1").find("negative exponent"), std::string::npos);
  EXPECT_NE(eval_error("1 // 0").find("division by zero"), std::string::npos);
  EXPECT_EQ(eval("True"), 1);
  EXPECT_EQ(eval("False"), 0);
  EXPECT_EQ(eval("True and not False"), 1);
  EXPECT_EQ(eval("(2 > 1) == True"), 1);
  // Kernel Tuner's matmul restriction, and its tuple membership.
  Vars m{{"block_size_x", 32}, {"block_size_y", 8}, {"tile_size_y", 4}};
  EXPECT_EQ(eval("block_size_x == block_size_y * tile_size_y", m), 1);
  EXPECT_EQ(eval("block_size_x in (16, 32)", m), 1);
  EXPECT_EQ(eval("block_size_x not in (16,)", m), 1);
  EXPECT_EQ(eval("block_size_x * block_size_y <= 1024 and tile_size_y % 2 == 0", m), 1);
  EXPECT_NE(parse_error("n in (1, 2").find("expected ')'"), std::string::npos);
  // True and False are words of the language, not names a knob could take.
  auto e = Expr::parse("True + x");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->names(), (std::vector<std::string>{"x"}));
}

TEST(Expr, RealsFollowCPromotion) {
  Vars v{{"lr", 0.5}, {"n", 3}};
  EXPECT_EQ(value_of("lr * 4", v), Value(2.0));
  EXPECT_EQ(value_of("n / 2", v), Value(1));      // integers divide as in C
  EXPECT_EQ(value_of("n / 2.0", v), Value(1.5));  // a real operand makes it real
  EXPECT_EQ(value_of("7.5 % 2", v), Value(1.5));
  EXPECT_EQ(value_of(".25 + 1e1"), Value(10.25));
  EXPECT_EQ(eval("lr < 1 and lr >= 0.5", v), 1);
  EXPECT_EQ(eval("4.0 == 4"), 1);
  EXPECT_EQ(eval("lr == '0.5'", v), 1);
  EXPECT_EQ(value_of("max(lr, 1)", v), Value(1.0));
  EXPECT_NE(parse_error("1.2.3").find("malformed number '1.2.3'"), std::string::npos);
  EXPECT_NE(parse_error("1e999").find("out of range"), std::string::npos);
  EXPECT_NE(eval_error("lr / 0", v).find("division by zero"), std::string::npos);
  EXPECT_NE(eval_error("ceil_div(lr, 2)", v).find("ceil_div() needs integers"), std::string::npos);
  EXPECT_EQ(eval_error("lr", v), "'lr' is the real '0.5', not an integer");
}

TEST(Expr, StringErrors) {
  Vars v{{"dtype", "bf16"}};
  EXPECT_EQ(parse_error("dtype == 'bf16"),
            "string not closed (no ' after it) at column 10 in 'dtype == 'bf16'");
  EXPECT_EQ(eval_error("dtype < 3", v),
            "'<' needs numbers, not the string 'bf16' at column 7 in 'dtype < 3'");
  EXPECT_NE(eval_error("dtype + 1", v).find("'+' needs numbers"), std::string::npos);
  EXPECT_NE(eval_error("dtype && 1", v).find("'&&' needs numbers"), std::string::npos);
  EXPECT_NE(eval_error("not dtype", v).find("'not' needs numbers"), std::string::npos);
  EXPECT_EQ(eval_error("dtype", v), "'dtype' is the string 'bf16', not an integer");
  auto e = Expr::parse("dtype");
  ASSERT_TRUE(e.ok());
  auto h = e->holds([](std::string_view) -> std::optional<Value> { return Value("x"); });
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.error().message().find("not a condition"), std::string::npos);
  EXPECT_NE(parse_error("and == 1").find("found 'and' at column 1"), std::string::npos);
}

TEST(Expr, CompoundNamesAreReadWhole) {
  const std::vector<std::string> compound = {"torch.compile", "num-threads", "a-b"};
  auto e = Expr::parse("torch.compile == 1 and num-threads-1 >= a-b", compound);
  ASSERT_TRUE(e.ok()) << e.error().message();
  EXPECT_EQ(e->names(), (std::vector<std::string>{"torch.compile", "num-threads", "a-b"}));
  EXPECT_EQ(*e->eval_int(Vars{{"torch.compile", 1}, {"num-threads", 4}, {"a-b", 3}}), 1);
  // Without them, '-' subtracts and '.' is no operator.
  auto c = Expr::parse("a-b");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->names(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(parse_error("torch.compile"), "unexpected '.' at column 6 in 'torch.compile'");
  // A compound name is whole only at a word's end: "a-bc" is a minus bc.
  auto d = Expr::parse("a-bc", compound);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->names(), (std::vector<std::string>{"a", "bc"}));
}

TEST(Expr, StaticTypesCatchAtLoadWhatEvalWouldRefuse) {
  auto types = [](std::string_view n) -> std::optional<Expr::Type> {
    if (n == "dtype") return Expr::Type::kString;
    if (n == "lr") return Expr::Type::kReal;
    if (n == "bs") return Expr::Type::kInt;
    return std::nullopt;
  };
  auto type_of = [&](const std::string& text) -> Result<Expr::Type> {
    auto e = Expr::parse(text);
    if (!e) return e.error();
    return e->type(types);
  };
  EXPECT_EQ(*type_of("bs * 2"), Expr::Type::kInt);
  EXPECT_EQ(*type_of("bs * lr"), Expr::Type::kReal);
  EXPECT_EQ(*type_of("bs > 2"), Expr::Type::kBool);
  EXPECT_EQ(*type_of("dtype == 'bf16' or bs in [1, 2]"), Expr::Type::kBool);
  EXPECT_EQ(*type_of("bs ? 'a' : 'b'"), Expr::Type::kString);
  EXPECT_EQ(*type_of("(bs > 1) + 1"), Expr::Type::kInt);
  EXPECT_EQ(*type_of("ceil_div(bs, 2)"), Expr::Type::kInt);
  EXPECT_EQ(*type_of("min(bs, lr)"), Expr::Type::kReal);
  EXPECT_EQ(*type_of("'x'"), Expr::Type::kString);
  EXPECT_EQ(type_of("dtype < 3").error().message(),
            "'<' needs numbers on both sides at column 7 in 'dtype < 3'");
  EXPECT_NE(type_of("bs + dtype").error().message().find("'+' needs numbers"), std::string::npos);
  EXPECT_NE(type_of("dtype or bs").error().message().find("'||' needs conditions or numbers"),
            std::string::npos);
  EXPECT_NE(type_of("!dtype").error().message().find("'!' needs a number or a condition"),
            std::string::npos);
  EXPECT_NE(type_of("bs ? 1 : 'b'").error().message().find("'?' needs both branches"),
            std::string::npos);
  EXPECT_NE(type_of("round_up(lr, 2)").error().message().find("round_up() needs integers"),
            std::string::npos);
  EXPECT_EQ(type_of("bs + x").error().message(), "unknown name 'x' at column 6 in 'bs + x'");
}

TEST(Expr, ConstantsOfEveryType) {
  EXPECT_EQ(Expr::parse("'a'")->constant(), Value("a"));
  EXPECT_EQ(Expr::parse("0.5")->constant(), Value(0.5));
  EXPECT_EQ(Expr::parse("-2.25")->constant(), Value(-2.25));
  EXPECT_FALSE(Expr::parse("1 / 0")->constant().has_value());
}

}  // namespace
}  // namespace attune
