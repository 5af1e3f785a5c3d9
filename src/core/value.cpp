#include "core/value.h"

#include <charconv>
#include <cstdlib>
#include <limits>

namespace attune {

std::int64_t Value::as_int() const {
  if (is_int()) return std::get<0>(v_);
  if (is_real()) {
    // Saturated: a cast of a real outside int64 (1e20, nan) is undefined.
    const double r = std::get<1>(v_);
    if (!(r > -9.2e18)) return r < 0 ? std::numeric_limits<std::int64_t>::min() : 0;
    if (r > 9.2e18) return std::numeric_limits<std::int64_t>::max();
    return static_cast<std::int64_t>(r);
  }
  return 0;
}

double Value::as_real() const {
  if (is_int()) return static_cast<double>(std::get<0>(v_));
  if (is_real()) return std::get<1>(v_);
  return 0.0;
}

const std::string& Value::as_word() const {
  static const std::string kEmpty;
  return is_word() ? std::get<2>(v_) : kEmpty;
}

std::string Value::text() const {
  if (is_int()) return std::to_string(std::get<0>(v_));
  if (is_real()) {
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof buf, std::get<1>(v_));
    return std::string(buf, r.ptr);
  }
  return std::get<2>(v_);
}

Value Value::parse(const std::string& text) {
  if (text.empty()) return Value(text);
  const char* b = text.data();
  const char* e = b + text.size();
  std::int64_t i = 0;
  auto ri = std::from_chars(b, e, i);
  if (ri.ec == std::errc() && ri.ptr == e) return Value(i);
  double d = 0;
  auto rd = std::from_chars(b, e, d);
  if (rd.ec == std::errc() && rd.ptr == e) return Value(d);
  return Value(text);
}

}  // namespace attune
