#include "core/problem.h"

#include <cctype>
#include <charconv>

#include "core/hash.h"

namespace attune {

namespace {
bool is_word(const std::string& s) {
  if (s.empty()) return false;
  for (unsigned char c : s)
    if (!(std::isalnum(c) || c == '_' || c == '-' || c == '.')) return false;
  return true;
}
}  // namespace

const std::string* Problem::attr(const std::string& key) const {
  auto it = attrs_.find(key);
  return it == attrs_.end() ? nullptr : &it->second;
}

bool Problem::flag(const std::string& key) const {
  const std::string* v = attr(key);
  return v && *v == "1";
}

Result<std::int64_t> Problem::int_attr(const std::string& key) const {
  const std::string* v = attr(key);
  if (!v) return Error::invalid_argument("problem '" + name() + "' has no '" + key + "'");
  std::int64_t out = 0;
  auto r = std::from_chars(v->data(), v->data() + v->size(), out);
  if (r.ec != std::errc() || r.ptr != v->data() + v->size())
    return Error::invalid_argument("problem '" + name() + "': '" + key + "=" + *v +
                                   "' is not an integer");
  return out;
}

std::string Problem::text() const {
  std::string out = op_ + ":";
  bool first = true;
  for (const auto& [k, v] : attrs_) {
    if (!first) out += ',';
    first = false;
    out += k + "=" + v;
  }
  return out;
}

std::string Problem::structural_key() const {
  return hex64(fnv1a64(text()));
}

Result<Problem> Problem::parse(const std::string& text) {
  auto colon = text.find(':');
  std::string op = text.substr(0, colon);
  if (!is_word(op))
    return Error::invalid_argument("problem '" + text +
                                   "' must start with an op name, as in "
                                   "'gemm:m=1,n=4096,k=1024'");
  std::map<std::string, std::string> attrs;
  if (colon != std::string::npos) {
    std::string rest = text.substr(colon + 1);
    std::size_t pos = 0;
    while (pos <= rest.size() && !rest.empty()) {
      std::size_t end = rest.find(',', pos);
      if (end == std::string::npos) end = rest.size();
      std::string item = rest.substr(pos, end - pos);
      auto eq = item.find('=');
      if (eq == std::string::npos || !is_word(item.substr(0, eq)) || eq + 1 >= item.size())
        return Error::invalid_argument("problem '" + text + "': '" + item +
                                       "' is not of the form key=value");
      if (!attrs.emplace(item.substr(0, eq), item.substr(eq + 1)).second)
        return Error::invalid_argument("problem '" + text + "' sets '" + item.substr(0, eq) +
                                       "' twice");
      pos = end + 1;
    }
  }
  return Problem(std::move(op), std::move(attrs));
}

}  // namespace attune
