#include "core/op.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>
#include <set>

#include <fmt/format.h>

namespace attune {

namespace {
bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}
}  // namespace

std::string OpSignature::shape_syntax() const {
  std::string out;
  for (const auto& s : sizes) {
    if (!out.empty()) out += 'x';
    for (unsigned char c : s) out += static_cast<char>(std::toupper(c));
  }
  return out;
}

Result<Problem> OpSignature::problem_from_shape(const std::string& shape,
                                                const std::string& dtype) const {
  std::string spec = name + ":";
  std::size_t pos = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    std::size_t end = shape.find('x', pos);
    if (i + 1 == sizes.size()) end = shape.size();
    std::string d = end == std::string::npos ? "" : shape.substr(pos, end - pos);
    std::int64_t v = 0;
    auto r = std::from_chars(d.data(), d.data() + d.size(), v);
    if (d.empty() || r.ec != std::errc() || r.ptr != d.data() + d.size() || v <= 0 ||
        (i + 1 < sizes.size() && end == std::string::npos))
      return Error::invalid_argument("--shape '" + shape + "' is not " +
                                     std::to_string(sizes.size()) +
                                     " positive integers joined by 'x' (" + shape_syntax() + ")");
    spec += (i ? "," : "") + sizes[i] + "=" + d;
    pos = end + 1;
  }
  if (!dtype.empty()) spec += ",dtype=" + dtype;
  return Problem::parse(spec);
}

Result<Problem> OpSignature::resolve(const Problem& spec) const {
  std::map<std::string, std::string> a = {{"dtype", dtypes.front()}};
  for (const auto& f : flags) a.emplace(f, "0");
  std::vector<std::string> all_flags = flags;
  all_flags.insert(all_flags.end(), optional_flags.begin(), optional_flags.end());
  const std::string known =
      join(sizes, ", ") + ", dtype" + (all_flags.empty() ? "" : ", " + join(all_flags, ", "));
  for (const auto& [k, v] : spec.attrs()) {
    if (k != "dtype" && !contains(sizes, k) && !contains(all_flags, k))
      return Error::invalid_argument(name + " has no attribute '" + k + "' (it has " + known + ")");
    a[k] = v;
  }
  for (const auto& f : optional_flags) {
    auto it = a.find(f);
    if (it == a.end()) continue;
    if (it->second != "0" && it->second != "1")
      return Error::invalid_argument(name + " " + f + " must be 0 or 1");
    if (it->second == "0") a.erase(it);  // an optional flag's 0 is its absence
  }
  Problem p(name, a, spec.name() == spec.text() ? "" : spec.name());
  for (const auto& k : sizes) {
    auto v = p.int_attr(k);
    if (!v) return Error::invalid_argument(name + " needs " + k + "=N (a positive integer)");
    if (*v <= 0 || *v > max_size)
      return Error::invalid_argument(fmt::format("{} {}={} is out of range", name, k, *v));
  }
  if (!contains(dtypes, a["dtype"]))
    return Error::invalid_argument(name + " dtype '" + a["dtype"] + "' is not supported (" +
                                   join(dtypes, ", ") + ")");
  for (const auto& f : flags)
    if (a[f] != "0" && a[f] != "1")
      return Error::invalid_argument(name + " " + f + " must be 0 or 1");
  if (check) ATTUNE_TRY(check(p));
  return p;
}

const OpSignature* find_op(std::string_view name) {
  for (const OpSignature* op : registered_ops())
    if (op->name == name) return op;
  return nullptr;
}

Result<Problem> problem_from_shape(const std::string& op, const std::string& shape,
                                   const std::string& dtype) {
  if (const OpSignature* sig = find_op(op)) return sig->problem_from_shape(shape, dtype);
  std::vector<std::string> known;
  for (const OpSignature* s : registered_ops())
    known.push_back(s->name + " (" + s->shape_syntax() + ")");
  std::string list = known.empty() ? "no op" : known.back();
  if (known.size() > 1) {
    known.pop_back();
    list = join(known, ", ") + " and " + list;
  }
  return Error::invalid_argument("--shape is understood for --op " + list + ", not '" + op + "'");
}

std::vector<Config> first_guesses(const Problem& problem, const Space& space,
                                  const std::map<std::string, std::string>& pins) {
  std::vector<Config> out;
  const OpSignature* op = find_op(problem.op());
  if (!op || !op->seed_configs) return out;
  std::set<Point> seen;
  for (const std::string& overrides : op->seed_configs(problem)) {
    auto set = Config::parse(overrides);
    if (!set.ok()) continue;
    std::vector<Config::Entry> entries = set->entries();
    for (const auto& [name, value] : pins)
      if (space.index_of(name) && !set->get(name)) entries.emplace_back(name, Value::parse(value));
    auto p = space.point_over_baseline(Config(std::move(entries)));
    if (p.ok() && space.prefix_legal(*p) && seen.insert(*p).second) out.push_back(space.config(*p));
  }
  return out;
}

}  // namespace attune
