#include "search/options.h"

#include <charconv>
#include <cmath>

#include <fmt/format.h>

namespace attune::search {

std::string Range::text() const {
  if (std::isinf(hi)) return fmt::format("{} {}", lo_open ? ">" : ">=", lo);
  return lo_open ? fmt::format("> {} and <= {}", lo, hi) : fmt::format("{}..{}", lo, hi);
}

Result<double> parse_option_value(const std::string& strategy, const std::string& name,
                                  const std::string& text, bool integer, const Range& range,
                                  double limit) {
  const char* first = text.data();
  const char* last = text.data() + text.size();
  double v = 0;
  bool parsed = false;
  if (integer) {
    std::int64_t i = 0;
    auto r = std::from_chars(first, last, i);
    parsed = !text.empty() && r.ec == std::errc() && r.ptr == last;
    v = static_cast<double>(i);
  } else {
    auto r = std::from_chars(first, last, v);
    parsed = !text.empty() && r.ec == std::errc() && r.ptr == last && std::isfinite(v);
  }
  const std::string what =
      fmt::format("{} ({} {})", name, integer ? "an integer" : "a real number", range.text());
  if (!parsed)
    return Error::invalid_argument(fmt::format("--strategy-option {}={}: '{}' is not {}", name,
                                               text, text, integer ? "an integer" : "a number") +
                                   "; " + strategy + " takes " + what);
  if (!range.contains(v) || v > limit)
    return Error::invalid_argument(fmt::format(
        "--strategy-option {}={} is out of range; {} takes {}", name, text, strategy, what));
  return v;
}

Error unknown_option(const std::string& strategy, const std::string& name,
                     const std::vector<std::string>& known) {
  std::string list;
  for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
  return Error::invalid_argument("--strategy-option '" + name + "': " + strategy +
                                 " has no such option (known: " + (list.empty() ? "none" : list) +
                                 ")");
}

std::string option_default_text(double value, bool integer) {
  return integer ? fmt::format("{}", static_cast<std::int64_t>(value)) : fmt::format("{}", value);
}

}  // namespace attune::search
