#include "core/verdict.h"

namespace attune {

std::string_view to_string(Verdict v) {
  switch (v) {
    case Verdict::kOk:
      return "ok";
    case Verdict::kUnsupported:
      return "unsupported";
    case Verdict::kBuildFailed:
      return "build_failed";
    case Verdict::kLaunchFailed:
      return "launch_failed";
    case Verdict::kCrashed:
      return "crashed";
    case Verdict::kTimeout:
      return "timeout";
    case Verdict::kOom:
      return "oom";
    case Verdict::kWrongOutput:
      return "wrong_output";
    case Verdict::kNonFinite:
      return "non_finite";
  }
  return "unknown";
}

std::optional<Verdict> verdict_from_string(std::string_view s) {
  for (Verdict v : kAllVerdicts)
    if (to_string(v) == s) return v;
  return std::nullopt;
}

}  // namespace attune
