#include "core/json_number.h"

#include <fmt/format.h>

namespace attune {

Result<std::int64_t> json_whole_number(const nlohmann::json& v, std::string_view what,
                                       std::int64_t lo, std::int64_t hi) {
  if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(hi))
    return Error::invalid_argument(fmt::format("{} {} is more than {}", what, v.dump(), hi));
  if (!v.is_number_integer())
    return Error::invalid_argument(
        fmt::format("{} must be a whole number, not {}", what, v.dump()));
  const std::int64_t n = v.get<std::int64_t>();
  if (n < lo || n > hi)
    return Error::invalid_argument(fmt::format("{} {} is not in [{}, {}]", what, n, lo, hi));
  return n;
}

}  // namespace attune
