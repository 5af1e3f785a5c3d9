#include "backends/command/constraint.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <memory>
#include <set>
#include <variant>

namespace attune::command {

namespace {

enum class Type { kNumber, kWord, kBool };

using Scalar = std::variant<double, std::string, bool>;

struct Node {
  enum class Op {
    kNumber,
    kWord,
    kKnob,
    kNot,
    kNeg,
    kAnd,
    kOr,
    kEq,
    kNe,
    kLt,
    kLe,
    kGt,
    kGe,
    kAdd,
    kSub,
    kMul,
    kDiv,
    kMod
  };
  Op op;
  Type type;
  double number = 0;
  std::string text;  // word literal or knob name
  std::unique_ptr<Node> a, b;
};

std::string canonical(const Scalar& s) {
  if (auto* d = std::get_if<double>(&s)) {
    // 4.0 reads as "4", like the integer option it came from.
    if (*d == std::floor(*d) && std::abs(*d) < 9e15)
      return Value(static_cast<std::int64_t>(*d)).text();
    return Value(*d).text();
  }
  if (auto* w = std::get_if<std::string>(&s)) return *w;
  return std::get<bool>(s) ? "true" : "false";
}

Scalar eval(const Node& n, const Assignment& a) {
  using Op = Node::Op;
  switch (n.op) {
    case Op::kNumber:
      return n.number;
    case Op::kWord:
      return n.text;
    case Op::kKnob: {
      const Value& v = a[n.text];
      if (n.type == Type::kNumber) return v.as_real();
      return v.text();
    }
    case Op::kNot:
      return !std::get<bool>(eval(*n.a, a));
    case Op::kNeg:
      return -std::get<double>(eval(*n.a, a));
    case Op::kAnd:
      return std::get<bool>(eval(*n.a, a)) && std::get<bool>(eval(*n.b, a));
    case Op::kOr:
      return std::get<bool>(eval(*n.a, a)) || std::get<bool>(eval(*n.b, a));
    case Op::kEq:
    case Op::kNe: {
      Scalar x = eval(*n.a, a), y = eval(*n.b, a);
      bool eq = (x.index() == 0 && y.index() == 0) ? std::get<double>(x) == std::get<double>(y)
                                                   : canonical(x) == canonical(y);
      return n.op == Op::kEq ? eq : !eq;
    }
    default:
      break;
  }
  double x = std::get<double>(eval(*n.a, a)), y = std::get<double>(eval(*n.b, a));
  switch (n.op) {
    case Op::kLt:
      return x < y;
    case Op::kLe:
      return x <= y;
    case Op::kGt:
      return x > y;
    case Op::kGe:
      return x >= y;
    case Op::kAdd:
      return x + y;
    case Op::kSub:
      return x - y;
    case Op::kMul:
      return x * y;
    case Op::kDiv:
      return y == 0 ? 0.0 : x / y;
    case Op::kMod:
      return y == 0 ? 0.0 : std::fmod(x, y);
    default:
      return false;
  }
}

class Parser {
 public:
  Parser(const std::string& text, const std::vector<Knob>& knobs) : s_(text), knobs_(knobs) {}

  Result<std::unique_ptr<Node>> parse() {
    auto n = parse_or();
    if (!n) return n;
    skip();
    if (pos_ != s_.size()) return fail("unexpected '" + s_.substr(pos_) + "'");
    if ((*n)->type != Type::kBool) return fail("is not a condition (it has no comparison)");
    return n;
  }
  const std::set<std::string>& reads() const { return reads_; }

 private:
  using R = Result<std::unique_ptr<Node>>;

  Error fail(const std::string& what) const {
    return Error::invalid_argument("constraint '" + s_ + "': " + what);
  }
  void skip() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool word_char(char c) const {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
  }
  // Consumes a symbol or a keyword (keywords must end at a word boundary).
  bool eat(const std::string& tok) {
    skip();
    if (s_.compare(pos_, tok.size(), tok) != 0) return false;
    if (std::isalpha(static_cast<unsigned char>(tok[0])) && pos_ + tok.size() < s_.size() &&
        word_char(s_[pos_ + tok.size()]))
      return false;
    // "<" must not eat the first half of "<=", "!" not the first half of "!=".
    if ((tok == "<" || tok == ">" || tok == "!") && pos_ + 1 < s_.size() && s_[pos_ + 1] == '=')
      return false;
    pos_ += tok.size();
    return true;
  }
  static std::unique_ptr<Node> make(Node::Op op, Type t, std::unique_ptr<Node> a = nullptr,
                                    std::unique_ptr<Node> b = nullptr) {
    auto n = std::make_unique<Node>();
    n->op = op;
    n->type = t;
    n->a = std::move(a);
    n->b = std::move(b);
    return n;
  }

  R parse_or() {
    R l = parse_and();
    if (!l) return l;
    while (eat("||") || eat("or")) {
      R r = parse_and();
      if (!r) return r;
      if ((*l)->type != Type::kBool || (*r)->type != Type::kBool)
        return fail("'or' joins conditions, not values");
      l = make(Node::Op::kOr, Type::kBool, std::move(*l), std::move(*r));
    }
    return l;
  }
  R parse_and() {
    R l = parse_not();
    if (!l) return l;
    while (eat("&&") || eat("and")) {
      R r = parse_not();
      if (!r) return r;
      if ((*l)->type != Type::kBool || (*r)->type != Type::kBool)
        return fail("'and' joins conditions, not values");
      l = make(Node::Op::kAnd, Type::kBool, std::move(*l), std::move(*r));
    }
    return l;
  }
  R parse_not() {
    if (eat("!") || eat("not")) {
      R r = parse_not();
      if (!r) return r;
      if ((*r)->type != Type::kBool) return fail("'not' applies to a condition");
      return make(Node::Op::kNot, Type::kBool, std::move(*r));
    }
    return parse_compare();
  }
  R parse_compare() {
    R l = parse_sum();
    if (!l) return l;
    static const std::vector<std::pair<std::string, Node::Op>> ops = {
        {"==", Node::Op::kEq}, {"!=", Node::Op::kNe}, {"<=", Node::Op::kLe},
        {">=", Node::Op::kGe}, {"<", Node::Op::kLt},  {">", Node::Op::kGt}};
    for (const auto& [tok, op] : ops) {
      if (!eat(tok)) continue;
      R r = parse_sum();
      if (!r) return r;
      Type lt = (*l)->type, rt = (*r)->type;
      if (lt == Type::kBool || rt == Type::kBool) return fail("'" + tok + "' compares values");
      bool ordering = op != Node::Op::kEq && op != Node::Op::kNe;
      if (ordering && (lt != Type::kNumber || rt != Type::kNumber))
        return fail("'" + tok + "' needs numbers on both sides");
      return make(op, Type::kBool, std::move(*l), std::move(*r));
    }
    return l;
  }
  R parse_sum() {
    R l = parse_product();
    if (!l) return l;
    for (;;) {
      Node::Op op;
      if (eat("+"))
        op = Node::Op::kAdd;
      else if (eat("-"))
        op = Node::Op::kSub;
      else
        return l;
      R r = parse_product();
      if (!r) return r;
      if ((*l)->type != Type::kNumber || (*r)->type != Type::kNumber)
        return fail("arithmetic needs numbers");
      l = make(op, Type::kNumber, std::move(*l), std::move(*r));
    }
  }
  R parse_product() {
    R l = parse_unary();
    if (!l) return l;
    for (;;) {
      Node::Op op;
      if (eat("*"))
        op = Node::Op::kMul;
      else if (eat("/"))
        op = Node::Op::kDiv;
      else if (eat("%"))
        op = Node::Op::kMod;
      else
        return l;
      R r = parse_unary();
      if (!r) return r;
      if ((*l)->type != Type::kNumber || (*r)->type != Type::kNumber)
        return fail("arithmetic needs numbers");
      l = make(op, Type::kNumber, std::move(*l), std::move(*r));
    }
  }
  R parse_unary() {
    if (eat("-")) {
      R r = parse_unary();
      if (!r) return r;
      if ((*r)->type != Type::kNumber) return fail("'-' needs a number");
      return make(Node::Op::kNeg, Type::kNumber, std::move(*r));
    }
    return parse_atom();
  }
  R parse_atom() {
    skip();
    if (pos_ >= s_.size()) return fail("ends where a value was expected");
    char c = s_[pos_];
    if (c == '(') {
      ++pos_;
      R inner = parse_or();
      if (!inner) return inner;
      if (!eat(")")) return fail("a '(' is not closed");
      return inner;
    }
    if (c == '\'' || c == '"') {
      std::size_t end = s_.find(c, pos_ + 1);
      if (end == std::string::npos) return fail("a quote is not closed");
      auto n = make(Node::Op::kWord, Type::kWord);
      n->text = s_.substr(pos_ + 1, end - pos_ - 1);
      pos_ = end + 1;
      return n;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') {
      std::size_t used = 0;
      double d = 0;
      try {
        d = std::stod(s_.substr(pos_), &used);
      } catch (...) {
        return fail("bad number at '" + s_.substr(pos_) + "'");
      }
      pos_ += used;
      auto n = make(Node::Op::kNumber, Type::kNumber);
      n->number = d;
      return n;
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      std::size_t end = pos_;
      // Knob names may hold '.' and '-'; '-' is only part of a name when no space surrounds it,
      // so "a-b" is the knob a-b while "a - b" is a subtraction.
      while (end < s_.size() && word_char(s_[end])) ++end;
      std::string name = s_.substr(pos_, end - pos_);
      auto it =
          std::find_if(knobs_.begin(), knobs_.end(), [&](const Knob& k) { return k.name == name; });
      if (it == knobs_.end())
        return fail("'" + name + "' is not a knob (quote a word: '" + name + "')");
      pos_ = end;
      bool numeric = std::all_of(it->options.begin(), it->options.end(),
                                 [](const Value& v) { return v.is_int() || v.is_real(); });
      auto n = make(Node::Op::kKnob, numeric ? Type::kNumber : Type::kWord);
      n->text = name;
      reads_.insert(name);
      return n;
    }
    return fail("unexpected '" + s_.substr(pos_) + "'");
  }

  std::string s_;
  const std::vector<Knob>& knobs_;
  std::size_t pos_ = 0;
  std::set<std::string> reads_;
};

}  // namespace

Result<Constraint> parse_constraint(const std::string& text, const std::vector<Knob>& knobs) {
  Parser p(text, knobs);
  auto tree = p.parse();
  if (!tree) return tree.error();
  if (p.reads().empty()) return Error::invalid_argument("constraint '" + text + "' reads no knob");
  std::shared_ptr<const Node> root(std::move(*tree));
  Constraint c;
  c.text = text;
  c.knobs.assign(p.reads().begin(), p.reads().end());
  c.allows = [root](const Assignment& a) { return std::get<bool>(eval(*root, a)); };
  return c;
}

}  // namespace attune::command
