// The one expression language of attune: user-kernel specs (grid, block, buffer sizes, shared
// memory, constraints) and stack files (constraints) are written in it, over knob names and
// problem sizes. Parsed once into an immutable tree, evaluated many times: thread-safe to share.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/space.h"
#include "core/value.h"

namespace attune {

// Grammar, loosest first. The C operators have C's precedence; the word forms are Python's, so
// "not" binds looser than a comparison ("not a == b" is "not (a == b)") while "!" binds as in C.
//
//   expr    := or ('?' expr ':' expr)?
//   or      := and (('||' | 'or') and)*
//   and     := not (('&&' | 'and') not)*
//   not     := 'not' not | eq
//   eq      := rel (('==' | '!=') rel | ('in' | 'not' 'in') list)*
//   rel     := add (('<' | '<=' | '>' | '>=') add)*
//   add     := mul (('+' | '-') mul)*       mul := unary (('*' | '/' | '//' | '%') unary)*
//   unary   := ('-' | '+' | '!') unary | power
//   power   := primary ('**' unary)?      (Python's: -2 ** 2 is -4, 2 ** 3 ** 2 is 2 ** 9)
//   primary := integer | real | string | 'True' | 'False' | name | name '(' expr (',' expr)* ')'
//            | '(' expr ')'
//   list    := '[' (expr (',' expr)* ','?)? ']' | '(' (expr (',' expr)* ','?)? ')'
//
// Comparisons of one level chain as in Python, so Kernel Tuner's restrictions read as written:
// "a < b <= c" is "a < b and b <= c", "a == b == c" is "a == b and b == c"; a parenthesized
// comparison does not chain, and the levels stay C's ("a < b == c" is "(a < b) == c").
// True and False are the integers 1 and 0.
//
// Values are integers (int64), reals (double) and strings; a comparison or a logical operator
// gives the integer 0 or 1, and its static type is Type::kBool. Integers are decimal or 0x-hex;
// a real has a '.' or an exponent (0.5, 1e3). Strings are quoted with ' or " (no escapes).
// Names are C identifiers, or a name given to parse() that holds '.' or '-' (stack knobs may).
// The words and, or, not, in, True, False are not names.
//
// Semantics: integers keep C's (division truncates toward zero, % takes the sign of the
// dividend, overflow is an error); '//' is Python's floor division (rounds toward negative
// infinity, on reals too); '**' is a power (an integer to a negative power is an error; on reals
// pow()); an operation with a real operand is done in double (% is fmod). == and != compare numbers
// numerically and anything else by canonical text, so a knob of value 1 equals '1'; ordering and
// arithmetic need numbers. "x in [a, b]" is x == a || x == b.
// && || and ?: evaluate only the operands they need, so "b != 0 && a / b > 2" is safe.
// Functions: min(a,b), max(a,b), abs(a), and on integers ceil_div(a,b) (a/b rounded up, for
// positive b), round_up(a,b) (a rounded up to a multiple of b), is_pow2(a) (1 when a is a
// positive power of two).
//
// Errors are values, never crashes: at parse time with the column; at evaluation time division
// or modulo by zero, overflow, an unknown name, a string where a number is needed.
class Expr {
 public:
  struct Node;

  enum class Type { kBool, kInt, kReal, kString };
  // Name -> value. std::less<> so lookups by string_view do not allocate.
  using Vars = std::map<std::string, Value, std::less<>>;
  // The value of a name, or nullopt when the name is unknown.
  using Lookup = std::function<std::optional<Value>(std::string_view)>;
  // The type of a name, or nullopt when the name is unknown.
  using TypeOf = std::function<std::optional<Type>(std::string_view)>;

  // An error names the column (1-based) and quotes the text:
  // "expected ')', found end of expression at column 18 in 'ceil_div(n, block'".
  // compound_names: the names holding '.' or '-' to read as one name ("torch.compile"); the
  // longest one that the text continues with wins, so with "a-b" known "a-b-1" is a-b minus 1.
  static Result<Expr> parse(std::string_view text,
                            std::span<const std::string> compound_names = {});

  Result<Value> eval(const Lookup& lookup) const;
  Result<Value> eval(const Vars& vars) const;
  // The value as an integer (a condition is 0 or 1); a real or a string result is an error.
  Result<std::int64_t> eval_int(const Lookup& lookup) const;
  Result<std::int64_t> eval_int(const Vars& vars) const;
  // Whether the value is true (a nonzero number); a string result is an error.
  Result<bool> holds(const Lookup& lookup) const;

  // The static type of the value given the types of the names, or the first operator whose
  // operands cannot work ("'<' needs numbers on both sides at column 7 in 'dtype < 3'"), or the
  // first unknown name. Catches at load time what eval would refuse for every value.
  Result<Type> type(const TypeOf& type_of) const;

  const std::string& text() const { return text_; }
  // The distinct names the expression reads, in order of first appearance.
  const std::vector<std::string>& names() const { return names_; }
  bool reads(std::string_view name) const;
  // The value when the expression reads no names and evaluates without error.
  std::optional<Value> constant() const;

 private:
  std::string text_;
  std::vector<std::string> names_;
  std::shared_ptr<const Node> root_;
};

std::string_view to_string(Expr::Type t);  // "condition", "integer", "real", "string"

// How a knob reads in an expression: a knob whose options are all integers is an integer, all
// numbers a real, anything else a string (its options' texts).
Expr::Type knob_type(const Knob& knob);
// The knob's value as knob_type() reads it.
Value knob_value(const Knob& knob, const Value& option);

// The Space constraint of an expression over knobs and constants (problem sizes, which win
// over a knob of the same name): it runs once the knobs it names are decided and allows a
// config when it holds; a config it cannot be evaluated for (division by zero) is excluded.
// Every name must be a knob or a constant; at least one must be a knob.
Result<Constraint> make_constraint(const Expr& expr, const std::vector<Knob>& knobs,
                                   const Expr::Vars& constants = {});

// A stack file's constraint: text that must be a condition (it has a comparison) over knobs
// only. Errors read "constraint 'TEXT': what is wrong".
Result<Constraint> parse_constraint(std::string_view text, const std::vector<Knob>& knobs);

}  // namespace attune
