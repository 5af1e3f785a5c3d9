#include "core/expr.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <set>

namespace attune {

struct Expr::Node {
  enum class Kind { kLiteral, kName, kUnary, kBinary, kTernary, kCall, kIn };
  Kind kind = Kind::kLiteral;
  // The operator ("+", "&&", "!", "not", "in", "not in"), the function name for kCall, or the
  // name for kName.
  std::string op;
  Value literal;
  std::size_t column = 0;                   // 1-based column of the operator or the first character
  std::vector<std::unique_ptr<Node>> kids;  // kIn: the tested value, then the list
};

namespace {

using Node = Expr::Node;
using NodePtr = std::unique_ptr<Node>;
using Type = Expr::Type;

struct Function {
  std::string_view name;
  std::size_t arity;
  bool integers_only;
};
constexpr Function kFunctions[] = {{"min", 2, false},     {"max", 2, false},
                                   {"ceil_div", 2, true}, {"round_up", 2, true},
                                   {"is_pow2", 1, true},  {"abs", 1, false}};

const Function* find_function(std::string_view name) {
  for (const auto& f : kFunctions)
    if (f.name == name) return &f;
  return nullptr;
}

constexpr std::string_view kKeywords[] = {"and", "or", "not", "in", "True", "False"};
bool is_keyword(std::string_view w) {
  return std::find(std::begin(kKeywords), std::end(kKeywords), w) != std::end(kKeywords);
}

bool ident_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}
bool digit(char c) {
  return std::isdigit(static_cast<unsigned char>(c));
}

Error located(std::string_view what, std::size_t column, std::string_view text) {
  return Error::invalid_argument(fmt::format("{} at column {} in '{}'", what, column, text));
}

// Recursive descent over the text; tokens are read on demand.
class Parser {
 public:
  Parser(std::string_view text, std::span<const std::string> compound_names)
      : text_(text), compound_(compound_names) {}

  Result<NodePtr> parse_all() {
    skip_space();
    if (pos_ >= text_.size()) return Error::invalid_argument("empty expression");
    ATTUNE_ASSIGN(NodePtr root, parse_expr());
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == '=')
      return fail("'=' is not an operator (compare with '==')");
    if (pos_ < text_.size()) return fail(fmt::format("unexpected {}", describe_here()));
    return root;
  }

  std::vector<std::string> names;

 private:
  std::string_view text_;
  std::span<const std::string> compound_;
  std::size_t pos_ = 0;
  int depth_ = 0;

  Error fail(std::string_view what) const { return located(what, pos_ + 1, text_); }
  std::string describe_here() const {
    if (pos_ >= text_.size()) return "end of expression";
    std::size_t end = pos_ + 1;
    if (ident_char(text_[pos_]))
      while (end < text_.size() && ident_char(text_[end])) ++end;
    return fmt::format("'{}'", text_.substr(pos_, end - pos_));
  }
  // Deep nesting is a user's typo or an attack on the stack; either way, refuse it.
  Status enter() {
    if (++depth_ > 200) return fail("expression nested too deeply");
    return Status::success();
  }

  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  // Consumes op if the text continues with it (and, for one-character operators that prefix a
  // two-character one, not with the longer operator).
  bool accept(std::string_view op) {
    skip_space();
    if (text_.substr(pos_, op.size()) != op) return false;
    if (op.size() == 1 && pos_ + 1 < text_.size()) {
      char next = text_[pos_ + 1];
      if ((op == "<" || op == ">" || op == "!" || op == "=") && next == '=') return false;
      if (op == "&" && next == '&') return false;
      if (op == "|" && next == '|') return false;
      if (op == "*" && next == '*') return false;
      if (op == "/" && next == '/') return false;
    }
    pos_ += op.size();
    return true;
  }
  // Consumes a word operator ("and") that ends where the text's word ends.
  bool accept_word(std::string_view word) {
    skip_space();
    if (text_.substr(pos_, word.size()) != word) return false;
    if (pos_ + word.size() < text_.size() && ident_char(text_[pos_ + word.size()])) return false;
    pos_ += word.size();
    return true;
  }
  Status expect(std::string_view op) {
    if (accept(op)) return Status::success();
    return fail(fmt::format("expected '{}', found {}", op, describe_here()));
  }

  static NodePtr make(Node::Kind kind, std::string op, std::size_t column,
                      std::vector<NodePtr> kids = {}) {
    auto n = std::make_unique<Node>();
    n->kind = kind;
    n->op = std::move(op);
    n->column = column;
    n->kids = std::move(kids);
    return n;
  }
  static NodePtr copy(const Node& n) {
    auto c = std::make_unique<Node>();
    c->kind = n.kind;
    c->op = n.op;
    c->literal = n.literal;
    c->column = n.column;
    for (const auto& k : n.kids) c->kids.push_back(copy(*k));
    return c;
  }
  static NodePtr binary(std::string op, std::size_t column, NodePtr a, NodePtr b) {
    std::vector<NodePtr> kids;
    kids.push_back(std::move(a));
    kids.push_back(std::move(b));
    return make(Node::Kind::kBinary, std::move(op), column, std::move(kids));
  }

  Result<NodePtr> parse_expr() {
    ATTUNE_TRY(enter());
    ATTUNE_ASSIGN(NodePtr cond, parse_or());
    skip_space();
    std::size_t column = pos_ + 1;
    if (accept("?")) {
      ATTUNE_ASSIGN(NodePtr yes, parse_expr());
      ATTUNE_TRY(expect(":"));
      ATTUNE_ASSIGN(NodePtr no, parse_expr());
      std::vector<NodePtr> kids;
      kids.push_back(std::move(cond));
      kids.push_back(std::move(yes));
      kids.push_back(std::move(no));
      cond = make(Node::Kind::kTernary, "?:", column, std::move(kids));
    }
    --depth_;
    return cond;
  }

  // A logical operator and its word form ("&&" and "and"), each parsing the next level down.
  Result<NodePtr> parse_logic(std::string_view symbol, std::string_view word,
                              Result<NodePtr> (Parser::*next)()) {
    ATTUNE_ASSIGN(NodePtr lhs, (this->*next)());
    for (;;) {
      skip_space();
      std::size_t column = pos_ + 1;
      if (!accept(symbol) && !accept_word(word)) return lhs;
      ATTUNE_ASSIGN(NodePtr rhs, (this->*next)());
      lhs = binary(std::string(symbol), column, std::move(lhs), std::move(rhs));
    }
  }
  Result<NodePtr> parse_or() { return parse_logic("||", "or", &Parser::parse_and); }
  Result<NodePtr> parse_and() { return parse_logic("&&", "and", &Parser::parse_not); }

  Result<NodePtr> parse_not() {
    skip_space();
    std::size_t column = pos_ + 1;
    if (!accept_word("not")) return parse_eq();
    ATTUNE_TRY(enter());
    ATTUNE_ASSIGN(NodePtr operand, parse_not());
    --depth_;
    std::vector<NodePtr> kids;
    kids.push_back(std::move(operand));
    return make(Node::Kind::kUnary, "not", column, std::move(kids));
  }

  Result<NodePtr> parse_eq() {
    ATTUNE_ASSIGN(NodePtr lhs, parse_rel());
    for (;;) {
      skip_space();
      std::size_t column = pos_ + 1;
      std::string op;
      if (accept("=="))
        op = "==";
      else if (accept("!="))
        op = "!=";
      else if (accept_word("in"))
        op = "in";
      else {
        std::size_t before = pos_;
        if (!accept_word("not")) return lhs;
        if (!accept_word("in")) {
          pos_ = before;
          return lhs;
        }
        op = "not in";
      }
      if (op == "==" || op == "!=") {
        ATTUNE_ASSIGN(NodePtr rhs, parse_rel());
        lhs = chain(op, column, std::move(lhs), std::move(rhs));
        continue;
      }
      std::vector<NodePtr> kids;
      kids.push_back(std::move(lhs));
      // A list, or a Python tuple: "x in (1, 2)".
      std::string_view close = accept("(") ? ")" : "]";
      if (close == "]") ATTUNE_TRY(expect("["));
      if (!accept(close)) {
        for (;;) {
          ATTUNE_ASSIGN(NodePtr item, parse_expr());
          kids.push_back(std::move(item));
          if (!accept(",")) {
            ATTUNE_TRY(expect(close));
            break;
          }
          if (accept(close)) break;  // a trailing comma, as in (16,)
        }
      }
      lhs = make(Node::Kind::kIn, op, column, std::move(kids));
    }
  }

  // Comparisons of one level chain as in Python: "a < b <= c" is "a < b and b <= c" (b is
  // pure, so reading it twice is reading it once), where C would compare (a < b) with c. The
  // levels stay C's: "a < b == c" is "(a < b) == c".
  NodePtr chain(std::string_view op, std::size_t column, NodePtr lhs, NodePtr rhs) {
    auto level = [](std::string_view o) {
      if (o == "==" || o == "!=") return 1;
      if (o == "<" || o == "<=" || o == ">" || o == ">=") return 2;
      return 0;
    };
    if (level(op) == 0) return binary(std::string(op), column, std::move(lhs), std::move(rhs));
    const Node* last = nullptr;  // lhs's last comparison, when lhs is an open one or a chain
    if (open_.count(lhs.get())) last = lhs->op == "&&" ? lhs->kids[1].get() : lhs.get();
    if (!last || level(last->op) != level(op)) {
      NodePtr n = binary(std::string(op), column, std::move(lhs), std::move(rhs));
      open_.insert(n.get());
      return n;
    }
    NodePtr link = binary(std::string(op), column, copy(*last->kids[1]), std::move(rhs));
    NodePtr n = binary("&&", column, std::move(lhs), std::move(link));
    open_.insert(n.get());
    return n;
  }
  // Comparisons and chains written without parentheses around them: the ones a following
  // comparison of their level extends.
  std::set<const Node*> open_;

  // The binary operators of one C precedence level, each parsing the next level down.
  Result<NodePtr> parse_level(std::initializer_list<std::string_view> ops,
                              Result<NodePtr> (Parser::*next)()) {
    ATTUNE_ASSIGN(NodePtr lhs, (this->*next)());
    for (;;) {
      skip_space();
      std::size_t column = pos_ + 1;
      std::string_view matched;
      for (std::string_view op : ops)
        if (accept(op)) {
          matched = op;
          break;
        }
      if (matched.empty()) return lhs;
      ATTUNE_ASSIGN(NodePtr rhs, (this->*next)());
      lhs = chain(matched, column, std::move(lhs), std::move(rhs));
    }
  }
  Result<NodePtr> parse_rel() { return parse_level({"<=", ">=", "<", ">"}, &Parser::parse_add); }
  Result<NodePtr> parse_add() { return parse_level({"+", "-"}, &Parser::parse_mul); }
  Result<NodePtr> parse_mul() { return parse_level({"*", "//", "/", "%"}, &Parser::parse_unary); }

  // Python's power: tighter than a unary minus on its left (-2 ** 2 is -4), right-associative,
  // and its exponent may carry a sign (2 ** -1).
  Result<NodePtr> parse_power() {
    ATTUNE_ASSIGN(NodePtr base, parse_primary());
    skip_space();
    std::size_t column = pos_ + 1;
    if (!accept("**")) return base;
    ATTUNE_TRY(enter());
    ATTUNE_ASSIGN(NodePtr exponent, parse_unary());
    --depth_;
    return binary("**", column, std::move(base), std::move(exponent));
  }

  Result<NodePtr> parse_unary() {
    skip_space();
    std::size_t column = pos_ + 1;
    for (std::string_view op : {"-", "+", "!"}) {
      if (accept(op)) {
        ATTUNE_TRY(enter());
        ATTUNE_ASSIGN(NodePtr operand, parse_unary());
        --depth_;
        std::vector<NodePtr> kids;
        kids.push_back(std::move(operand));
        return make(Node::Kind::kUnary, std::string(op), column, std::move(kids));
      }
    }
    return parse_power();
  }

  // The name starting at pos_: the longest compound name the text continues with, else a C
  // identifier.
  std::string_view read_name() {
    std::size_t end = pos_;
    while (end < text_.size() && ident_char(text_[end])) ++end;
    std::string_view best = text_.substr(pos_, end - pos_);
    for (const auto& c : compound_) {
      if (c.size() <= best.size() || text_.substr(pos_, c.size()) != c) continue;
      if (pos_ + c.size() < text_.size() && ident_char(text_[pos_ + c.size()])) continue;
      best = text_.substr(pos_, c.size());
    }
    pos_ += best.size();
    return best;
  }

  Result<NodePtr> parse_primary() {
    skip_space();
    std::size_t column = pos_ + 1;
    if (pos_ >= text_.size())
      return fail("expected a number, a name or '(', found end of expression");
    char c = text_[pos_];
    if (digit(c) || (c == '.' && pos_ + 1 < text_.size() && digit(text_[pos_ + 1])))
      return parse_number();
    if (c == '\'' || c == '"') return parse_string();
    if (ident_start(c)) {
      std::size_t start = pos_;
      std::string name(read_name());
      if (name == "True" || name == "False") {  // Python's, as Kernel Tuner restrictions write them
        auto n = make(Node::Kind::kLiteral, "", column);
        n->literal = Value(std::int64_t{name == "True" ? 1 : 0});
        return n;
      }
      if (is_keyword(name)) {
        pos_ = start;
        return fail(fmt::format("expected a number, a name or '(', found '{}'", name));
      }
      skip_space();
      if (pos_ < text_.size() && text_[pos_] == '(') {
        const Function* f = find_function(name);
        if (!f) {
          pos_ = start;
          std::string known;
          for (const auto& k : kFunctions)
            known += fmt::format("{}{}", known.empty() ? "" : ", ", k.name);
          return fail(fmt::format("unknown function '{}' (known: {})", name, known));
        }
        ++pos_;
        std::vector<NodePtr> args;
        for (;;) {
          ATTUNE_ASSIGN(NodePtr arg, parse_expr());
          args.push_back(std::move(arg));
          if (!accept(",")) break;
        }
        ATTUNE_TRY(expect(")"));
        if (args.size() != f->arity) {
          pos_ = start;
          return fail(fmt::format("{}() takes {} argument{}, given {}", name, f->arity,
                                  f->arity == 1 ? "" : "s", args.size()));
        }
        return make(Node::Kind::kCall, std::move(name), column, std::move(args));
      }
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
      return make(Node::Kind::kName, std::move(name), column);
    }
    if (accept("(")) {
      ATTUNE_ASSIGN(NodePtr inner, parse_expr());
      ATTUNE_TRY(expect(")"));
      open_.erase(inner.get());  // "(a < b) < c" compares a condition with c
      return inner;
    }
    return fail(fmt::format("expected a number, a name or '(', found {}", describe_here()));
  }

  Result<NodePtr> parse_string() {
    const char quote = text_[pos_];
    std::size_t end = text_.find(quote, pos_ + 1);
    if (end == std::string_view::npos)
      return fail(fmt::format("string not closed (no {} after it)", quote));
    auto n = make(Node::Kind::kLiteral, "", pos_ + 1);
    n->literal = Value(std::string(text_.substr(pos_ + 1, end - pos_ - 1)));
    pos_ = end + 1;
    return n;
  }

  Result<NodePtr> parse_number() {
    const std::size_t start = pos_;
    int base = 10;
    bool real = false;
    if (text_.substr(pos_, 2) == "0x" || text_.substr(pos_, 2) == "0X") {
      base = 16;
      pos_ += 2;
    }
    const std::size_t digits = pos_;
    auto skip_digits = [&](bool hex) {
      while (pos_ < text_.size() &&
             (hex ? std::isxdigit(static_cast<unsigned char>(text_[pos_])) : digit(text_[pos_])))
        ++pos_;
    };
    skip_digits(base == 16);
    if (base == 10 && pos_ < text_.size() && text_[pos_] == '.') {
      real = true;
      ++pos_;
      skip_digits(false);
    }
    if (base == 10 && pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      std::size_t e = pos_ + 1;
      if (e < text_.size() && (text_[e] == '+' || text_[e] == '-')) ++e;
      if (e < text_.size() && digit(text_[e])) {
        real = true;
        pos_ = e;
        skip_digits(false);
      }
    }
    const std::size_t end = pos_;
    // "12abc", "1.2.3" or "0x" is a typo, not a number followed by a name.
    auto in_number = [&](std::size_t i) {
      return i < text_.size() && (ident_char(text_[i]) || text_[i] == '.');
    };
    const std::string_view number = text_.substr(start, end - start);
    if (end == digits || in_number(end)) {
      pos_ = start;
      while (in_number(pos_)) ++pos_;
      std::string_view bad = text_.substr(start, pos_ - start);
      pos_ = start;
      return fail(fmt::format("malformed number '{}'", bad));
    }
    auto n = make(Node::Kind::kLiteral, "", start + 1);
    pos_ = start;  // errors below point at the number
    if (real) {
      double d = 0;
      auto r = std::from_chars(number.data(), number.data() + number.size(), d);
      if (r.ec == std::errc::result_out_of_range)
        return fail(fmt::format("number '{}' is out of range", number));
      if (r.ec != std::errc() || r.ptr != number.data() + number.size())
        return fail(fmt::format("malformed number '{}'", number));
      n->literal = Value(d);
    } else {
      std::int64_t v = 0;
      auto r = std::from_chars(text_.data() + digits, text_.data() + end, v, base);
      if (r.ec == std::errc::result_out_of_range)
        return fail(fmt::format("number '{}' does not fit in 64 bits", number));
      if (r.ec != std::errc() || r.ptr != text_.data() + end)
        return fail(fmt::format("malformed number '{}'", number));
      n->literal = Value(v);
    }
    pos_ = end;
    return n;
  }
};

bool is_number(Type t) {
  return t != Type::kString;
}
bool is_number(const Value& v) {
  return !v.is_word();
}
Type type_of(const Value& v) {
  return v.is_int() ? Type::kInt : v.is_real() ? Type::kReal : Type::kString;
}
// How an error names the operator of a node: '+', min(), '?'.
std::string operator_name(const Node& n) {
  if (n.kind == Node::Kind::kCall) return n.op + "()";
  if (n.kind == Node::Kind::kTernary) return "'?'";
  return "'" + n.op + "'";
}

// The static types of a tree: the operators' rules of Evaluator, applied to types.
class TypeChecker {
 public:
  TypeChecker(const std::string& text, const Expr::TypeOf& type_of)
      : text_(text), type_of_(type_of) {}

  Result<Type> type(const Node& n) const {
    switch (n.kind) {
      case Node::Kind::kLiteral:
        return type_of(n.literal);
      case Node::Kind::kName: {
        auto t = type_of_(n.op);
        if (!t) return located(fmt::format("unknown name '{}'", n.op), n.column, text_);
        return *t;
      }
      case Node::Kind::kUnary: {
        ATTUNE_ASSIGN(Type a, type(*n.kids[0]));
        if (!is_number(a)) return needs(n, "a number or a condition");
        if (n.op == "!" || n.op == "not") return Type::kBool;
        return a == Type::kBool ? Type::kInt : a;
      }
      case Node::Kind::kTernary: {
        ATTUNE_ASSIGN(Type c, type(*n.kids[0]));
        if (!is_number(c)) return needs(n, "a number or a condition before it");
        ATTUNE_ASSIGN(Type a, type(*n.kids[1]));
        ATTUNE_ASSIGN(Type b, type(*n.kids[2]));
        if (a == b) return a;
        if (!is_number(a) || !is_number(b)) return needs(n, "both branches of one kind");
        return arithmetic(a, b);
      }
      case Node::Kind::kIn:
        for (const auto& k : n.kids) ATTUNE_TRY(type(*k));
        return Type::kBool;
      case Node::Kind::kBinary: {
        ATTUNE_ASSIGN(Type a, type(*n.kids[0]));
        ATTUNE_ASSIGN(Type b, type(*n.kids[1]));
        if (n.op == "==" || n.op == "!=") return Type::kBool;
        if (!is_number(a) || !is_number(b))
          return needs(
              n, n.op == "&&" || n.op == "||" ? "conditions or numbers" : "numbers on both sides");
        if (n.op == "&&" || n.op == "||" || n.op == "<" || n.op == "<=" || n.op == ">" ||
            n.op == ">=")
          return Type::kBool;
        return arithmetic(a, b);
      }
      case Node::Kind::kCall: {
        const Function* f = find_function(n.op);
        Type out = Type::kInt;
        for (const auto& k : n.kids) {
          ATTUNE_ASSIGN(Type a, type(*k));
          if (!is_number(a) || (f->integers_only && a == Type::kReal))
            return needs(n, f->integers_only ? "integers" : "numbers");
          if (a == Type::kReal) out = Type::kReal;
        }
        return out;
      }
    }
    return Error::internal("unknown expression node");
  }

 private:
  const std::string& text_;
  const Expr::TypeOf& type_of_;

  static Type arithmetic(Type a, Type b) {
    return a == Type::kReal || b == Type::kReal ? Type::kReal : Type::kInt;
  }
  Error needs(const Node& n, std::string_view what) const {
    return located(fmt::format("{} needs {}", operator_name(n), what), n.column, text_);
  }
};

class Evaluator {
 public:
  Evaluator(const std::string& text, const Expr::Lookup& lookup) : text_(text), lookup_(lookup) {}

  Result<Value> eval(const Node& n) const {
    switch (n.kind) {
      case Node::Kind::kLiteral:
        return n.literal;
      case Node::Kind::kName: {
        auto v = lookup_(n.op);
        if (!v) return fail(n, fmt::format("unknown name '{}'", n.op));
        return *v;
      }
      case Node::Kind::kUnary: {
        ATTUNE_ASSIGN(Value a, eval(*n.kids[0]));
        if (!is_number(a)) return needs_number(n, a);
        if (n.op == "!" || n.op == "not") return truth(!truthy(a));
        if (n.op == "+") return a;
        if (a.is_real()) return Value(-a.as_real());
        if (a.as_int() == std::numeric_limits<std::int64_t>::min()) return overflow(n);
        return Value(-a.as_int());
      }
      case Node::Kind::kTernary: {
        ATTUNE_ASSIGN(Value c, eval(*n.kids[0]));
        if (!is_number(c)) return needs_number(n, c);
        return eval(*n.kids[truthy(c) ? 1 : 2]);
      }
      case Node::Kind::kIn: {
        ATTUNE_ASSIGN(Value x, eval(*n.kids[0]));
        bool found = false;
        for (std::size_t i = 1; i < n.kids.size() && !found; ++i) {
          ATTUNE_ASSIGN(Value item, eval(*n.kids[i]));
          found = equal(x, item);
        }
        return truth(n.op == "in" ? found : !found);
      }
      case Node::Kind::kBinary:
        return binary(n);
      case Node::Kind::kCall:
        return call(n);
    }
    return Error::internal("unknown expression node");
  }

 private:
  const std::string& text_;
  const Expr::Lookup& lookup_;

  static Value truth(bool b) { return Value(std::int64_t{b ? 1 : 0}); }
  static bool truthy(const Value& v) { return v.is_real() ? v.as_real() != 0 : v.as_int() != 0; }
  // Numbers numerically (integers exactly), anything else by canonical text.
  static bool equal(const Value& a, const Value& b) {
    if (a.is_int() && b.is_int()) return a.as_int() == b.as_int();
    if (is_number(a) && is_number(b)) return a.as_real() == b.as_real();
    return a.text() == b.text();
  }

  Error fail(const Node& n, std::string_view what) const { return located(what, n.column, text_); }
  Error overflow(const Node& n) const {
    return fail(n, fmt::format("integer overflow in '{}'", n.op));
  }
  Error needs_number(const Node& n, const Value& got) const {
    return fail(n,
                fmt::format("{} needs numbers, not the string '{}'", operator_name(n), got.text()));
  }

  Result<Value> binary(const Node& n) const {
    const std::string& op = n.op;
    ATTUNE_ASSIGN(Value a, eval(*n.kids[0]));
    if (op == "&&" || op == "||") {
      if (!is_number(a)) return needs_number(n, a);
      if (truthy(a) == (op == "||")) return truth(op == "||");
      ATTUNE_ASSIGN(Value b, eval(*n.kids[1]));
      if (!is_number(b)) return needs_number(n, b);
      return truth(truthy(b));
    }
    ATTUNE_ASSIGN(Value b, eval(*n.kids[1]));
    if (op == "==") return truth(equal(a, b));
    if (op == "!=") return truth(!equal(a, b));
    if (!is_number(a)) return needs_number(n, a);
    if (!is_number(b)) return needs_number(n, b);
    if (a.is_int() && b.is_int()) return integer(n, a.as_int(), b.as_int());
    const double x = a.as_real(), y = b.as_real();
    if (op == "<") return truth(x < y);
    if (op == "<=") return truth(x <= y);
    if (op == ">") return truth(x > y);
    if (op == ">=") return truth(x >= y);
    if (op == "+") return Value(x + y);
    if (op == "-") return Value(x - y);
    if (op == "*") return Value(x * y);
    if (op == "/" || op == "%" || op == "//") {
      if (y == 0) return fail(n, op == "%" ? "modulo by zero" : "division by zero");
      return Value(op == "/" ? x / y : op == "//" ? std::floor(x / y) : std::fmod(x, y));
    }
    if (op == "**") {
      const double p = std::pow(x, y);
      if (std::isnan(p) && !std::isnan(x) && !std::isnan(y))
        return fail(n, fmt::format("{} ** {} is not a real number", a.text(), b.text()));
      return Value(p);
    }
    return Error::internal("unknown operator " + op);
  }

  Result<Value> integer(const Node& n, std::int64_t a, std::int64_t b) const {
    const std::string& op = n.op;
    std::int64_t r = 0;
    if (op == "+") {
      if (__builtin_add_overflow(a, b, &r)) return overflow(n);
      return Value(r);
    }
    if (op == "-") {
      if (__builtin_sub_overflow(a, b, &r)) return overflow(n);
      return Value(r);
    }
    if (op == "*") {
      if (__builtin_mul_overflow(a, b, &r)) return overflow(n);
      return Value(r);
    }
    if (op == "/" || op == "%") {
      if (b == 0) return fail(n, op == "/" ? "division by zero" : "modulo by zero");
      if (a == std::numeric_limits<std::int64_t>::min() && b == -1) return overflow(n);
      return Value(op == "/" ? a / b : a % b);
    }
    if (op == "//") {  // Python's: rounds toward negative infinity
      if (b == 0) return fail(n, "division by zero");
      if (a == std::numeric_limits<std::int64_t>::min() && b == -1) return overflow(n);
      std::int64_t q = a / b;
      if (a % b != 0 && ((a < 0) != (b < 0))) --q;
      return Value(q);
    }
    if (op == "**") {
      if (b < 0)
        return fail(n, fmt::format("integer power with the negative exponent {} (write {}.0 "
                                   "** {} for a real)",
                                   b, a, b));
      std::int64_t p = 1, base = a;
      for (std::int64_t e = b; e > 0; e >>= 1) {
        if ((e & 1) && __builtin_mul_overflow(p, base, &p)) return overflow(n);
        if (e > 1 && __builtin_mul_overflow(base, base, &base)) return overflow(n);
      }
      return Value(p);
    }
    if (op == "<") return truth(a < b);
    if (op == "<=") return truth(a <= b);
    if (op == ">") return truth(a > b);
    if (op == ">=") return truth(a >= b);
    return Error::internal("unknown operator " + op);
  }

  Result<Value> call(const Node& n) const {
    const Function* fn = find_function(n.op);
    Value args[2];
    bool real = false;
    for (std::size_t i = 0; i < n.kids.size(); ++i) {
      ATTUNE_ASSIGN(args[i], eval(*n.kids[i]));
      if (!is_number(args[i])) return needs_number(n, args[i]);
      if (args[i].is_real()) {
        if (fn->integers_only)
          return fail(n, fmt::format("{}() needs integers, got {}", n.op, args[i].text()));
        real = true;
      }
    }
    const std::string& f = n.op;
    if (real) {
      const double x = args[0].as_real(), y = args[1].as_real();
      if (f == "min") return Value(std::min(x, y));
      if (f == "max") return Value(std::max(x, y));
      return Value(std::abs(x));
    }
    const std::int64_t a = args[0].as_int(), b = args[1].as_int();
    if (f == "min") return Value(std::min(a, b));
    if (f == "max") return Value(std::max(a, b));
    if (f == "abs") {
      if (a == std::numeric_limits<std::int64_t>::min()) return overflow(n);
      return Value(a < 0 ? -a : a);
    }
    if (f == "is_pow2") return truth(a > 0 && (a & (a - 1)) == 0);
    if (f == "ceil_div" || f == "round_up") {
      if (b <= 0) return fail(n, fmt::format("{}() needs a positive divisor, got {}", f, b));
      // C division truncates toward zero, which already rounds a negative a up; a positive a
      // with a remainder needs one more.
      std::int64_t q = a / b;
      if (a % b != 0 && a > 0) ++q;
      if (f == "ceil_div") return Value(q);
      std::int64_t r = 0;
      if (__builtin_mul_overflow(q, b, &r)) return overflow(n);
      return Value(r);
    }
    return Error::internal("unknown function " + f);
  }
};

Expr::Lookup lookup_in(const Expr::Vars& vars) {
  return [&vars](std::string_view name) -> std::optional<Value> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

}  // namespace

Result<Expr> Expr::parse(std::string_view text, std::span<const std::string> compound_names) {
  Parser p(text, compound_names);
  ATTUNE_ASSIGN(NodePtr root, p.parse_all());
  Expr e;
  e.text_ = std::string(text);
  e.names_ = std::move(p.names);
  e.root_ = std::shared_ptr<const Node>(std::move(root));
  return e;
}

Result<Value> Expr::eval(const Lookup& lookup) const {
  if (!root_) return Error::internal("evaluating an expression that was never parsed");
  return Evaluator(text_, lookup).eval(*root_);
}

Result<Value> Expr::eval(const Vars& vars) const {
  return eval(lookup_in(vars));
}

Result<std::int64_t> Expr::eval_int(const Lookup& lookup) const {
  ATTUNE_ASSIGN(Value v, eval(lookup));
  if (!v.is_int())
    return Error::invalid_argument(fmt::format("'{}' is {} '{}', not an integer", text_,
                                               v.is_real() ? "the real" : "the string", v.text()));
  return v.as_int();
}

Result<std::int64_t> Expr::eval_int(const Vars& vars) const {
  return eval_int(lookup_in(vars));
}

Result<bool> Expr::holds(const Lookup& lookup) const {
  ATTUNE_ASSIGN(Value v, eval(lookup));
  if (v.is_word())
    return Error::invalid_argument(
        fmt::format("'{}' is the string '{}', not a condition", text_, v.text()));
  return v.is_real() ? v.as_real() != 0 : v.as_int() != 0;
}

Result<Expr::Type> Expr::type(const TypeOf& type_of) const {
  if (!root_) return Error::internal("typing an expression that was never parsed");
  return TypeChecker(text_, type_of).type(*root_);
}

bool Expr::reads(std::string_view name) const {
  return std::find(names_.begin(), names_.end(), name) != names_.end();
}

std::optional<Value> Expr::constant() const {
  if (!names_.empty() || !root_) return std::nullopt;
  auto r = eval(Vars{});
  if (!r) return std::nullopt;
  return *r;
}

std::string_view to_string(Expr::Type t) {
  switch (t) {
    case Expr::Type::kBool:
      return "condition";
    case Expr::Type::kInt:
      return "integer";
    case Expr::Type::kReal:
      return "real";
    case Expr::Type::kString:
      return "string";
  }
  return "?";
}

Expr::Type knob_type(const Knob& knob) {
  bool all_int = true;
  for (const auto& v : knob.options) {
    if (v.is_word()) return Expr::Type::kString;
    all_int = all_int && v.is_int();
  }
  return all_int ? Expr::Type::kInt : Expr::Type::kReal;
}

Value knob_value(const Knob& knob, const Value& option) {
  return knob_type(knob) == Expr::Type::kString ? Value(option.text()) : option;
}

namespace {

const Knob* find_knob(const std::vector<Knob>& knobs, std::string_view name) {
  auto it = std::find_if(knobs.begin(), knobs.end(), [&](const Knob& k) { return k.name == name; });
  return it == knobs.end() ? nullptr : &*it;
}

Expr::TypeOf types_of(const std::vector<Knob>& knobs, const Expr::Vars& constants) {
  return [&](std::string_view name) -> std::optional<Expr::Type> {
    if (auto it = constants.find(name); it != constants.end()) return type_of(it->second);
    if (const Knob* k = find_knob(knobs, name)) return knob_type(*k);
    return std::nullopt;
  };
}

}  // namespace

Result<Constraint> make_constraint(const Expr& expr, const std::vector<Knob>& knobs,
                                   const Expr::Vars& constants) {
  std::vector<std::string> reads;
  // Word knobs read as their options' texts; the set is looked up per evaluation.
  auto as_text = std::make_shared<std::set<std::string, std::less<>>>();
  for (const auto& name : expr.names()) {
    if (constants.count(name)) continue;
    const Knob* k = find_knob(knobs, name);
    if (!k)
      return Error::invalid_argument(
          fmt::format("'{}' is not a knob (quote a word: '{}')", name, name));
    reads.push_back(name);
    if (knob_type(*k) == Expr::Type::kString) as_text->insert(name);
  }
  if (reads.empty()) return Error::invalid_argument("reads no knob");
  ATTUNE_TRY(expr.type(types_of(knobs, constants)));
  auto fixed = std::make_shared<const Expr::Vars>(constants);
  std::shared_ptr<const std::set<std::string, std::less<>>> text_knobs = std::move(as_text);
  return Constraint{expr.text(), std::move(reads), [expr, fixed, text_knobs](const Assignment& a) {
                      auto ok = expr.holds([&](std::string_view name) -> std::optional<Value> {
                        if (auto it = fixed->find(name); it != fixed->end()) return it->second;
                        if (!a.decided(name)) return std::nullopt;
                        if (text_knobs->count(name)) return Value(a[name].text());
                        return a[name];
                      });
                      // A constraint that cannot be evaluated for a config excludes it.
                      return ok.ok() && *ok;
                    }};
}

Result<Constraint> parse_constraint(std::string_view text, const std::vector<Knob>& knobs) {
  auto fail = [&](const Error& e) {
    return Error::invalid_argument(fmt::format("constraint '{}': {}", text, e.message()));
  };
  std::vector<std::string> compound;
  for (const auto& k : knobs)
    if (k.name.find_first_of(".-") != std::string::npos) compound.push_back(k.name);
  auto expr = Expr::parse(text, compound);
  if (!expr) return fail(expr.error());
  auto constraint = make_constraint(*expr, knobs);
  if (!constraint) return fail(constraint.error());
  const Expr::Vars no_constants;
  if (*expr->type(types_of(knobs, no_constants)) != Expr::Type::kBool)
    return fail(Error::invalid_argument("is not a condition (it has no comparison)"));
  return constraint;
}

}  // namespace attune
