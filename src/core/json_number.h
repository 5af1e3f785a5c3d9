// Whole numbers read from JSON documents a user may have edited (tables, device fingerprints):
// a fraction, a string or a number out of range is an error, never a cast (a cast of 1e300 to
// int is undefined; 1.99 would silently read as 1). Pure; thread-safe.
#pragma once

#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace attune {

// The whole number `v` holds when it lies in [lo, hi]; otherwise one line naming `what`.
Result<std::int64_t> json_whole_number(const nlohmann::json& v, std::string_view what,
                                       std::int64_t lo, std::int64_t hi);

}  // namespace attune
