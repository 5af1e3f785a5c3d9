// Constraints of a stack file: boolean expressions over a provider's knobs, such as
// "compile == 0 or dtype == 'bf16'" or "batch_size * threads <= 64", compiled into Space
// Constraints. Parsing is pure; a compiled Constraint is immutable and safe to share.
#pragma once

#include <string>
#include <vector>

#include "core/error.h"
#include "core/space.h"

namespace attune::command {

// Grammar (lowest precedence first):
//   or       := and (("or" | "||") and)*
//   and      := not (("and" | "&&") not)*
//   not      := ("not" | "!") not | compare
//   compare  := sum (("==" | "!=" | "<" | "<=" | ">" | ">=") sum)?
//   sum      := product (("+" | "-") product)*
//   product  := unary (("*" | "/" | "%") unary)*
//   unary    := "-" unary | atom
//   atom     := number | 'word' | "word" | knob | "(" or ")"
// A knob whose options are all numbers is a number, otherwise a word. == and != compare numbers
// numerically and anything else by canonical text; ordering and arithmetic need numbers.
// Errors (unknown knob, type mismatch, syntax) name the offending text.
Result<Constraint> parse_constraint(const std::string& text, const std::vector<Knob>& knobs);

}  // namespace attune::command
