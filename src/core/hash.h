// Stable 64-bit hashing (FNV-1a) for config hashes and structural keys. The values are stored in
// databases and tables, so the function must never change. Pure functions: thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace attune {

std::uint64_t fnv1a64(std::string_view bytes, std::uint64_t seed = 0xcbf29ce484222325ULL);

// 16 lowercase hex digits.
std::string hex64(std::uint64_t v);

// splitmix64: a well-mixed 64-bit function of a 64-bit input (deterministic seeding).
std::uint64_t mix64(std::uint64_t x);

}  // namespace attune
