#include "kernels/user/spec.h"
#include "core/files.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "core/hash.h"

namespace attune::user {

using Vars = Expr::Vars;

// ---- element types --------------------------------------------------------------------------

namespace {

struct TypeInfo {
  ElementType type;
  std::string_view name;
  std::size_t size;
  bool floating;
  std::string_view gate;
};
constexpr TypeInfo kTypes[] = {
    {ElementType::kFloat32, "float32", 4, true, "fp32"},
    {ElementType::kFloat64, "float64", 8, true, "fp64"},
    {ElementType::kFloat16, "float16", 2, true, "fp16"},
    {ElementType::kBFloat16, "bfloat16", 2, true, "bf16"},
    {ElementType::kInt32, "int32", 4, false, "int32"},
    {ElementType::kInt64, "int64", 8, false, "int64"},
    {ElementType::kUInt32, "uint32", 4, false, "uint32"},
    {ElementType::kInt8, "int8", 1, false, "int8"},
    {ElementType::kUInt8, "uint8", 1, false, "uint8"},
};

const TypeInfo& info(ElementType t) {
  for (const auto& i : kTypes)
    if (i.type == t) return i;
  return kTypes[0];
}

}  // namespace

std::string_view to_string(ElementType t) {
  return info(t).name;
}
std::size_t size_of(ElementType t) {
  return info(t).size;
}
bool is_floating(ElementType t) {
  return info(t).floating;
}
std::string_view gate_dtype(ElementType t) {
  return info(t).gate;
}

std::optional<ElementType> element_type_from_string(std::string_view s) {
  for (const auto& i : kTypes)
    if (i.name == s) return i.type;
  return std::nullopt;
}

std::string_view to_string(ArgRole r) {
  switch (r) {
    case ArgRole::kInput:
      return "input";
    case ArgRole::kOutput:
      return "output";
    case ArgRole::kInOut:
      return "inout";
    case ArgRole::kScratch:
      return "scratch";
    case ArgRole::kScalar:
      return "scalar";
  }
  return "?";
}

std::string_view to_string(FillKind k) {
  switch (k) {
    case FillKind::kRandom:
      return "random";
    case FillKind::kConstant:
      return "constant";
    case FillKind::kFile:
      return "file";
  }
  return "?";
}

// ---- helpers --------------------------------------------------------------------------------

namespace {

constexpr std::string_view kReservedAttrs[] = {"kernel", "source", "launch"};

bool is_identifier(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(),
                     [](unsigned char c) { return std::isalnum(c) || c == '_'; });
}

// "ns::name" or "name".
bool is_qualified_identifier(std::string_view s) {
  std::size_t start = 0;
  if (s.substr(0, 2) == "::") start = 2;
  for (;;) {
    std::size_t sep = s.find("::", start);
    if (!is_identifier(s.substr(start, sep == std::string_view::npos ? sep : sep - start)))
      return false;
    if (sep == std::string_view::npos) return true;
    start = sep + 2;
  }
}

std::optional<std::int64_t> parse_int(std::string_view s) {
  bool neg = false;
  std::string_view body = s;
  if (!body.empty() && (body[0] == '-' || body[0] == '+')) {
    neg = body[0] == '-';
    body.remove_prefix(1);
  }
  int base = 10;
  if (body.size() > 2 && body[0] == '0' && (body[1] == 'x' || body[1] == 'X')) {
    base = 16;
    body.remove_prefix(2);
  }
  if (body.empty()) return std::nullopt;
  std::uint64_t u = 0;
  auto r = std::from_chars(body.data(), body.data() + body.size(), u, base);
  if (r.ec != std::errc() || r.ptr != body.data() + body.size()) return std::nullopt;
  if (!neg && u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
    return std::nullopt;
  if (neg && u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) + 1)
    return std::nullopt;
  return neg ? static_cast<std::int64_t>(0 - u) : static_cast<std::int64_t>(u);
}

std::optional<double> parse_real(const std::string& s) {
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  double d = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || !std::isfinite(d)) return std::nullopt;
  return d;
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// " (did you mean 'x'?)" for a near miss among the candidates, else "".
std::string suggestion(std::string_view word, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_d = std::max<std::size_t>(2, word.size() / 3) + 1;
  for (const auto& c : candidates) {
    std::size_t d = edit_distance(word, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best.empty() ? "" : " (did you mean '" + best + "'?)";
}

std::string join(const std::vector<std::string>& v, std::string_view sep = ", ") {
  std::string out;
  for (const auto& s : v) {
    if (!out.empty()) out += sep;
    out += s;
  }
  return out;
}

// Whether the identifier occurs as a whole word in the source text: a cheap check that catches
// a misspelt kernel name at load time instead of at the first NVRTC build.
bool mentions(const std::string& source, std::string_view ident) {
  std::size_t pos = 0;
  while ((pos = source.find(ident, pos)) != std::string::npos) {
    bool left = pos == 0 || !(std::isalnum(static_cast<unsigned char>(source[pos - 1])) ||
                              source[pos - 1] == '_');
    std::size_t end = pos + ident.size();
    bool right = end >= source.size() ||
                 !(std::isalnum(static_cast<unsigned char>(source[end])) || source[end] == '_');
    if (left && right) return true;
    pos = end;
  }
  return false;
}

// "ns::kernel<float, 4>" -> "kernel".
std::string base_name(std::string_view name) {
  std::string_view s = name.substr(0, name.find('<'));
  auto sep = s.rfind("::");
  if (sep != std::string_view::npos) s.remove_prefix(sep + 2);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return std::string(s);
}

// Why `v` cannot be an element of type t, or nullopt when it can (reals round to the type).
std::optional<std::string> unrepresentable(ElementType t, double v) {
  if (!std::isfinite(v)) return "'" + std::to_string(v) + "' is not finite";
  if (is_floating(t)) {
    const double max = t == ElementType::kFloat16   ? 65504.0
                       : t == ElementType::kFloat64 ? std::numeric_limits<double>::max()
                                                    : std::numeric_limits<float>::max();
    if (std::abs(v) > max) return Value(v).text() + " does not fit in " + std::string(to_string(t));
    return std::nullopt;
  }
  if (v != std::floor(v))
    return Value(v).text() + " is not an integer, as " + std::string(to_string(t)) + " needs";
  double lo = 0, hi = 0;
  switch (t) {
    case ElementType::kInt32:
      lo = INT32_MIN, hi = INT32_MAX;
      break;
    case ElementType::kInt64:
      lo = -9.2e18, hi = 9.2e18;
      break;
    case ElementType::kUInt32:
      lo = 0, hi = UINT32_MAX;
      break;
    case ElementType::kInt8:
      lo = INT8_MIN, hi = INT8_MAX;
      break;
    default:  // kUInt8
      lo = 0, hi = UINT8_MAX;
      break;
  }
  if (v < lo || v > hi) return Value(v).text() + " does not fit in " + std::string(to_string(t));
  return std::nullopt;
}

// ---- NumPy .npy files ------------------------------------------------------------------------

// The .npy dtype descr of each element type, as numpy.save writes it on a little-endian host. A
// .npy has no bfloat16: its raw bits are stored as uint16 (x.view(np.uint16)).
std::string_view npy_descr(ElementType t) {
  switch (t) {
    case ElementType::kFloat32:
      return "<f4";
    case ElementType::kFloat64:
      return "<f8";
    case ElementType::kFloat16:
      return "<f2";
    case ElementType::kBFloat16:
      return "<u2";
    case ElementType::kInt32:
      return "<i4";
    case ElementType::kInt64:
      return "<i8";
    case ElementType::kUInt32:
      return "<u4";
    case ElementType::kInt8:
      return "|i1";
    case ElementType::kUInt8:
      return "|u1";
  }
  return "?";
}

struct NpyHeader {
  std::string descr;
  std::vector<std::int64_t> shape;
  std::int64_t elements = 1;
  std::int64_t data_offset = 0;
};

// The value of 'key' in the header's Python dict literal, as text up to the entry's end: "'<f4'",
// "False", "(17, 17)".
std::optional<std::string> npy_field(const std::string& header, std::string_view key) {
  for (char q : {'\'', '"'}) {
    std::string quoted = std::string(1, q) + std::string(key) + std::string(1, q);
    std::size_t pos = header.find(quoted);
    if (pos == std::string::npos) continue;
    pos = header.find(':', pos + quoted.size());
    if (pos == std::string::npos) return std::nullopt;
    ++pos;
    while (pos < header.size() && header[pos] == ' ') ++pos;
    std::size_t end = pos;
    if (end < header.size() && header[end] == '(') {
      end = header.find(')', end);
      if (end == std::string::npos) return std::nullopt;
      ++end;
    } else if (end < header.size() && (header[end] == '\'' || header[end] == '"')) {
      end = header.find(header[end], end + 1);
      if (end == std::string::npos) return std::nullopt;
      ++end;
    } else {
      while (end < header.size() && header[end] != ',' && header[end] != '}') ++end;
    }
    std::string v = header.substr(pos, end - pos);
    while (!v.empty() && v.back() == ' ') v.pop_back();
    return v;
  }
  return std::nullopt;
}

// Reads and checks a .npy file's header (format versions 1 to 3). Errors say what is wrong with
// the file, without its name (the caller adds where it was named).
Result<NpyHeader> read_npy_header(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error::io("cannot read '" + path.string() + "'");
  char magic[8] = {};
  in.read(magic, 8);
  if (in.gcount() != 8 || std::memcmp(magic, "\x93NUMPY", 6) != 0)
    return Error::invalid_argument("'" + path.string() +
                                   "' is not a NumPy .npy file (no \\x93NUMPY magic); write it "
                                   "with numpy.save");
  const int major = static_cast<unsigned char>(magic[6]);
  if (major < 1 || major > 3)
    return Error::invalid_argument("'" + path.string() + "' is .npy format version " +
                                   std::to_string(major) + "; versions 1 to 3 are read");
  std::uint32_t header_len = 0;
  unsigned char len[4] = {};
  const int len_bytes = major == 1 ? 2 : 4;
  in.read(reinterpret_cast<char*>(len), len_bytes);
  if (in.gcount() != len_bytes)
    return Error::invalid_argument("'" + path.string() + "' is cut short");
  for (int i = len_bytes - 1; i >= 0; --i) header_len = (header_len << 8) | len[i];
  if (header_len > (1u << 20))
    return Error::invalid_argument("'" + path.string() + "' has a header of " +
                                   std::to_string(header_len) + " bytes; not a .npy numpy wrote");
  std::string header(header_len, '\0');
  in.read(header.data(), header_len);
  if (in.gcount() != static_cast<std::streamsize>(header_len))
    return Error::invalid_argument("'" + path.string() + "' is cut short in its header");
  NpyHeader h;
  h.data_offset = 8 + len_bytes + header_len;
  auto descr = npy_field(header, "descr");
  auto fortran = npy_field(header, "fortran_order");
  auto shape = npy_field(header, "shape");
  if (!descr || !fortran || !shape || descr->size() < 2 || shape->front() != '(')
    return Error::invalid_argument("'" + path.string() +
                                   "' has a header without descr, fortran_order and shape: '" +
                                   header.substr(0, header.find('\n')) + "'");
  h.descr = descr->substr(1, descr->size() - 2);
  if (*fortran != "False")
    return Error::invalid_argument(
        "'" + path.string() +
        "' is in Fortran order; save a C-ordered array (numpy.ascontiguousarray)");
  std::string dims = shape->substr(1, shape->size() - 2);
  std::size_t pos = 0;
  while (pos < dims.size()) {
    while (pos < dims.size() && (dims[pos] == ' ' || dims[pos] == ',')) ++pos;
    if (pos >= dims.size()) break;
    std::size_t end = pos;
    while (end < dims.size() && dims[end] != ',') ++end;
    std::string d = dims.substr(pos, end - pos);
    while (!d.empty() && d.back() == ' ') d.pop_back();
    auto v = parse_int(d);
    if (!v || *v < 0)
      return Error::invalid_argument("'" + path.string() + "' has the shape " + *shape +
                                     ", not a tuple of sizes");
    h.shape.push_back(*v);
    if (__builtin_mul_overflow(h.elements, *v, &h.elements))
      return Error::invalid_argument("'" + path.string() + "' has the shape " + *shape +
                                     ", too many elements");
    pos = end;
  }
  return h;
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string out = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + (shape.size() == 1 ? ",)" : ")");
}

// Whether the file's dtype is the argument's type: numpy writes '<' for little-endian, '|' for
// one-byte types, and '=' may stand for this (little-endian) host's order.
bool npy_descr_matches(std::string descr, ElementType t) {
  std::string want(npy_descr(t));
  if (!descr.empty() && (descr[0] == '=' || (descr[0] == '|' && want[0] == '<') ||
                         (descr[0] == '<' && want[0] == '|')))
    descr[0] = want[0];
  return descr == want;
}

// Why the spec's objective metric cannot stand for the time at its problem sizes, or nullopt.
std::optional<std::string> objective_problem(const UserKernelSpec& spec);

// ---- the reader -----------------------------------------------------------------------------

struct Entry {
  YAML::Node key;
  YAML::Node value;
};
// A YAML map's entries by key, in document order of first appearance.
using Fields = std::vector<std::pair<std::string, Entry>>;

const Entry* find(const Fields& f, std::string_view key) {
  for (const auto& [k, e] : f)
    if (k == key) return &e;
  return nullptr;
}

Mark mark_of(const YAML::Node& n) {
  if (!n.IsDefined()) return {};
  YAML::Mark m = n.Mark();
  if (m.is_null()) return {};
  return {m.line + 1, m.column + 1};
}

// What an expression may read: kConstraint also word knobs (compared as strings).
enum class Scope { kConstraint, kKnobsAndSizes, kSizes };

class Reader {
 public:
  Reader(const std::filesystem::path& spec_file, UserKernelSpec& spec)
      : file_(spec_file.string()), spec_(spec) {
    base_dir_ = spec_file.parent_path();
  }

  Error fail(Mark m, const std::string& what) const {
    std::string where = file_;
    if (m.line > 0) where += ":" + std::to_string(m.line) + ":" + std::to_string(m.column);
    return Error::invalid_argument(where + ": " + what);
  }
  Error fail(const YAML::Node& n, const std::string& what) const { return fail(mark_of(n), what); }

  std::filesystem::path resolve(const std::string& p) const {
    std::filesystem::path path(p);
    return path.is_absolute() ? path : base_dir_ / path;
  }

  // The map's fields, refusing keys outside `allowed` and keys given twice.
  Result<Fields> fields(const YAML::Node& n, std::string_view what,
                        const std::vector<std::string>& allowed) const {
    if (!n.IsMap()) return fail(n, std::string(what) + " must be a map with keys " + join(allowed));
    Fields out;
    for (auto it = n.begin(); it != n.end(); ++it) {
      YAML::Node key = it->first;
      if (!key.IsScalar()) return fail(key, std::string(what) + ": keys must be plain words");
      std::string k = key.Scalar();
      if (std::find(allowed.begin(), allowed.end(), k) == allowed.end())
        return fail(key, std::string(what) + ": unknown key '" + k + "'" + suggestion(k, allowed) +
                             "; expected one of: " + join(allowed));
      if (find(out, k)) return fail(key, std::string(what) + ": key '" + k + "' is given twice");
      out.push_back({k, Entry{key, it->second}});
    }
    return out;
  }

  Result<std::string> scalar(const YAML::Node& n, const std::string& what) const {
    if (n.IsNull()) return fail(n, what + " has no value");
    if (!n.IsScalar()) return fail(n, what + " must be a single value, not a list or map");
    return n.Scalar();
  }

  // A required field's entry, or an error at the map that lacks it.
  Result<const Entry*> require(const Fields& f, const YAML::Node& map, std::string_view key,
                               const std::string& what, const std::string& example) const {
    const Entry* e = find(f, key);
    if (!e) return fail(map, what + " is missing '" + std::string(key) + "', e.g. " + example);
    return e;
  }

  // Parses an expression and checks every name it reads against the scope.
  Result<Expr> expr(const YAML::Node& n, const std::string& what, Scope scope,
                    const std::string& why_sizes_only = "") const {
    ATTUNE_ASSIGN(std::string text, scalar(n, what));
    auto e = Expr::parse(text);
    if (!e) return fail(n, what + ": " + e.error().message());
    ATTUNE_TRY(check_names(*e, n, what, scope, why_sizes_only));
    return std::move(e).value();
  }

  Status check_names(const Expr& e, const YAML::Node& n, const std::string& what, Scope scope,
                     const std::string& why_sizes_only) const {
    std::string word_knob;  // why a type error is likely, when a constraint reads a word knob
    for (const auto& name : e.names()) {
      if (is_size(name)) continue;
      if (const KnobSpec* k = knob(name)) {
        if (scope == Scope::kSizes)
          return fail(
              n, what + " reads knob '" + name + "' in '" + e.text() + "', but " + why_sizes_only);
        for (const auto& v : k->values) {
          if (v.is_int()) continue;
          const std::string why = " reads knob '" + name + "' in '" + e.text() +
                                  "', whose value '" + v.text() + "' is not an integer";
          // A constraint may compare a word knob as a string; a launch expression needs numbers.
          if (scope != Scope::kConstraint)
            return fail(n, what + why + "; only integer knobs can appear in expressions");
          if (word_knob.empty()) word_knob = " (it" + why + ")";
          break;
        }
        continue;
      }
      std::vector<std::string> known;
      if (scope != Scope::kSizes)
        for (const auto& k : spec_.knobs) known.push_back(k.name);
      for (const auto& [s, v] : spec_.problem) known.push_back(s);
      std::string hint = suggestion(name, known);
      return fail(n, what + ": unknown name '" + name + "' in '" + e.text() + "'" + hint +
                         "; known names: " + (known.empty() ? "(none)" : join(known)));
    }
    // Every name is known now; what remains is a string or a real where C's integers belong
    // ("n * 0.5"), which no value could fix.
    auto type = e.type([&](std::string_view name) {
      const KnobSpec* k = knob(name);
      bool word = k && std::any_of(k->values.begin(), k->values.end(),
                                   [](const Value& v) { return !v.is_int(); });
      return std::optional<Expr::Type>(word ? Expr::Type::kString : Expr::Type::kInt);
    });
    if (!type) return fail(n, what + ": " + type.error().message() + word_knob);
    if (*type == Expr::Type::kReal || *type == Expr::Type::kString)
      return fail(n, what + ": '" + e.text() + "' is a " + std::string(to_string(*type)) +
                         "; expressions in a spec are integer arithmetic");
    return Status::success();
  }

  static bool is_time_name(std::string_view name) {
    return name == "time_s" || name == "time_ms" || name == "time_us";
  }
  bool is_size(std::string_view name) const {
    return std::any_of(spec_.problem.begin(), spec_.problem.end(),
                       [&](const auto& p) { return p.first == name; });
  }
  const KnobSpec* knob(std::string_view name) const {
    for (const auto& k : spec_.knobs)
      if (k.name == name) return &k;
    return nullptr;
  }

  Result<std::array<Expr, 3>> dims(const YAML::Node& n, const std::string& what, Scope scope,
                                   const std::string& why = "") const {
    std::vector<YAML::Node> items;
    if (n.IsSequence()) {
      for (std::size_t i = 0; i < n.size(); ++i) items.push_back(n[i]);
      if (items.empty() || items.size() > 3)
        return fail(n, what +
                           " must list 1 to 3 dimensions (x, y, z), e.g. "
                           "[\"ceil_div(n, block_size)\", 1, 1]; got " +
                           std::to_string(items.size()));
    } else {
      items.push_back(n);
    }
    static const Expr kOne = Expr::parse("1").value();
    std::array<Expr, 3> out{kOne, kOne, kOne};
    static const char* kAxis[] = {"x", "y", "z"};
    for (std::size_t i = 0; i < items.size(); ++i) {
      ATTUNE_ASSIGN(out[i], expr(items[i], what + "." + kAxis[i], scope, why));
    }
    return out;
  }

  Result<LaunchSpec> launch(const Fields& f, const YAML::Node& map, const std::string& where,
                            Scope scope, const std::string& why = "") const {
    LaunchSpec l;
    const std::string prefix = where.empty() ? "" : where + ".";
    ATTUNE_ASSIGN(const Entry* grid, require(f, map, "grid", where.empty() ? "the spec" : where,
                                             "grid: [\"ceil_div(n, block_size)\", 1, 1]"));
    ATTUNE_ASSIGN(l.grid, dims(grid->value, prefix + "grid", scope, why));
    ATTUNE_ASSIGN(const Entry* block, require(f, map, "block", where.empty() ? "the spec" : where,
                                              "block: [block_size, 1, 1]"));
    ATTUNE_ASSIGN(l.block, dims(block->value, prefix + "block", scope, why));
    if (const Entry* sm = find(f, "shared_memory_bytes")) {
      ATTUNE_ASSIGN(l.shared_memory_bytes,
                    expr(sm->value, prefix + "shared_memory_bytes", scope, why));
    } else {
      l.shared_memory_bytes = Expr::parse("0").value();
    }
    return l;
  }

  Result<std::vector<std::pair<std::string, Expr>>> defines(const YAML::Node& n,
                                                            const std::string& what, Scope scope,
                                                            const std::string& why = "") const {
    if (!n.IsMap())
      return fail(n, what + " must be a map of macro names to expressions, e.g. {TILE: tile}");
    std::vector<std::pair<std::string, Expr>> out;
    for (auto it = n.begin(); it != n.end(); ++it) {
      ATTUNE_ASSIGN(std::string name, scalar(it->first, what + " key"));
      if (!is_identifier(name))
        return fail(it->first, what + ": '" + name + "' is not a C macro name");
      for (const auto& [d, e] : out)
        if (d == name) return fail(it->first, what + ": '" + name + "' is given twice");
      ATTUNE_ASSIGN(Expr e, expr(it->second, what + "." + name, scope, why));
      out.emplace_back(name, std::move(e));
    }
    return out;
  }

  Result<std::vector<std::string>> strings(const YAML::Node& n, const std::string& what) const {
    if (!n.IsSequence()) return fail(n, what + " must be a list of strings, e.g. [-use_fast_math]");
    std::vector<std::string> out;
    for (std::size_t i = 0; i < n.size(); ++i) {
      ATTUNE_ASSIGN(std::string s, scalar(n[i], what + "[" + std::to_string(i) + "]"));
      out.push_back(std::move(s));
    }
    return out;
  }

  Status read(const YAML::Node& root, const std::optional<std::filesystem::path>& kernel_file) {
    if (!root.IsDefined() || root.IsNull())
      return fail(Mark{},
                  "the spec is empty; it needs at least kernel, grid, block, args and reference");
    ATTUNE_ASSIGN(Fields top, fields(root, "the spec",
                                     {"kernel", "source", "description", "problem", "knobs",
                                      "constraints", "pass_knobs_as", "template_args", "defines",
                                      "compile_options", "grid", "block", "shared_memory_bytes",
                                      "args", "reference", "tolerance", "metrics", "objective"}));
    ATTUNE_TRY(read_source(top, root, kernel_file));
    if (const Entry* d = find(top, "description")) {
      ATTUNE_ASSIGN(spec_.description, scalar(d->value, "description"));
    }
    ATTUNE_TRY(read_problem(top));
    ATTUNE_TRY(read_knobs(top));
    ATTUNE_TRY(read_kernel(top, root));
    ATTUNE_TRY(read_constraints(top));
    if (const Entry* d = find(top, "defines")) {
      ATTUNE_ASSIGN(spec_.defines, defines(d->value, "defines", Scope::kKnobsAndSizes));
      for (const auto& [name, e] : spec_.defines)
        for (const auto& k : spec_.knobs)
          if (spec_.pass_knobs_as == KnobPassing::kDefines && k.define == name)
            return fail(d->value, "defines: '" + name + "' is already knob '" + k.name +
                                      "''s macro; pick another name");
    }
    if (const Entry* o = find(top, "compile_options")) {
      ATTUNE_ASSIGN(spec_.compile_options, strings(o->value, "compile_options"));
    }
    ATTUNE_ASSIGN(spec_.launch, launch(top, root, "", Scope::kKnobsAndSizes));
    ATTUNE_TRY(read_args(top, root));
    ATTUNE_TRY(read_reference(top, root));
    ATTUNE_TRY(read_tolerance(top));
    ATTUNE_TRY(read_metrics(top));
    ATTUNE_TRY(read_objective(top));
    ATTUNE_TRY(check_knobs_reach_the_kernel());
    return Status::success();
  }

  // A knob that never reaches the kernel would be tuned for nothing: every config would build
  // the same code. Template mode can prove it; with macros the source is only searched.
  Status check_knobs_reach_the_kernel() {
    std::set<std::string> read;
    auto note = [&](const Expr& e) { read.insert(e.names().begin(), e.names().end()); };
    for (const auto& e : spec_.template_args) note(e);
    for (const auto& d : spec_.defines) note(d.second);
    for (const auto& e : spec_.launch.grid) note(e);
    for (const auto& e : spec_.launch.block) note(e);
    note(spec_.launch.shared_memory_bytes);
    for (const auto& a : spec_.args) {
      if (a.role == ArgRole::kScalar)
        note(a.value);
      else
        note(a.size);
    }
    for (const auto& k : spec_.knobs) {
      if (read.count(k.name)) continue;
      if (spec_.pass_knobs_as == KnobPassing::kTemplate)
        return fail(k.mark, "knob '" + k.name +
                                "' reaches the kernel nowhere: it is not in "
                                "template_args and no launch, argument or define expression reads "
                                "it; add it to template_args or remove it");
      if (!mentions(spec_.source, k.define)) {
        Error w = fail(k.mark, "warning: knob '" + k.name + "': macro " + k.define +
                                   " does not appear in " + spec_.source_path.string() +
                                   "; unless a header reads it, the knob changes nothing (set "
                                   "'define:' to the macro the kernel uses)");
        spec_.warnings.push_back(w.message());
      }
    }
    return Status::success();
  }

  Status read_source(const Fields& top, const YAML::Node& root,
                     const std::optional<std::filesystem::path>& kernel_file) {
    if (kernel_file) {
      spec_.source_path = *kernel_file;
    } else if (const Entry* s = find(top, "source")) {
      ATTUNE_ASSIGN(std::string p, scalar(s->value, "source"));
      spec_.source_path = resolve(p);
      auto text = read_text_file(spec_.source_path.string(), "kernel source");
      if (!text) return fail(s->value, "source: " + text.error().message());
      spec_.source = std::move(text).value();
      return Status::success();
    } else {
      return fail(root, "no kernel source: pass --kernel my.cu or add 'source: my.cu' to the spec");
    }
    auto text = read_text_file(spec_.source_path.string(), "kernel source");
    if (!text) return text.error();
    spec_.source = std::move(text).value();
    return Status::success();
  }

  Status read_problem(const Fields& top) {
    const Entry* p = find(top, "problem");
    if (!p || p->value.IsNull()) return Status::success();
    if (!p->value.IsMap())
      return fail(p->value, "problem must be a map of size names to integers, e.g. {n: 1048576}");
    for (auto it = p->value.begin(); it != p->value.end(); ++it) {
      ATTUNE_ASSIGN(std::string name, scalar(it->first, "problem key"));
      if (!is_identifier(name))
        return fail(it->first, "problem: '" + name + "' is not a name (letters, digits, '_')");
      for (std::string_view r : kReservedAttrs)
        if (name == r)
          return fail(it->first, "problem: '" + name +
                                     "' is reserved (kernel, source, launch); "
                                     "rename the size");
      if (is_size(name)) return fail(it->first, "problem: '" + name + "' is given twice");
      ATTUNE_ASSIGN(std::string v, scalar(it->second, "problem." + name));
      auto i = parse_int(v);
      if (!i) return fail(it->second, "problem." + name + ": '" + v + "' is not an integer");
      spec_.problem.emplace_back(name, *i);
    }
    return Status::success();
  }

  Result<Value> knob_value(const YAML::Node& n, const std::string& what) const {
    ATTUNE_ASSIGN(std::string s, scalar(n, what));
    if (auto i = parse_int(s)) return Value(*i);
    if (is_qualified_identifier(s)) return Value(s);
    return fail(n, what + ": '" + s + "' must be an integer or a C identifier (such as float4)");
  }

  // {from: 32, to: 1024, step: 32} (arithmetic) or {from: 16, to: 1024, times: 2} (geometric);
  // `to` is inclusive when the sequence lands on it.
  Result<std::vector<Value>> value_range(const YAML::Node& n, const std::string& what) const {
    ATTUNE_ASSIGN(Fields f, fields(n, what, {"from", "to", "step", "times"}));
    std::int64_t bounds[2] = {0, 0};
    const char* keys[2] = {"from", "to"};
    for (int i = 0; i < 2; ++i) {
      ATTUNE_ASSIGN(const Entry* e, require(f, n, keys[i], what, "{from: 32, to: 1024, step: 32}"));
      ATTUNE_ASSIGN(std::string t, scalar(e->value, what + "." + keys[i]));
      auto v = parse_int(t);
      if (!v) return fail(e->value, what + "." + keys[i] + ": '" + t + "' is not an integer");
      bounds[i] = *v;
    }
    const Entry* step = find(f, "step");
    const Entry* times = find(f, "times");
    if ((step != nullptr) == (times != nullptr))
      return fail(n, what +
                         " needs exactly one of 'step' (32, 64, 96, ...) or 'times' "
                         "(16, 32, 64, ...)");
    const Entry* by = step ? step : times;
    ATTUNE_ASSIGN(std::string t, scalar(by->value, what + "." + (step ? "step" : "times")));
    auto k = parse_int(t);
    if (!k || (step && *k < 1) || (times && *k < 2))
      return fail(by->value, what + ": " + (step ? "step" : "times") + " '" + t +
                                 "' must be an "
                                 "integer >= " +
                                 (step ? "1" : "2"));
    if (bounds[0] > bounds[1] || (times && bounds[0] < 1))
      return fail(n, what + ": need 'from' <= 'to'" + (times ? " and 'from' >= 1" : std::string()));
    constexpr std::size_t kMaxValues = 4096;  // a space is a product of these; keep it sane
    std::vector<Value> out;
    for (std::int64_t v = bounds[0]; v <= bounds[1];) {
      if (out.size() == kMaxValues)
        return fail(n, what + " has more than " + std::to_string(kMaxValues) + " values");
      out.emplace_back(v);
      std::int64_t next = 0;
      if (step ? __builtin_add_overflow(v, *k, &next) : __builtin_mul_overflow(v, *k, &next)) break;
      v = next;
    }
    return out;
  }

  Status read_knobs(const Fields& top) {
    const Entry* k = find(top, "knobs");
    if (!k || k->value.IsNull()) return Status::success();
    if (!k->value.IsMap())
      return fail(k->value,
                  "knobs must be a map of knob names, e.g. "
                  "{block_size: {values: [128, 256], default: 256}}");
    for (auto it = k->value.begin(); it != k->value.end(); ++it) {
      KnobSpec knob;
      ATTUNE_ASSIGN(knob.name, scalar(it->first, "knob name"));
      knob.mark = mark_of(it->first);
      const std::string what = "knob '" + knob.name + "'";
      if (!is_identifier(knob.name))
        return fail(it->first, what + ": a knob name must be a C identifier");
      if (this->knob(knob.name)) return fail(it->first, what + " is declared twice");
      if (is_size(knob.name))
        return fail(it->first, what + " has the name of a problem size; rename one of them");
      knob.define = knob.name;
      std::transform(knob.define.begin(), knob.define.end(), knob.define.begin(),
                     [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
      YAML::Node values = it->second;
      std::optional<YAML::Node> def;
      if (it->second.IsMap()) {
        ATTUNE_ASSIGN(Fields f, fields(it->second, what, {"values", "default", "define"}));
        ATTUNE_ASSIGN(const Entry* v,
                      require(f, it->second, "values", what, "values: [64, 128, 256]"));
        values = v->value;
        if (const Entry* d = find(f, "default")) def = d->value;
        if (const Entry* d = find(f, "define")) {
          ATTUNE_ASSIGN(knob.define, scalar(d->value, what + ".define"));
          if (!is_identifier(knob.define))
            return fail(d->value, what + ".define: '" + knob.define + "' is not a C macro name");
        }
      }
      if (values.IsMap()) {
        ATTUNE_ASSIGN(knob.values, value_range(values, what + ".values"));
      } else {
        if (!values.IsSequence() || values.size() == 0)
          return fail(values, what +
                                  ": values must be a non-empty list, e.g. [64, 128, 256], "
                                  "or a range, e.g. {from: 32, to: 1024, step: 32}");
        std::set<std::string> seen;
        for (std::size_t i = 0; i < values.size(); ++i) {
          ATTUNE_ASSIGN(Value v, knob_value(values[i], what + " value"));
          if (!seen.insert(v.text()).second)
            return fail(values[i], what + " lists value " + v.text() + " twice");
          knob.values.push_back(std::move(v));
        }
      }
      if (def) {
        ATTUNE_ASSIGN(Value d, knob_value(*def, what + " default"));
        auto pos = std::find_if(knob.values.begin(), knob.values.end(),
                                [&](const Value& v) { return v.text() == d.text(); });
        if (pos == knob.values.end()) {
          std::vector<std::string> texts;
          for (const auto& v : knob.values) texts.push_back(v.text());
          return fail(*def, what + ": default " + d.text() + " is not among its values [" +
                                join(texts) + "]");
        }
        knob.default_index = static_cast<std::size_t>(pos - knob.values.begin());
      }
      for (const auto& other : spec_.knobs)
        if (other.define == knob.define)
          return fail(it->first, what + " has the same macro name " + knob.define + " as knob '" +
                                     other.name + "'; set 'define:' on one of them");
      spec_.knobs.push_back(std::move(knob));
    }
    return Status::success();
  }

  Status read_kernel(const Fields& top, const YAML::Node& root) {
    ATTUNE_ASSIGN(const Entry* k, require(top, root, "kernel", "the spec",
                                          "kernel: vector_add (the __global__ function's name)"));
    ATTUNE_ASSIGN(spec_.kernel, scalar(k->value, "kernel"));
    if (const Entry* p = find(top, "pass_knobs_as")) {
      ATTUNE_ASSIGN(std::string mode, scalar(p->value, "pass_knobs_as"));
      if (mode == "defines") {
        spec_.pass_knobs_as = KnobPassing::kDefines;
      } else if (mode == "template") {
        spec_.pass_knobs_as = KnobPassing::kTemplate;
      } else {
        return fail(p->value, "pass_knobs_as: '" + mode +
                                  "' must be 'defines' (-DBLOCK_SIZE=256, "
                                  "the default) or 'template' (kernel<256, ...>)");
      }
    }
    std::string plain = spec_.kernel.substr(0, spec_.kernel.find('<'));
    while (!plain.empty() && std::isspace(static_cast<unsigned char>(plain.back())))
      plain.pop_back();
    if (!is_qualified_identifier(plain) ||
        (spec_.kernel.find('<') != std::string::npos && spec_.kernel.back() != '>'))
      return fail(k->value, "kernel: '" + spec_.kernel +
                                "' must be the name of a __global__ "
                                "function, or a template-id such as 'scale<float>'");
    if (!mentions(spec_.source, base_name(spec_.kernel)))
      return fail(k->value, "kernel: '" + base_name(spec_.kernel) + "' does not appear in " +
                                spec_.source_path.string());

    const Entry* t = find(top, "template_args");
    if (spec_.pass_knobs_as == KnobPassing::kTemplate) {
      if (t) {
        if (!t->value.IsSequence())
          return fail(t->value, "template_args must be a list, e.g. [block_size, \"tile + pad\"]");
        for (std::size_t i = 0; i < t->value.size(); ++i) {
          const std::string what = "template_args[" + std::to_string(i) + "]";
          ATTUNE_ASSIGN(std::string text, scalar(t->value[i], what));
          // A knob named alone passes its value verbatim, words (float4) included.
          if (knob(text)) {
            spec_.template_args.push_back(Expr::parse(text).value());
            continue;
          }
          ATTUNE_ASSIGN(Expr e, expr(t->value[i], what, Scope::kKnobsAndSizes));
          spec_.template_args.push_back(std::move(e));
        }
      } else {
        for (const auto& kn : spec_.knobs)
          spec_.template_args.push_back(Expr::parse(kn.name).value());
      }
      if (spec_.template_args.empty())
        return fail(k->value, "pass_knobs_as: template needs at least one knob or template_args");
    } else if (t) {
      return fail(t->key, "template_args only applies with pass_knobs_as: template");
    }
    return Status::success();
  }

  Status read_constraints(const Fields& top) {
    const Entry* c = find(top, "constraints");
    if (!c || c->value.IsNull()) return Status::success();
    // One expression alone, as Kernel Tuner accepts a single restriction string.
    if (c->value.IsScalar()) {
      ATTUNE_ASSIGN(Expr e, expr(c->value, "constraints", Scope::kConstraint));
      spec_.constraints.push_back({std::move(e), mark_of(c->value)});
      return Status::success();
    }
    if (!c->value.IsSequence())
      return fail(c->value,
                  "constraints must be a list of expressions, e.g. "
                  "[\"block_size * items_per_thread <= 4096\"], or one expression");
    for (std::size_t i = 0; i < c->value.size(); ++i) {
      ATTUNE_ASSIGN(
          Expr e, expr(c->value[i], "constraints[" + std::to_string(i) + "]", Scope::kConstraint));
      spec_.constraints.push_back({std::move(e), mark_of(c->value[i])});
    }
    return Status::success();
  }

  Status read_args(const Fields& top, const YAML::Node& root) {
    ATTUNE_ASSIGN(const Entry* a,
                  require(top, root, "args", "the spec",
                          "args: [{name: out, type: float32, buffer: output, size: n}]"));
    if (!a->value.IsSequence() || a->value.size() == 0)
      return fail(a->value,
                  "args must be a list of the kernel's parameters in order, e.g. "
                  "[{name: out, type: float32, buffer: output, size: n}]");
    bool compared = false;
    for (std::size_t i = 0; i < a->value.size(); ++i) {
      const YAML::Node n = a->value[i];
      std::string what = "args[" + std::to_string(i) + "]";
      ATTUNE_ASSIGN(Fields f, fields(n, what,
                                     {"name", "type", "buffer", "size", "scalar", "range", "fill",
                                      "memory", "symbol"}));
      ArgSpec arg;
      arg.mark = mark_of(n);
      ATTUNE_ASSIGN(const Entry* name, require(f, n, "name", what, "name: out"));
      ATTUNE_ASSIGN(arg.name, scalar(name->value, what + ".name"));
      if (!is_identifier(arg.name))
        return fail(name->value, what + ".name: '" + arg.name + "' is not a C identifier");
      for (const auto& other : spec_.args)
        if (other.name == arg.name)
          return fail(name->value, what + ": argument '" + arg.name + "' is listed twice");
      what += " '" + arg.name + "'";
      ATTUNE_ASSIGN(const Entry* type, require(f, n, "type", what, "type: float32"));
      ATTUNE_ASSIGN(std::string tname, scalar(type->value, what + ".type"));
      auto t = element_type_from_string(tname);
      if (!t) {
        std::vector<std::string> names;
        for (const auto& ti : kTypes) names.emplace_back(ti.name);
        return fail(type->value, what + ": unknown type '" + tname + "'" +
                                     suggestion(tname, names) + "; known: " + join(names));
      }
      arg.type = *t;
      const Entry* buffer = find(f, "buffer");
      const Entry* scal = find(f, "scalar");
      if ((buffer != nullptr) == (scal != nullptr))
        return fail(n, what +
                           " needs exactly one of 'buffer: input|output|inout|scratch' "
                           "(with size) or 'scalar: <expression>'");
      if (buffer) {
        ATTUNE_ASSIGN(std::string role, scalar(buffer->value, what + ".buffer"));
        if (role == "input")
          arg.role = ArgRole::kInput;
        else if (role == "output")
          arg.role = ArgRole::kOutput;
        else if (role == "inout")
          arg.role = ArgRole::kInOut;
        else if (role == "scratch")
          arg.role = ArgRole::kScratch;
        else
          return fail(buffer->value,
                      what + ".buffer: '" + role + "' must be input, output, inout or scratch");
        ATTUNE_ASSIGN(const Entry* size, require(f, n, "size", what, "size: n (elements)"));
        const bool scratch = arg.role == ArgRole::kScratch;
        ATTUNE_ASSIGN(
            arg.size,
            expr(size->value, what + ".size", scratch ? Scope::kKnobsAndSizes : Scope::kSizes,
                 "the candidate and the reference must see the same buffers; only "
                 "scratch buffers may depend on knobs"));
        if (arg.role == ArgRole::kOutput || arg.role == ArgRole::kInOut) compared = true;
        if (!is_floating(arg.type)) arg.range = {0.0, 100.0};
        if (const Entry* r = find(f, "range")) {
          if (arg.role != ArgRole::kInput && arg.role != ArgRole::kInOut)
            return fail(r->key, what + ".range only applies to input and inout buffers");
          if (!r->value.IsSequence() || r->value.size() != 2)
            return fail(r->value, what + ".range must be [low, high], e.g. [-1, 1]");
          ATTUNE_ASSIGN(std::string lo, scalar(r->value[0], what + ".range[0]"));
          ATTUNE_ASSIGN(std::string hi, scalar(r->value[1], what + ".range[1]"));
          auto l = parse_real(lo), h = parse_real(hi);
          if (!l || !h || *l > *h)
            return fail(r->value,
                        what + ".range: [" + lo + ", " + hi + "] must be two numbers, low <= high");
          arg.range = {*l, *h};
        }
        ATTUNE_TRY(read_fill(f, arg, what));
        ATTUNE_TRY(read_memory(f, arg, what));
      } else {
        arg.role = ArgRole::kScalar;
        if (const Entry* s = find(f, "size")) return fail(s->key, what + ": a scalar has no size");
        for (const char* key : {"range", "fill", "memory", "symbol"})
          if (const Entry* r = find(f, key))
            return fail(r->key, what + "." + key + " only applies to buffers");
        ATTUNE_ASSIGN(std::string text, scalar(scal->value, what + ".scalar"));
        auto e = Expr::parse(text);
        // A float scalar may be a real number, such as 0.5 or -2.25.
        std::optional<Value> real_constant = e ? e->constant() : std::nullopt;
        if (real_constant && !real_constant->is_real()) real_constant.reset();
        if (!e || (real_constant && is_floating(arg.type))) {
          auto real =
              real_constant ? std::optional<double>(real_constant->as_real()) : parse_real(text);
          if (!real || !is_floating(arg.type))
            return fail(scal->value, what + ".scalar: " + e.error().message());
          arg.real_value = *real;
          arg.value = Expr::parse("0").value();
        } else {
          ATTUNE_TRY(check_names(*e, scal->value, what + ".scalar", Scope::kKnobsAndSizes, ""));
          arg.value = std::move(e).value();
        }
      }
      spec_.args.push_back(std::move(arg));
    }
    if (!compared)
      return fail(a->value,
                  "args: no output to check; mark at least one buffer 'output' or "
                  "'inout' so the correctness gate can compare it with the reference");
    return Status::success();
  }

  // metrics: {gflops: "2.0 * n * n * n / (time_s * 1e9)", ...}
  Status read_metrics(const Fields& top) {
    const Entry* m = find(top, "metrics");
    if (!m || m->value.IsNull()) return Status::success();
    const std::string example = "e.g. {gflops: \"2.0 * n * n * n / (time_s * 1e9)\"}";
    if (!m->value.IsMap())
      return fail(m->value, "metrics must be a map of names to expressions, " + example);
    for (auto it = m->value.begin(); it != m->value.end(); ++it) {
      MetricSpec metric;
      ATTUNE_ASSIGN(metric.name, scalar(it->first, "metric name"));
      metric.mark = mark_of(it->second);
      const std::string what = "metrics." + metric.name;
      if (!is_identifier(metric.name))
        return fail(it->first,
                    "metrics: '" + metric.name + "' is not a name (letters, digits, '_')");
      if (metric.name == "time" || is_time_name(metric.name) || is_size(metric.name) ||
          knob(metric.name))
        return fail(it->first, "metrics: '" + metric.name +
                                   "' is already the name of the time, a size or a knob");
      for (const auto& other : spec_.metrics)
        if (other.name == metric.name)
          return fail(it->first, "metrics: '" + metric.name + "' is given twice");
      ATTUNE_ASSIGN(std::string text, scalar(it->second, what));
      auto e = Expr::parse(text);
      if (!e) return fail(it->second, what + ": " + e.error().message());
      for (const auto& name : e->names()) {
        if (is_size(name) || is_time_name(name)) continue;
        if (knob(name))
          return fail(it->second, what + " reads knob '" + name + "' in '" + text +
                                      "'; a metric is of the time (time_s, time_ms, time_us) and "
                                      "the problem sizes only");
        std::vector<std::string> known = {"time_s", "time_ms", "time_us"};
        for (const auto& [s, v] : spec_.problem) known.push_back(s);
        return fail(it->second, what + ": unknown name '" + name + "' in '" + text + "'" +
                                    suggestion(name, known) + "; known names: " + join(known));
      }
      auto type = e->type([](std::string_view) { return std::optional(Expr::Type::kReal); });
      if (!type) return fail(it->second, what + ": " + type.error().message());
      if (*type == Expr::Type::kString)
        return fail(it->second, what + ": '" + text + "' is a string, not a number");
      metric.expr = std::move(e).value();
      spec_.metrics.push_back(std::move(metric));
    }
    return Status::success();
  }

  // objective: time (default) | {metric: gflops, higher_is_better: true}
  Status read_objective(const Fields& top) {
    const Entry* o = find(top, "objective");
    if (!o) return Status::success();
    const std::string forms =
        "'time' (the default) or {metric: NAME, higher_is_better: true|false}";
    if (o->value.IsScalar()) {
      if (o->value.Scalar() == "time") return Status::success();
      return fail(o->value, "objective: '" + o->value.Scalar() + "' must be " + forms);
    }
    ATTUNE_ASSIGN(Fields f, fields(o->value, "objective", {"metric", "higher_is_better"}));
    ATTUNE_ASSIGN(const Entry* metric, require(f, o->value, "metric", "objective",
                                               "{metric: gflops, "
                                               "higher_is_better: true}"));
    ATTUNE_ASSIGN(spec_.objective.metric, scalar(metric->value, "objective.metric"));
    if (spec_.objective.metric == "time") {
      spec_.objective.metric.clear();
    } else if (std::none_of(spec_.metrics.begin(), spec_.metrics.end(), [&](const MetricSpec& m) {
                 return m.name == spec_.objective.metric;
               })) {
      std::vector<std::string> names;
      for (const auto& m : spec_.metrics) names.push_back(m.name);
      return fail(
          metric->value,
          "objective.metric: '" + spec_.objective.metric + "' is not one of the spec's metrics" +
              suggestion(spec_.objective.metric, names) +
              "; declared: " + (names.empty() ? "(none; add it under metrics:)" : join(names)));
    }
    if (const Entry* h = find(f, "higher_is_better")) {
      ATTUNE_ASSIGN(std::string b, scalar(h->value, "objective.higher_is_better"));
      if (b == "true" || b == "True")
        spec_.objective.higher_is_better = true;
      else if (b != "false" && b != "False")
        return fail(h->value, "objective.higher_is_better: '" + b + "' must be true or false");
    }
    if (spec_.objective.metric.empty() && spec_.objective.higher_is_better)
      return fail(o->value,
                  "objective: the time is lower-is-better; higher_is_better applies to "
                  "a metric");
    if (auto bad = objective_problem(spec_)) return fail(metric->value, "objective: " + *bad);
    spec_.objective.mark = mark_of(metric->value);
    return Status::success();
  }

  // fill: random (default) | {constant: 1.5} | {file: data/x.npy}
  Status read_fill(const Fields& f, ArgSpec& arg, const std::string& what) const {
    const Entry* e = find(f, "fill");
    if (!e) return Status::success();
    const std::string forms =
        "'random' (the default), {constant: 1.5} or {file: data/x.npy} (a NumPy .npy)";
    if (arg.role != ArgRole::kInput && arg.role != ArgRole::kInOut)
      return fail(e->key, what + ".fill only applies to input and inout buffers");
    if (e->value.IsScalar()) {
      if (e->value.Scalar() != "random")
        return fail(e->value, what + ".fill: '" + e->value.Scalar() + "' must be " + forms);
      return Status::success();
    }
    if (!e->value.IsMap() || e->value.size() != 1)
      return fail(e->value, what + ".fill must be " + forms);
    ATTUNE_ASSIGN(Fields ff, fields(e->value, what + ".fill", {"constant", "file"}));
    if (find(f, "range"))
      return fail(find(f, "range")->key,
                  what + ".range only applies to fill: random (values are drawn from it)");
    if (const Entry* c = find(ff, "constant")) {
      ATTUNE_ASSIGN(std::string text, scalar(c->value, what + ".fill.constant"));
      auto v = parse_real(text);
      if (!v) return fail(c->value, what + ".fill.constant: '" + text + "' is not a number");
      if (auto bad = unrepresentable(arg.type, *v))
        return fail(c->value, what + ".fill.constant: " + *bad);
      arg.fill.kind = FillKind::kConstant;
      arg.fill.constant = *v;
      return Status::success();
    }
    const Entry* file = find(ff, "file");
    ATTUNE_ASSIGN(std::string p, scalar(file->value, what + ".fill.file"));
    arg.fill.kind = FillKind::kFile;
    arg.fill.file = resolve(p);
    std::error_code ec;
    if (!std::filesystem::is_regular_file(arg.fill.file, ec))
      return fail(file->value, what + ".fill.file: '" + arg.fill.file.string() +
                                   "' does not exist or is not a file (paths are relative to "
                                   "the spec)");
    auto h = read_npy_header(arg.fill.file);
    if (!h) return fail(file->value, what + ".fill.file: " + h.error().message());
    if (!npy_descr_matches(h->descr, arg.type))
      return fail(file->value, what + ".fill.file: '" + arg.fill.file.string() + "' holds dtype '" +
                                   h->descr + "', but the argument is " +
                                   std::string(to_string(arg.type)) + " ('" +
                                   std::string(npy_descr(arg.type)) +
                                   "'); save it with that dtype (x.astype(...))");
    const auto size = std::filesystem::file_size(arg.fill.file, ec);
    const std::int64_t need =
        h->data_offset + h->elements * static_cast<std::int64_t>(size_of(arg.type));
    if (ec || static_cast<std::int64_t>(size) < need)
      return fail(file->value, what + ".fill.file: '" + arg.fill.file.string() +
                                   "' is cut short: shape " + shape_text(h->shape) + " needs " +
                                   std::to_string(need) + " bytes, the file has " +
                                   std::to_string(size));
    arg.fill.file_elements = h->elements;
    arg.fill.file_data_offset = h->data_offset;
    return Status::success();
  }

  // memory: global (default) | constant, and symbol: NAME for a constant one.
  Status read_memory(const Fields& f, ArgSpec& arg, const std::string& what) {
    const Entry* m = find(f, "memory");
    const Entry* sym = find(f, "symbol");
    if (m) {
      ATTUNE_ASSIGN(std::string kind, scalar(m->value, what + ".memory"));
      if (kind == "constant")
        arg.constant_memory = true;
      else if (kind != "global")
        return fail(m->value, what + ".memory: '" + kind +
                                  "' must be 'global' (a kernel parameter, the default) or "
                                  "'constant' (a __constant__ symbol of the module)");
    }
    if (sym && !arg.constant_memory)
      return fail(sym->key, what + ".symbol only applies with memory: constant");
    if (!arg.constant_memory) return Status::success();
    if (arg.role != ArgRole::kInput)
      return fail(m->value, what +
                                ": memory: constant needs buffer: input (a kernel cannot write "
                                "its constant memory)");
    arg.symbol = arg.name;
    if (sym) {
      ATTUNE_ASSIGN(arg.symbol, scalar(sym->value, what + ".symbol"));
      if (!is_identifier(arg.symbol))
        return fail(sym->value, what + ".symbol: '" + arg.symbol + "' is not a C identifier");
    }
    for (const auto& other : spec_.args)
      if (other.constant_memory && other.symbol == arg.symbol)
        return fail(
            sym ? sym->value : m->value,
            what + ": symbol '" + arg.symbol + "' is already argument '" + other.name + "''s");
    if (!mentions(spec_.source, arg.symbol))
      return fail(sym ? sym->value : m->value,
                  what + ": the __constant__ symbol '" + arg.symbol + "' does not appear in " +
                      spec_.source_path.string() + " (set 'symbol:' to the name it has there)");
    return Status::success();
  }

  Status read_reference(const Fields& top, const YAML::Node& root) {
    ATTUNE_ASSIGN(const Entry* r,
                  require(top, root, "reference", "the spec",
                          "reference: {kernel: {name: my_kernel_ref, grid: [\"ceil_div(n, 256)\"], "
                          "block: [256]}} or reference: {library: {path: ./libref.so, "
                          "function: my_ref}}; every candidate is checked against it"));
    ATTUNE_ASSIGN(Fields f, fields(r->value, "reference", {"kernel", "library"}));
    if (f.size() != 1)
      return fail(r->value, "reference needs exactly one of 'kernel' or 'library'");
    const std::string why = "the reference runs once per problem, without knobs";
    if (const Entry* k = find(f, "kernel")) {
      ATTUNE_ASSIGN(Fields kf, fields(k->value, "reference.kernel",
                                      {"name", "file", "grid", "block", "shared_memory_bytes",
                                       "defines", "compile_options"}));
      ReferenceKernel ref;
      ATTUNE_ASSIGN(const Entry* name,
                    require(kf, k->value, "name", "reference.kernel", "name: vector_add_ref"));
      ATTUNE_ASSIGN(ref.name, scalar(name->value, "reference.kernel.name"));
      std::string plain = ref.name.substr(0, ref.name.find('<'));
      if (!is_qualified_identifier(plain))
        return fail(name->value, "reference.kernel.name: '" + ref.name +
                                     "' must be the name of a __global__ function");
      if (const Entry* file = find(kf, "file")) {
        ATTUNE_ASSIGN(std::string p, scalar(file->value, "reference.kernel.file"));
        ref.source_path = resolve(p);
        auto text = read_text_file(ref.source_path.string(), "reference source");
        if (!text) return fail(file->value, "reference.kernel.file: " + text.error().message());
        ref.source = std::move(text).value();
      } else {
        ref.source_path = spec_.source_path;
        ref.source = spec_.source;
      }
      if (!mentions(ref.source, base_name(ref.name)))
        return fail(name->value, "reference.kernel.name: '" + base_name(ref.name) +
                                     "' does not appear in " + ref.source_path.string());
      for (const auto& a : spec_.args)
        if (a.constant_memory && !mentions(ref.source, a.symbol))
          return fail(name->value, "reference.kernel: the __constant__ symbol '" + a.symbol +
                                       "' (argument '" + a.name + "') does not appear in " +
                                       ref.source_path.string() +
                                       "; the reference reads its constant memory too");
      if (ref.name == spec_.kernel && ref.source_path == spec_.source_path)
        return fail(name->value,
                    "reference.kernel.name: the reference must be another kernel "
                    "than the one being tuned");
      ATTUNE_ASSIGN(ref.launch, launch(kf, k->value, "reference.kernel", Scope::kSizes, why));
      if (const Entry* d = find(kf, "defines")) {
        ATTUNE_ASSIGN(ref.defines,
                      defines(d->value, "reference.kernel.defines", Scope::kSizes, why));
      }
      if (const Entry* o = find(kf, "compile_options")) {
        ATTUNE_ASSIGN(ref.compile_options, strings(o->value, "reference.kernel.compile_options"));
      }
      spec_.reference = std::move(ref);
    } else {
      const Entry* l = find(f, "library");
      ATTUNE_ASSIGN(Fields lf, fields(l->value, "reference.library", {"path", "function"}));
      ReferenceLibrary lib;
      ATTUNE_ASSIGN(const Entry* path,
                    require(lf, l->value, "path", "reference.library", "path: ./libref.so"));
      ATTUNE_ASSIGN(std::string p, scalar(path->value, "reference.library.path"));
      lib.path = resolve(p);
      std::error_code ec;
      if (!std::filesystem::is_regular_file(lib.path, ec))
        return fail(path->value, "reference.library.path: '" + lib.path.string() +
                                     "' does not exist; build the library first");
      ATTUNE_ASSIGN(const Entry* fn,
                    require(lf, l->value, "function", "reference.library", "function: my_ref"));
      ATTUNE_ASSIGN(lib.function, scalar(fn->value, "reference.library.function"));
      if (!is_identifier(lib.function))
        return fail(fn->value, "reference.library.function: '" + lib.function +
                                   "' must be an extern \"C\" function name");
      spec_.reference = std::move(lib);
    }
    return Status::success();
  }

  Status read_tolerance(const Fields& top) {
    const Entry* t = find(top, "tolerance");
    if (!t) return Status::success();
    ATTUNE_ASSIGN(Fields f, fields(t->value, "tolerance", {"rtol", "floor", "reduction_length"}));
    for (const char* key : {"rtol", "floor"}) {
      const Entry* e = find(f, key);
      if (!e) continue;
      ATTUNE_ASSIGN(std::string s, scalar(e->value, std::string("tolerance.") + key));
      auto d = parse_real(s);
      if (!d || *d < 0)
        return fail(e->value, std::string("tolerance.") + key + ": '" + s +
                                  "' must be a number >= 0, e.g. 1e-5");
      (std::string_view(key) == "rtol" ? spec_.tolerance.rtol : spec_.tolerance.floor) = *d;
    }
    if (const Entry* e = find(f, "reduction_length")) {
      ATTUNE_ASSIGN(Expr r, expr(e->value, "tolerance.reduction_length", Scope::kSizes,
                                 "the tolerance is one per problem"));
      spec_.tolerance.reduction_length = std::move(r);
    }
    return Status::success();
  }

 private:
  std::string file_;
  std::filesystem::path base_dir_;
  UserKernelSpec& spec_;
};

Vars size_vars(const UserKernelSpec& spec) {
  Vars v;
  for (const auto& [name, value] : spec.problem) v.emplace(name, value);
  return v;
}

std::string sizes_text(const UserKernelSpec& spec) {
  std::string out;
  for (const auto& [name, value] : spec.problem)
    out += (out.empty() ? "" : ",") + name + "=" + std::to_string(value);
  return out.empty() ? "(no sizes)" : out;
}

std::string where(const UserKernelSpec& spec, Mark m) {
  std::string w = spec.spec_path.string();
  if (m.line > 0) w += ":" + std::to_string(m.line) + ":" + std::to_string(m.column);
  return w;
}

// The metric's value at time_us, with every size and time a real (so '/' divides exactly).
Result<double> metric_value(const UserKernelSpec& spec, const MetricSpec& m, double time_us) {
  Vars vars;
  for (const auto& [name, value] : spec.problem) vars.emplace(name, static_cast<double>(value));
  vars.emplace("time_s", time_us * 1e-6);
  vars.emplace("time_ms", time_us * 1e-3);
  vars.emplace("time_us", time_us);
  ATTUNE_ASSIGN(Value v, m.expr.eval(vars));
  if (v.is_word()) return Error::invalid_argument("'" + m.expr.text() + "' is a string");
  const double d = v.as_real();
  if (!std::isfinite(d))
    return Error::invalid_argument("'" + m.expr.text() + "' is not finite at " +
                                   Value(time_us).text() + " us");
  return d;
}

std::optional<std::string> objective_problem(const UserKernelSpec& spec) {
  if (spec.objective.metric.empty()) return std::nullopt;
  const MetricSpec* m = nullptr;
  for (const auto& metric : spec.metrics)
    if (metric.name == spec.objective.metric) m = &metric;
  if (!m) return "'" + spec.objective.metric + "' is not a metric of the spec";
  // The search ranks by time everywhere (patience, the deploy band, the prior); the objective
  // may only restate that ranking. Times from 1 ns to 100 s cover every kernel attune measures.
  const double times_us[] = {1e-3, 0.5, 1, 3, 10, 77, 1e3, 1e4, 1e5, 1e6, 1e8};
  std::optional<double> last;
  const char* direction = spec.objective.higher_is_better ? "fall" : "grow";
  for (double t : times_us) {
    auto v = metric_value(spec, *m, t);
    if (!v)
      return "metric '" + m->name + "' = '" + m->expr.text() + "' cannot be evaluated at " +
             Value(t).text() + " us for problem " + sizes_text(spec) + ": " + v.error().message();
    if (last && (spec.objective.higher_is_better ? !(*v < *last) : !(*v > *last)))
      return "metric '" + m->name + "' = '" + m->expr.text() + "' does not " + direction +
             " strictly as the time grows (problem " + sizes_text(spec) +
             "), so it cannot be the objective with higher_is_better: " +
             (spec.objective.higher_is_better ? "true" : "false") +
             "; the search ranks by time, and an objective must be a strictly monotonic function "
             "of it (e.g. work / time_s, higher is better)";
    last = *v;
  }
  return std::nullopt;
}

}  // namespace

SpaceCensus census(const UserKernelSpec& spec, const Space& space, bool keep_configs) {
  SpaceCensus c;
  c.cartesian = space.cartesian_size();
  LaunchLimits limits;
  limits.max_shared_memory_bytes = std::numeric_limits<std::int64_t>::max();
  auto e = space.enumerate();
  while (auto point = e.next()) {
    ++c.legal;
    Config config = space.config(*point);
    if (auto why = unsupported_reason(spec, config, limits)) {
      ++c.unlaunchable;
      if (keep_configs) c.refused.emplace_back(std::move(config), std::move(*why));
    } else if (keep_configs) {
      c.configs.push_back(std::move(config));
    }
  }
  return c;
}

std::vector<std::pair<std::string, double>> evaluate_metrics(const UserKernelSpec& spec,
                                                             double time_us) {
  std::vector<std::pair<std::string, double>> out;
  for (const auto& m : spec.metrics)
    if (auto v = metric_value(spec, m, time_us)) out.emplace_back(m.name, *v);
  return out;
}

// ---- loading --------------------------------------------------------------------------------

Result<UserKernelSpec> parse_spec(std::string_view yaml, const std::filesystem::path& spec_file,
                                  const std::optional<std::filesystem::path>& kernel_file) {
  UserKernelSpec spec;
  spec.spec_path = spec_file;
  Reader reader(spec_file, spec);
  try {
    YAML::Node root = YAML::Load(std::string(yaml));
    ATTUNE_TRY(reader.read(root, kernel_file));
  } catch (const YAML::Exception& e) {
    Mark m;
    if (!e.mark.is_null()) m = {e.mark.line + 1, e.mark.column + 1};
    return reader.fail(m, "not valid YAML: " + e.msg);
  } catch (const std::exception& e) {
    return Error::internal(spec_file.string() + ": reading the spec: " + e.what());
  }
  return spec;
}

Result<UserKernelSpec> load_spec(const std::filesystem::path& spec_file,
                                 const std::optional<std::filesystem::path>& kernel_file) {
  ATTUNE_ASSIGN(std::string text, read_text_file(spec_file, "spec"));
  return parse_spec(text, spec_file, kernel_file);
}

Status set_problem_sizes(UserKernelSpec& spec, std::string_view assignments) {
  std::string_view rest = assignments;
  while (!rest.empty()) {
    std::size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    std::size_t eq = item.find('=');
    std::vector<std::string> names;
    for (const auto& [n, v] : spec.problem) names.push_back(n);
    if (eq == std::string_view::npos)
      return Error::invalid_argument("--problem: '" + std::string(item) +
                                     "' must be name=value, e.g. " +
                                     (names.empty() ? "n" : names[0]) + "=1024");
    std::string name(item.substr(0, eq));
    auto value = parse_int(item.substr(eq + 1));
    auto it = std::find_if(spec.problem.begin(), spec.problem.end(),
                           [&](const auto& p) { return p.first == name; });
    if (it == spec.problem.end())
      return Error::invalid_argument("--problem: '" + name + "' is not a problem size of " +
                                     spec.spec_path.string() + suggestion(name, names) +
                                     "; it declares: " + (names.empty() ? "(none)" : join(names)));
    if (!value)
      return Error::invalid_argument("--problem: '" + std::string(item.substr(eq + 1)) +
                                     "' is not an integer (for " + name + ")");
    it->second = *value;
  }
  return Status::success();
}

// ---- space and problem ----------------------------------------------------------------------

Result<Space> make_space(const UserKernelSpec& spec) {
  std::vector<Knob> knobs;
  for (const auto& k : spec.knobs) knobs.push_back(Knob{k.name, k.values, k.default_index});
  auto sizes = std::make_shared<const Vars>(size_vars(spec));
  // Buffers the gate compares must exist for this problem, whatever the config.
  for (const auto& a : spec.args) {
    if (a.role == ArgRole::kScalar || a.role == ArgRole::kScratch) continue;
    auto n = a.size.eval_int(*sizes);
    if (!n)
      return Error::invalid_argument(where(spec, a.mark) + ": argument '" + a.name +
                                     "' size: " + n.error().message());
    if (*n < 1)
      return Error::invalid_argument(where(spec, a.mark) + ": argument '" + a.name + "' has " +
                                     std::to_string(*n) + " elements ('" + a.size.text() +
                                     "') for problem " + sizes_text(spec) + "; it needs >= 1");
    if (a.fill.kind == FillKind::kFile && a.fill.file_elements != *n)
      return Error::invalid_argument(
          where(spec, a.mark) + ": argument '" + a.name + "': '" + a.fill.file.string() +
          "' holds " + std::to_string(a.fill.file_elements) + " elements, but its size '" +
          a.size.text() + "' is " + std::to_string(*n) + " for problem " + sizes_text(spec) +
          "; save an array of that many elements or change the size");
    // Every GPU since sm_20 has 64 KiB of constant memory for a module's __constant__ data.
    constexpr std::int64_t kConstantMemoryBytes = 64 * 1024;
    if (a.constant_memory && *n > kConstantMemoryBytes / static_cast<std::int64_t>(size_of(a.type)))
      return Error::invalid_argument(where(spec, a.mark) + ": argument '" + a.name +
                                     "' in constant memory has " + std::to_string(*n) +
                                     " elements ('" + a.size.text() + "') of " +
                                     std::string(to_string(a.type)) + " for problem " +
                                     sizes_text(spec) + "; constant memory holds at most 64 KiB");
  }
  if (auto bad = objective_problem(spec))
    return Error::invalid_argument(where(spec, spec.objective.mark) + ": objective: " + *bad);
  // The defaults are the baseline every candidate is compared with, so they must be legal;
  // say so at the constraint's line rather than through Space::make.
  Vars baseline = *sizes;
  std::string baseline_text;
  for (const auto& k : spec.knobs) {
    const Value& v = k.values[k.default_index];
    baseline[k.name] = v;
    baseline_text += (baseline_text.empty() ? "" : ",") + k.name + "=" + v.text();
  }
  for (const auto& c : spec.constraints) {
    bool reads_knob = std::any_of(c.expr.names().begin(), c.expr.names().end(),
                                  [&](const std::string& n) { return !sizes->count(n); });
    if (!reads_knob) continue;
    auto v = c.expr.eval_int(baseline);
    if (!v || *v == 0)
      return Error::invalid_argument(where(spec, c.mark) + ": the defaults (" + baseline_text +
                                     ") violate constraint '" + c.expr.text() + "'" +
                                     (v ? "" : " (" + v.error().message() + ")") + " for problem " +
                                     sizes_text(spec) + "; change a knob's default");
  }
  std::vector<Constraint> constraints;
  for (const auto& c : spec.constraints) {
    std::vector<std::string> reads;
    for (const auto& name : c.expr.names())
      if (!sizes->count(name)) reads.push_back(name);
    if (reads.empty()) {
      // A requirement on the problem, such as "n % 4 == 0".
      auto v = c.expr.eval_int(*sizes);
      if (!v)
        return Error::invalid_argument(where(spec, c.mark) +
                                       ": constraint: " + v.error().message());
      if (*v == 0)
        return Error::invalid_argument(where(spec, c.mark) + ": constraint '" + c.expr.text() +
                                       "' does not hold for problem " + sizes_text(spec) +
                                       "; the kernel cannot run this problem");
      continue;
    }
    auto constraint = make_constraint(c.expr, knobs, *sizes);
    if (!constraint)
      return Error::invalid_argument(where(spec, c.mark) +
                                     ": constraint: " + constraint.error().message());
    constraints.push_back(std::move(*constraint));
  }
  auto space = Space::make(std::move(knobs), std::move(constraints));
  if (!space) return space.error().with_context(spec.spec_path.string());
  return space;
}

namespace {

std::string launch_description(const UserKernelSpec& spec) {
  std::string d = "kernel=" + spec.kernel;
  d +=
      ";pass=" + std::string(spec.pass_knobs_as == KnobPassing::kTemplate ? "template" : "defines");
  for (const auto& t : spec.template_args) d += ";targ=" + t.text();
  for (const auto& [n, e] : spec.defines) d += ";define=" + n + "=" + e.text();
  for (const auto& o : spec.compile_options) d += ";option=" + o;
  for (const auto& g : spec.launch.grid) d += ";grid=" + g.text();
  for (const auto& b : spec.launch.block) d += ";block=" + b.text();
  d += ";smem=" + spec.launch.shared_memory_bytes.text();
  for (const auto& a : spec.args) {
    d += ";arg=" + a.name + ":" + std::string(to_string(a.type)) + ":" +
         std::string(to_string(a.role)) + ":";
    if (a.role == ArgRole::kScalar)
      d += a.real_value ? Value(*a.real_value).text() : a.value.text();
    else
      d += a.size.text();
    // Only what differs from a random global buffer, so older specs keep their keys.
    if (a.fill.kind == FillKind::kConstant) d += ":fill=constant:" + Value(a.fill.constant).text();
    if (a.fill.kind == FillKind::kFile) d += ":fill=file:" + a.fill.file.filename().string();
    if (a.constant_memory) d += ":constant=" + a.symbol;
  }
  return d;
}

}  // namespace

Problem make_problem(const UserKernelSpec& spec) {
  std::map<std::string, std::string> attrs;
  attrs["kernel"] = base_name(spec.kernel);
  attrs["source"] = hex64(fnv1a64(spec.source));
  attrs["launch"] = hex64(fnv1a64(launch_description(spec)));
  for (const auto& [name, value] : spec.problem) attrs[name] = std::to_string(value);
  std::string display = base_name(spec.kernel);
  if (!spec.problem.empty()) display += ":" + sizes_text(spec);
  return Problem("user", std::move(attrs), display);
}

Result<UserKernelSpec> spec_for_problem(const UserKernelSpec& spec, const Problem& problem) {
  const Problem mine = make_problem(spec);
  if (problem.op() != mine.op())
    return Error::invalid_argument("problem '" + problem.text() + "' is not a user kernel's");
  // Sizes alone ("user:n=123", from the command line) ask for this spec at those sizes; a
  // problem naming the kernel, source or launch must match all three.
  const bool sizes_only =
      !problem.attr("kernel") && !problem.attr("source") && !problem.attr("launch");
  for (const char* key : {"kernel", "source", "launch"}) {
    if (sizes_only) break;
    const std::string* theirs = problem.attr(key);
    if (!theirs || *theirs != *mine.attr(key)) {
      std::string what = std::string(key) == "kernel" ? "names another kernel than"
                         : std::string(key) == "source"
                             ? "was made from another source text than"
                             : "was made from another launch description than";
      return Error::invalid_argument(
          "problem '" + problem.text() + "' " + what + " " + spec.spec_path.string() + " with " +
          spec.source_path.string() + " (was a file edited since the run began?)");
    }
  }
  UserKernelSpec out = spec;
  std::string sizes;
  for (const auto& [k, v] : problem.attrs()) {
    if (k == "kernel" || k == "source" || k == "launch") continue;
    sizes += (sizes.empty() ? "" : ",") + k + "=" + v;
  }
  if (!sizes_only)
    for (const auto& [name, value] : spec.problem)
      if (!problem.attr(name))
        return Error::invalid_argument("problem '" + problem.text() + "' does not set size '" +
                                       name + "'");
  ATTUNE_TRY(set_problem_sizes(out, sizes));
  return out;
}

// ---- per config -----------------------------------------------------------------------------

namespace {

std::uint16_t to_half_bits(float f) {
  std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  std::uint32_t sign = (x >> 16) & 0x8000u;
  std::uint32_t exp = (x >> 23) & 0xffu;
  std::uint32_t mant = x & 0x7fffffu;
  if (exp == 0xff) return static_cast<std::uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0u));
  int e = static_cast<int>(exp) - 127 + 15;
  if (e >= 31) return static_cast<std::uint16_t>(sign | 0x7c00u);  // overflow to inf
  if (e <= 0) {                                                    // subnormal or zero
    if (e < -10) return static_cast<std::uint16_t>(sign);
    mant |= 0x800000u;
    std::uint32_t shift = static_cast<std::uint32_t>(14 - e);
    std::uint32_t h = mant >> shift;
    std::uint32_t rem = mant & ((1u << shift) - 1);
    std::uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1u))) ++h;
    return static_cast<std::uint16_t>(sign | h);
  }
  std::uint32_t h = (static_cast<std::uint32_t>(e) << 10) | (mant >> 13);
  std::uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // may carry into inf: correct
  return static_cast<std::uint16_t>(sign | h);
}

std::uint16_t to_bf16_bits(float f) {
  std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);  // round to nearest even
  return static_cast<std::uint16_t>(x >> 16);
}

template <typename T>
void put(std::array<unsigned char, 8>& out, T v) {
  static_assert(sizeof(T) <= 8);
  std::memcpy(out.data(), &v, sizeof(T));
}

// Fills the scalar's bytes; an error when the value does not fit its type.
Status encode_scalar(ArgInstance& a) {
  auto fits = [&](std::int64_t lo, std::int64_t hi) -> Status {
    if (a.scalar_int < lo || a.scalar_int > hi)
      return Error::unsupported("scalar '" + a.name + "' = " + std::to_string(a.scalar_int) +
                                " does not fit in " + std::string(to_string(a.type)));
    return Status::success();
  };
  switch (a.type) {
    case ElementType::kFloat32:
      put(a.scalar_bytes, static_cast<float>(a.scalar_real));
      break;
    case ElementType::kFloat64:
      put(a.scalar_bytes, a.scalar_real);
      break;
    case ElementType::kFloat16:
      put(a.scalar_bytes, to_half_bits(static_cast<float>(a.scalar_real)));
      break;
    case ElementType::kBFloat16:
      put(a.scalar_bytes, to_bf16_bits(static_cast<float>(a.scalar_real)));
      break;
    case ElementType::kInt32:
      ATTUNE_TRY(fits(INT32_MIN, INT32_MAX));
      put(a.scalar_bytes, static_cast<std::int32_t>(a.scalar_int));
      break;
    case ElementType::kInt64:
      put(a.scalar_bytes, a.scalar_int);
      break;
    case ElementType::kUInt32:
      ATTUNE_TRY(fits(0, UINT32_MAX));
      put(a.scalar_bytes, static_cast<std::uint32_t>(a.scalar_int));
      break;
    case ElementType::kInt8:
      ATTUNE_TRY(fits(INT8_MIN, INT8_MAX));
      put(a.scalar_bytes, static_cast<std::int8_t>(a.scalar_int));
      break;
    case ElementType::kUInt8:
      ATTUNE_TRY(fits(0, UINT8_MAX));
      put(a.scalar_bytes, static_cast<std::uint8_t>(a.scalar_int));
      break;
  }
  return Status::success();
}

// The knob values of a config of this spec, checked; they also go into vars.
Result<std::vector<const Value*>> knob_values(const UserKernelSpec& spec, const Config& config,
                                              Vars& vars) {
  if (config.entries().size() != spec.knobs.size())
    return Error::invalid_argument(
        "config '" + config.text() + "' sets " + std::to_string(config.entries().size()) +
        " knobs; " + spec.spec_path.string() + " declares " + std::to_string(spec.knobs.size()));
  std::vector<const Value*> out;
  for (const auto& k : spec.knobs) {
    const Value* v = config.get(k.name);
    if (!v)
      return Error::invalid_argument("config '" + config.text() + "' does not set knob '" + k.name +
                                     "'");
    const std::string t = v->text();
    auto it = std::find_if(k.values.begin(), k.values.end(),
                           [&](const Value& o) { return o.text() == t; });
    if (it == k.values.end())
      return Error::invalid_argument("config '" + config.text() + "': knob '" + k.name +
                                     "' has no value " + t);
    vars[k.name] = *it;
    out.push_back(&*it);
  }
  return out;
}

Result<std::int64_t> eval_for(const Expr& e, const Vars& vars, const std::string& what,
                              const std::string& config_text) {
  auto v = e.eval_int(vars);
  if (!v)
    return Error::unsupported(what + " '" + e.text() + "' cannot be evaluated for " + config_text +
                              ": " + v.error().message());
  return *v;
}

Result<Launch> eval_launch(const LaunchSpec& spec, const Vars& vars, const std::string& context,
                           const LaunchLimits& limits) {
  Launch l;
  static const char* kAxis[] = {"x", "y", "z"};
  for (int i = 0; i < 3; ++i) {
    ATTUNE_ASSIGN(l.grid[i],
                  eval_for(spec.grid[i], vars, std::string("grid.") + kAxis[i], context));
    if (l.grid[i] < 1 || l.grid[i] > limits.max_grid[i])
      return Error::unsupported("grid." + std::string(kAxis[i]) + " = " + spec.grid[i].text() +
                                " = " + std::to_string(l.grid[i]) + " for " + context +
                                "; it must be in [1, " + std::to_string(limits.max_grid[i]) + "]");
    ATTUNE_ASSIGN(l.block[i],
                  eval_for(spec.block[i], vars, std::string("block.") + kAxis[i], context));
    if (l.block[i] < 1 || l.block[i] > limits.max_block[i])
      return Error::unsupported("block." + std::string(kAxis[i]) + " = " + spec.block[i].text() +
                                " = " + std::to_string(l.block[i]) + " for " + context +
                                "; it must be in [1, " + std::to_string(limits.max_block[i]) + "]");
  }
  if (l.threads_per_block() > limits.max_threads_per_block)
    return Error::unsupported("block " + std::to_string(l.block[0]) + "x" +
                              std::to_string(l.block[1]) + "x" + std::to_string(l.block[2]) +
                              " has " + std::to_string(l.threads_per_block()) + " threads for " +
                              context + "; at most " +
                              std::to_string(limits.max_threads_per_block) + " per block");
  ATTUNE_ASSIGN(l.shared_memory_bytes,
                eval_for(spec.shared_memory_bytes, vars, "shared_memory_bytes", context));
  if (l.shared_memory_bytes < 0 || l.shared_memory_bytes > limits.max_shared_memory_bytes)
    return Error::unsupported("shared_memory_bytes = " + spec.shared_memory_bytes.text() + " = " +
                              std::to_string(l.shared_memory_bytes) + " for " + context +
                              "; it must be in [0, " +
                              std::to_string(limits.max_shared_memory_bytes) + "]");
  return l;
}

Result<std::vector<ArgInstance>> eval_args(const UserKernelSpec& spec, const Vars& vars,
                                           const std::string& context) {
  std::vector<ArgInstance> out;
  for (const auto& a : spec.args) {
    ArgInstance ai;
    ai.name = a.name;
    ai.type = a.type;
    ai.role = a.role;
    ai.range = a.range;
    ai.fill = a.fill;
    ai.constant_memory = a.constant_memory;
    ai.symbol = a.symbol;
    ai.spec_index = out.size();
    if (a.role == ArgRole::kScalar) {
      ai.elements = 1;
      ai.bytes = static_cast<std::int64_t>(size_of(a.type));
      if (a.real_value) {
        ai.scalar_real = *a.real_value;
        ai.scalar_int = static_cast<std::int64_t>(*a.real_value);
      } else {
        ATTUNE_ASSIGN(ai.scalar_int, eval_for(a.value, vars, "scalar '" + a.name + "'", context));
        ai.scalar_real = static_cast<double>(ai.scalar_int);
      }
      ATTUNE_TRY(encode_scalar(ai));
    } else {
      ATTUNE_ASSIGN(ai.elements, eval_for(a.size, vars, "size of '" + a.name + "'", context));
      if (ai.elements < 1)
        return Error::unsupported("buffer '" + a.name + "' has " + std::to_string(ai.elements) +
                                  " elements ('" + a.size.text() + "') for " + context);
      if (__builtin_mul_overflow(ai.elements, static_cast<std::int64_t>(size_of(a.type)),
                                 &ai.bytes))
        return Error::unsupported("buffer '" + a.name + "' size overflows for " + context);
    }
    out.push_back(std::move(ai));
  }
  return out;
}

// Kernel parameters to args; __constant__ symbols, which are not parameters, to constant_args.
void split_args(std::vector<ArgInstance> all, Instance& inst) {
  for (auto& a : all) (a.constant_memory ? inst.constant_args : inst.args).push_back(std::move(a));
}

template <typename T>
void fill_with(std::vector<unsigned char>& out, T v) {
  for (std::size_t i = 0; i + sizeof(T) <= out.size(); i += sizeof(T))
    std::memcpy(out.data() + i, &v, sizeof(T));
}

Result<std::vector<std::string>> eval_defines(
    const std::vector<std::pair<std::string, Expr>>& defines, const Vars& vars,
    const std::string& context) {
  std::vector<std::string> out;
  for (const auto& [name, e] : defines) {
    ATTUNE_ASSIGN(std::int64_t v, eval_for(e, vars, "define " + name, context));
    out.push_back("-D" + name + "=" + std::to_string(v));
  }
  return out;
}

}  // namespace

Result<Instance> instantiate(const UserKernelSpec& spec, const Config& config,
                             const LaunchLimits& limits) {
  Vars vars = size_vars(spec);
  ATTUNE_ASSIGN(std::vector<const Value*> values, knob_values(spec, config, vars));
  const std::string context = config.text().empty() ? "the only config" : config.text();
  for (const auto& c : spec.constraints) {
    ATTUNE_ASSIGN(std::int64_t ok, eval_for(c.expr, vars, "constraint", context));
    if (!ok)
      return Error::unsupported("config " + context + " violates constraint '" + c.expr.text() +
                                "'");
  }
  Instance inst;
  inst.name_expression = spec.kernel;
  if (spec.pass_knobs_as == KnobPassing::kDefines) {
    for (std::size_t i = 0; i < spec.knobs.size(); ++i)
      inst.compile_options.push_back("-D" + spec.knobs[i].define + "=" + values[i]->text());
  } else {
    std::string targs;
    for (const auto& t : spec.template_args) {
      if (!targs.empty()) targs += ", ";
      auto k = std::find_if(spec.knobs.begin(), spec.knobs.end(),
                            [&](const KnobSpec& kn) { return kn.name == t.text(); });
      if (k != spec.knobs.end()) {
        targs += values[static_cast<std::size_t>(k - spec.knobs.begin())]->text();
      } else {
        ATTUNE_ASSIGN(std::int64_t v, eval_for(t, vars, "template argument", context));
        targs += std::to_string(v);
      }
    }
    // Fixed leading arguments written in the kernel's name ("scale<float>") come first.
    if (!spec.kernel.empty() && spec.kernel.back() == '>')
      inst.name_expression = spec.kernel.substr(0, spec.kernel.size() - 1) + ", " + targs + ">";
    else
      inst.name_expression += "<" + targs + ">";
  }
  ATTUNE_ASSIGN(auto defs, eval_defines(spec.defines, vars, context));
  inst.compile_options.insert(inst.compile_options.end(), defs.begin(), defs.end());
  inst.compile_options.insert(inst.compile_options.end(), spec.compile_options.begin(),
                              spec.compile_options.end());
  ATTUNE_ASSIGN(inst.launch, eval_launch(spec.launch, vars, context, limits));
  ATTUNE_ASSIGN(auto args, eval_args(spec, vars, context));
  split_args(std::move(args), inst);
  return inst;
}

Result<std::vector<unsigned char>> fixed_bytes(const ArgInstance& a) {
  if (a.elements < 0 || a.bytes != a.elements * static_cast<std::int64_t>(size_of(a.type)))
    return Error::invalid_argument("argument '" + a.name + "': " + std::to_string(a.bytes) +
                                   " bytes for " + std::to_string(a.elements) + " elements of " +
                                   std::string(to_string(a.type)));
  std::vector<unsigned char> out(static_cast<std::size_t>(a.bytes));
  switch (a.fill.kind) {
    case FillKind::kRandom:
      return Error::invalid_argument("argument '" + a.name +
                                     "' has random values, drawn per check from a seed; "
                                     "it has no fixed bytes");
    case FillKind::kConstant: {
      const double v = a.fill.constant;
      if (auto bad = unrepresentable(a.type, v))
        return Error::invalid_argument("argument '" + a.name + "': fill.constant " + *bad);
      switch (a.type) {
        case ElementType::kFloat32:
          fill_with(out, static_cast<float>(v));
          break;
        case ElementType::kFloat64:
          fill_with(out, v);
          break;
        case ElementType::kFloat16:
          fill_with(out, to_half_bits(static_cast<float>(v)));
          break;
        case ElementType::kBFloat16:
          fill_with(out, to_bf16_bits(static_cast<float>(v)));
          break;
        case ElementType::kInt32:
          fill_with(out, static_cast<std::int32_t>(v));
          break;
        case ElementType::kInt64:
          fill_with(out, static_cast<std::int64_t>(v));
          break;
        case ElementType::kUInt32:
          fill_with(out, static_cast<std::uint32_t>(v));
          break;
        case ElementType::kInt8:
          fill_with(out, static_cast<std::int8_t>(v));
          break;
        case ElementType::kUInt8:
          fill_with(out, static_cast<std::uint8_t>(v));
          break;
      }
      return out;
    }
    case FillKind::kFile: {
      if (a.fill.file_elements != a.elements)
        return Error::invalid_argument("argument '" + a.name + "': '" + a.fill.file.string() +
                                       "' holds " + std::to_string(a.fill.file_elements) +
                                       " elements; the argument has " + std::to_string(a.elements));
      std::ifstream in(a.fill.file, std::ios::binary);
      if (!in)
        return Error::io("argument '" + a.name + "': cannot read '" + a.fill.file.string() + "'");
      in.seekg(a.fill.file_data_offset);
      in.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(out.size()));
      if (!in || in.gcount() != static_cast<std::streamsize>(out.size()))
        return Error::io("argument '" + a.name + "': '" + a.fill.file.string() +
                         "' is shorter than when the spec was loaded (" + std::to_string(a.bytes) +
                         " data bytes expected)");
      return out;
    }
  }
  return Error::internal("unknown fill kind");
}

std::optional<std::string> unsupported_reason(const UserKernelSpec& spec, const Config& config,
                                              const LaunchLimits& limits) {
  auto r = instantiate(spec, config, limits);
  if (r) return std::nullopt;
  return r.error().message();
}

Result<Instance> instantiate_reference(const UserKernelSpec& spec, const LaunchLimits& limits) {
  Vars vars = size_vars(spec);
  std::vector<Config::Entry> base;
  for (const auto& k : spec.knobs) base.emplace_back(k.name, k.values[k.default_index]);
  const Config baseline(std::move(base));
  ATTUNE_ASSIGN(std::vector<const Value*> values, knob_values(spec, baseline, vars));
  const std::string context = "the reference (problem " + sizes_text(spec) + ")";
  Instance inst;
  ATTUNE_ASSIGN(auto args, eval_args(spec, vars, context));
  split_args(std::move(args), inst);
  const auto* ref = std::get_if<ReferenceKernel>(&spec.reference);
  if (!ref) return inst;
  inst.name_expression = ref->name;
  // The baseline's knob macros, so a source that insists on them (#error when missing) still
  // compiles for its reference kernel.
  if (spec.pass_knobs_as == KnobPassing::kDefines)
    for (std::size_t i = 0; i < spec.knobs.size(); ++i)
      inst.compile_options.push_back("-D" + spec.knobs[i].define + "=" + values[i]->text());
  ATTUNE_ASSIGN(auto defs, eval_defines(spec.defines, vars, context));
  inst.compile_options.insert(inst.compile_options.end(), defs.begin(), defs.end());
  ATTUNE_ASSIGN(auto ref_defs, eval_defines(ref->defines, vars, context));
  inst.compile_options.insert(inst.compile_options.end(), ref_defs.begin(), ref_defs.end());
  inst.compile_options.insert(inst.compile_options.end(), ref->compile_options.begin(),
                              ref->compile_options.end());
  auto launch = eval_launch(ref->launch, vars, context, limits);
  // The reference runs for every problem; a bad launch there is the spec's fault, not a config's.
  if (!launch)
    return Error::invalid_argument(spec.spec_path.string() + ": " + launch.error().message());
  inst.launch = *launch;
  return inst;
}

Result<GateTolerance> gate_tolerance(const UserKernelSpec& spec, std::size_t arg) {
  if (arg >= spec.args.size())
    return Error::invalid_argument("gate_tolerance: no argument " + std::to_string(arg));
  const ArgSpec& a = spec.args[arg];
  GateTolerance t;
  t.dtype = std::string(gate_dtype(a.type));
  t.rtol = spec.tolerance.rtol;
  t.floor = spec.tolerance.floor;
  if (!t.rtol && !is_floating(a.type)) t.rtol = 0.0;
  if (spec.tolerance.reduction_length) {
    auto r = spec.tolerance.reduction_length->eval_int(size_vars(spec));
    if (!r)
      return Error::invalid_argument(spec.spec_path.string() +
                                     ": tolerance.reduction_length: " + r.error().message());
    t.reduction_length = std::max<std::int64_t>(1, *r);
  }
  return t;
}

}  // namespace attune::user
