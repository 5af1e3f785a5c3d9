#include "kernels/user/expr.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <limits>

namespace attune::user {

struct Expr::Node {
  enum class Kind { kNumber, kName, kUnary, kBinary, kTernary, kCall };
  Kind kind = Kind::kNumber;
  std::string op;    // operator text, or the function name for kCall, or the name for kName
  std::int64_t number = 0;
  std::size_t column = 0;  // 1-based column of the operator or the first character
  std::vector<std::unique_ptr<Node>> kids;
};

namespace {

using Node = Expr::Node;
using NodePtr = std::unique_ptr<Node>;

struct Function {
  std::string_view name;
  std::size_t arity;
};
constexpr Function kFunctions[] = {{"min", 2},      {"max", 2},     {"ceil_div", 2},
                                   {"round_up", 2}, {"is_pow2", 1}, {"abs", 1}};

const Function* find_function(std::string_view name) {
  for (const auto& f : kFunctions)
    if (f.name == name) return &f;
  return nullptr;
}

std::string quote(std::string_view s) { return "'" + std::string(s) + "'"; }

bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Recursive descent over the text; tokens are read on demand.
class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  Result<NodePtr> parse_all() {
    skip_space();
    if (pos_ >= text_.size()) return Error::invalid_argument("empty expression");
    ATTUNE_ASSIGN(NodePtr root, parse_expr());
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == '=')
      return fail("'=' is not an operator (compare with '==')");
    if (pos_ < text_.size()) return fail("unexpected " + describe_here());
    return root;
  }

  std::vector<std::string> names;

 private:
  std::string_view text_;
  std::size_t pos_ = 0;
  int depth_ = 0;

  Error fail(const std::string& what) const {
    return Error::invalid_argument(what + " at column " + std::to_string(pos_ + 1) + " in " +
                                   quote(text_));
  }
  std::string describe_here() const {
    if (pos_ >= text_.size()) return "end of expression";
    std::size_t end = pos_ + 1;
    if (ident_char(text_[pos_]))
      while (end < text_.size() && ident_char(text_[end])) ++end;
    return quote(text_.substr(pos_, end - pos_));
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
    }
    pos_ += op.size();
    return true;
  }
  Status expect(std::string_view op) {
    if (accept(op)) return Status::success();
    return fail("expected " + quote(op) + ", found " + describe_here());
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
  static NodePtr binary(std::string op, std::size_t column, NodePtr a, NodePtr b) {
    std::vector<NodePtr> kids;
    kids.push_back(std::move(a));
    kids.push_back(std::move(b));
    return make(Node::Kind::kBinary, std::move(op), column, std::move(kids));
  }

  Result<NodePtr> parse_expr() {
    // Deep nesting is a user's typo or an attack on the stack; either way, refuse it.
    if (++depth_ > 200) return fail("expression nested too deeply");
    ATTUNE_ASSIGN(NodePtr cond, parse_binary(0));
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

  // Binary operators by precedence level, loosest first.
  static constexpr std::string_view kLevels[][4] = {
      {"||"}, {"&&"}, {"==", "!="}, {"<=", ">=", "<", ">"}, {"+", "-"}, {"*", "/", "%"}};
  static constexpr std::size_t kNumLevels = sizeof(kLevels) / sizeof(kLevels[0]);

  Result<NodePtr> parse_binary(std::size_t level) {
    if (level == kNumLevels) return parse_unary();
    ATTUNE_ASSIGN(NodePtr lhs, parse_binary(level + 1));
    for (;;) {
      skip_space();
      std::size_t column = pos_ + 1;
      std::string_view matched;
      for (std::string_view op : kLevels[level])
        if (!op.empty() && accept(op)) {
          matched = op;
          break;
        }
      if (matched.empty()) return lhs;
      ATTUNE_ASSIGN(NodePtr rhs, parse_binary(level + 1));
      lhs = binary(std::string(matched), column, std::move(lhs), std::move(rhs));
    }
  }

  Result<NodePtr> parse_unary() {
    skip_space();
    std::size_t column = pos_ + 1;
    for (std::string_view op : {"-", "+", "!"}) {
      if (accept(op)) {
        if (++depth_ > 200) return fail("expression nested too deeply");
        ATTUNE_ASSIGN(NodePtr operand, parse_unary());
        --depth_;
        std::vector<NodePtr> kids;
        kids.push_back(std::move(operand));
        return make(Node::Kind::kUnary, std::string(op), column, std::move(kids));
      }
    }
    return parse_primary();
  }

  Result<NodePtr> parse_primary() {
    skip_space();
    std::size_t column = pos_ + 1;
    if (pos_ >= text_.size()) return fail("expected a number, a name or '(', found end of expression");
    char c = text_[pos_];
    if (std::isdigit(static_cast<unsigned char>(c))) return parse_number();
    if (ident_start(c)) {
      std::size_t start = pos_;
      while (pos_ < text_.size() && ident_char(text_[pos_])) ++pos_;
      std::string name(text_.substr(start, pos_ - start));
      skip_space();
      if (pos_ < text_.size() && text_[pos_] == '(') {
        const Function* f = find_function(name);
        if (!f) {
          pos_ = start;
          std::string known;
          for (const auto& k : kFunctions) known += (known.empty() ? "" : ", ") + std::string(k.name);
          return fail("unknown function " + quote(name) + " (known: " + known + ")");
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
          return fail(name + "() takes " + std::to_string(f->arity) + " argument" +
                      (f->arity == 1 ? "" : "s") + ", given " + std::to_string(args.size()));
        }
        return make(Node::Kind::kCall, std::move(name), column, std::move(args));
      }
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
      return make(Node::Kind::kName, std::move(name), column);
    }
    if (accept("(")) {
      ATTUNE_ASSIGN(NodePtr inner, parse_expr());
      ATTUNE_TRY(expect(")"));
      return inner;
    }
    return fail("expected a number, a name or '(', found " + describe_here());
  }

  Result<NodePtr> parse_number() {
    std::size_t start = pos_;
    int base = 10;
    if (text_.substr(pos_, 2) == "0x" || text_.substr(pos_, 2) == "0X") {
      base = 16;
      pos_ += 2;
    }
    std::size_t digits = pos_;
    while (pos_ < text_.size() && std::isxdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    std::size_t end = pos_;
    // "12abc" or "0x" is a typo, not a number followed by a name.
    auto in_number = [&](std::size_t i) {
      return i < text_.size() && (ident_char(text_[i]) || text_[i] == '.');
    };
    if (end == digits || in_number(pos_)) {
      pos_ = start;
      while (in_number(pos_)) ++pos_;
      std::string bad(text_.substr(start, pos_ - start));
      pos_ = start;
      if (bad.find('.') != std::string::npos)
        return fail("malformed number " + quote(bad) + " (expressions are integer arithmetic)");
      return fail("malformed number " + quote(bad));
    }
    std::int64_t v = 0;
    auto r = std::from_chars(text_.data() + digits, text_.data() + end, v, base);
    if (r.ec == std::errc::result_out_of_range) {
      pos_ = start;
      return fail("number " + quote(text_.substr(start, end - start)) + " does not fit in 64 bits");
    }
    if (r.ec != std::errc() || r.ptr != text_.data() + end) {
      pos_ = start;
      return fail("malformed number " + quote(text_.substr(start, end - start)));
    }
    auto n = make(Node::Kind::kNumber, "", start + 1);
    n->number = v;
    return n;
  }
};

class Evaluator {
 public:
  Evaluator(const std::string& text, const Lookup& lookup) : text_(text), lookup_(lookup) {}

  Result<std::int64_t> eval(const Node& n) const {
    switch (n.kind) {
      case Node::Kind::kNumber:
        return n.number;
      case Node::Kind::kName: {
        auto v = lookup_(n.op);
        if (!v) return fail(n, "unknown name " + quote(n.op));
        return *v;
      }
      case Node::Kind::kUnary: {
        ATTUNE_ASSIGN(std::int64_t a, eval(*n.kids[0]));
        if (n.op == "!") return std::int64_t{a == 0};
        if (n.op == "+") return a;
        if (a == std::numeric_limits<std::int64_t>::min()) return overflow(n);
        return -a;
      }
      case Node::Kind::kTernary: {
        ATTUNE_ASSIGN(std::int64_t c, eval(*n.kids[0]));
        return eval(*n.kids[c != 0 ? 1 : 2]);
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
  const Lookup& lookup_;

  Error fail(const Node& n, const std::string& what) const {
    return Error::invalid_argument(what + " at column " + std::to_string(n.column) + " in " +
                                   quote(text_));
  }
  Error overflow(const Node& n) const { return fail(n, "integer overflow in " + quote(n.op)); }

  Result<std::int64_t> binary(const Node& n) const {
    const std::string& op = n.op;
    ATTUNE_ASSIGN(std::int64_t a, eval(*n.kids[0]));
    if (op == "&&") {
      if (a == 0) return std::int64_t{0};
      ATTUNE_ASSIGN(std::int64_t b, eval(*n.kids[1]));
      return std::int64_t{b != 0};
    }
    if (op == "||") {
      if (a != 0) return std::int64_t{1};
      ATTUNE_ASSIGN(std::int64_t b, eval(*n.kids[1]));
      return std::int64_t{b != 0};
    }
    ATTUNE_ASSIGN(std::int64_t b, eval(*n.kids[1]));
    std::int64_t r = 0;
    if (op == "+") {
      if (__builtin_add_overflow(a, b, &r)) return overflow(n);
      return r;
    }
    if (op == "-") {
      if (__builtin_sub_overflow(a, b, &r)) return overflow(n);
      return r;
    }
    if (op == "*") {
      if (__builtin_mul_overflow(a, b, &r)) return overflow(n);
      return r;
    }
    if (op == "/" || op == "%") {
      if (b == 0)
        return fail(n, std::string(op == "/" ? "division" : "modulo") + " by zero");
      if (a == std::numeric_limits<std::int64_t>::min() && b == -1) return overflow(n);
      return op == "/" ? a / b : a % b;
    }
    if (op == "==") return std::int64_t{a == b};
    if (op == "!=") return std::int64_t{a != b};
    if (op == "<") return std::int64_t{a < b};
    if (op == "<=") return std::int64_t{a <= b};
    if (op == ">") return std::int64_t{a > b};
    if (op == ">=") return std::int64_t{a >= b};
    return Error::internal("unknown operator " + op);
  }

  Result<std::int64_t> call(const Node& n) const {
    std::int64_t args[2] = {0, 0};
    for (std::size_t i = 0; i < n.kids.size(); ++i) {
      ATTUNE_ASSIGN(args[i], eval(*n.kids[i]));
    }
    const std::int64_t a = args[0], b = args[1];
    const std::string& f = n.op;
    if (f == "min") return std::min(a, b);
    if (f == "max") return std::max(a, b);
    if (f == "abs") {
      if (a == std::numeric_limits<std::int64_t>::min()) return overflow(n);
      return a < 0 ? -a : a;
    }
    if (f == "is_pow2") return std::int64_t{a > 0 && (a & (a - 1)) == 0};
    if (f == "ceil_div" || f == "round_up") {
      if (b <= 0)
        return fail(n, f + "() needs a positive divisor, got " + std::to_string(b));
      // C division truncates toward zero, which already rounds a negative a up; a positive a
      // with a remainder needs one more.
      std::int64_t q = a / b;
      if (a % b != 0 && a > 0) ++q;
      if (f == "ceil_div") return q;
      std::int64_t r = 0;
      if (__builtin_mul_overflow(q, b, &r)) return overflow(n);
      return r;
    }
    return Error::internal("unknown function " + f);
  }
};

}  // namespace

Result<Expr> Expr::parse(std::string_view text) {
  Parser p(text);
  ATTUNE_ASSIGN(NodePtr root, p.parse_all());
  Expr e;
  e.text_ = std::string(text);
  e.names_ = std::move(p.names);
  e.root_ = std::shared_ptr<const Node>(std::move(root));
  return e;
}

Result<std::int64_t> Expr::eval(const Lookup& lookup) const {
  if (!root_) return Error::internal("evaluating an expression that was never parsed");
  return Evaluator(text_, lookup).eval(*root_);
}

Result<std::int64_t> Expr::eval(const Vars& vars) const {
  return eval(Lookup([&vars](std::string_view name) -> std::optional<std::int64_t> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  }));
}

bool Expr::reads(std::string_view name) const {
  return std::find(names_.begin(), names_.end(), name) != names_.end();
}

std::optional<std::int64_t> Expr::constant() const {
  if (!names_.empty() || !root_) return std::nullopt;
  auto r = eval(Vars{});
  if (!r) return std::nullopt;
  return *r;
}

}  // namespace attune::user
