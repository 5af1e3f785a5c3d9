// Verdict: how a candidate ended. Stored in the database by these names; never renumber.
#pragma once

#include <array>
#include <optional>
#include <string_view>

namespace attune {

enum class Verdict {
  kOk,
  kUnsupported,  // refused before any build: an impossible config
  kBuildFailed,
  kLaunchFailed,
  kCrashed,  // the worker died (signal, abort, illegal address)
  kTimeout,  // the worker passed its deadline and was killed
  kOom,
  kWrongOutput,
  kNonFinite,
};

inline constexpr std::array<Verdict, 9> kAllVerdicts = {
    Verdict::kOk,           Verdict::kUnsupported, Verdict::kBuildFailed,
    Verdict::kLaunchFailed, Verdict::kCrashed,     Verdict::kTimeout,
    Verdict::kOom,          Verdict::kWrongOutput, Verdict::kNonFinite};

std::string_view to_string(Verdict v);
std::optional<Verdict> verdict_from_string(std::string_view s);

}  // namespace attune
