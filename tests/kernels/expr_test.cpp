#include "kernels/user/expr.h"

#include <cstdint>
#include <limits>
#include <string>

#include <gtest/gtest.h>

namespace attune::user {
namespace {

std::int64_t eval(const std::string& text, const Vars& vars = {}) {
  auto e = Expr::parse(text);
  EXPECT_TRUE(e.ok()) << text << ": " << e.error().message();
  if (!e) return -999999;
  auto v = e->eval(vars);
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
  auto v = e->eval(vars);
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
  EXPECT_EQ(eval("10 - 4 - 3"), 3);      // left associative
  EXPECT_EQ(eval("64 / 4 / 2"), 8);
  EXPECT_EQ(eval("-2 * 3"), -6);
  EXPECT_EQ(eval("- -5"), 5);
  EXPECT_EQ(eval("1 + 2 < 4"), 1);       // arithmetic binds tighter than comparison
  EXPECT_EQ(eval("1 < 2 == 1"), 1);      // relational tighter than equality
  EXPECT_EQ(eval("1 || 0 && 0"), 1);     // && tighter than ||
  EXPECT_EQ(eval("!0 + 1"), 2);          // unary tighter than binary
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
  EXPECT_EQ(parse_error("2 +"), "expected a number, a name or '(', found end of expression at column 4 in '2 +'");
  EXPECT_EQ(parse_error("a b"), "unexpected 'b' at column 3 in 'a b'");
  EXPECT_EQ(parse_error("(a + 1"), "expected ')', found end of expression at column 7 in '(a + 1'");
  EXPECT_EQ(parse_error("a = 1"), "'=' is not an operator (compare with '==') at column 3 in 'a = 1'");
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
  EXPECT_NE(parse_error("is_pow2(a, b)").find("is_pow2() takes 1 argument, given 2"), std::string::npos);
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
  auto v = e->eval(Lookup([](std::string_view n) -> std::optional<std::int64_t> {
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
  EXPECT_EQ(*copy.eval(Vars{{"n", 21}}), 42);
}

}  // namespace
}  // namespace attune::user
