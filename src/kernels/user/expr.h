// The integer expression language of user-kernel specs: grid and block sizes, buffer sizes,
// shared memory and constraints, written over knob names and problem sizes. Parsed once into an
// immutable tree, evaluated many times. An Expr is immutable after parse: thread-safe to share.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"

namespace attune::user {

// Name -> value. std::less<> so lookups by string_view do not allocate.
using Vars = std::map<std::string, std::int64_t, std::less<>>;
// The value of a name, or nullopt when the name is unknown.
using Lookup = std::function<std::optional<std::int64_t>(std::string_view)>;

// Grammar, with C's precedence and C's integer semantics on int64 (division truncates toward
// zero, % takes the sign of the dividend); comparisons and logic give 0 or 1; && || and ?:
// evaluate only the operands they need, so "b != 0 && a / b > 2" is safe.
//
//   expr    := or ('?' expr ':' expr)?
//   or      := and ('||' and)*          and := eq ('&&' eq)*
//   eq      := rel (('=='|'!=') rel)*   rel := add (('<'|'<='|'>'|'>=') add)*
//   add     := mul (('+'|'-') mul)*     mul := unary (('*'|'/'|'%') unary)*
//   unary   := ('-'|'+'|'!') unary | primary
//   primary := integer | name | name '(' expr (',' expr)* ')' | '(' expr ')'
//
// Integers are decimal or 0x-hex. Names are C identifiers. Functions: min(a,b), max(a,b),
// ceil_div(a,b) (a/b rounded up, for positive b), round_up(a,b) (a rounded up to a multiple of b),
// is_pow2(a) (1 when a is a positive power of two), abs(a).
//
// Evaluation errors are values, never crashes: division or modulo by zero, int64 overflow, an
// unknown name, ceil_div/round_up by a non-positive divisor.
class Expr {
 public:
  struct Node;

  // An error names the column (1-based) and quotes the text:
  // "expected ')' at column 18 in 'ceil_div(n, block'".
  static Result<Expr> parse(std::string_view text);

  Result<std::int64_t> eval(const Lookup& lookup) const;
  Result<std::int64_t> eval(const Vars& vars) const;

  const std::string& text() const { return text_; }
  // The distinct names the expression reads, in order of first appearance.
  const std::vector<std::string>& names() const { return names_; }
  bool reads(std::string_view name) const;
  // The value when the expression reads no names and evaluates without error.
  std::optional<std::int64_t> constant() const;

 private:
  std::string text_;
  std::vector<std::string> names_;
  std::shared_ptr<const Node> root_;
};

}  // namespace attune::user
