// The correctness gate's comparison: a candidate's output against an independent reference in
// higher precision. Outputs are poisoned before the run so unwritten elements are caught; NaN
// never passes. Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "core/measurement.h"
#include "core/verdict.h"

namespace attune {

// Per-dtype tolerance on the relative error max_i |out_i - ref_i| / max(|ref_i|, rms(ref), floor).
// The RMS of the reference as a floor keeps an element that cancels to nearly zero from failing
// on honest rounding of its large terms.
struct Tolerance {
  double rtol = 1e-5;
  double floor = 1e-6;  // absolute floor for an all-zero reference
};

// fp64, fp32, tf32, fp16, bf16, fp8; unknown dtypes get fp32's tolerance.
Tolerance tolerance_for(std::string_view dtype, std::int64_t reduction_length = 1);

// A quiet NaN with a payload no arithmetic produces: an element still holding it was never
// written by the candidate.
inline constexpr std::uint32_t kPoisonBits = 0x7fc0deadU;
void poison(std::span<float> out);

struct Comparison {
  Verdict verdict = Verdict::kOk;  // ok, wrong_output or non_finite
  ErrorCheck check;
  std::string message;  // "" when ok
  std::size_t unwritten = 0;
  std::size_t non_finite = 0;
  std::size_t mismatched = 0;
  std::size_t worst_index = 0;
};

Comparison compare(std::span<const float> out, std::span<const double> ref, const Tolerance& tol);
// The same for outputs of any element type, widened to double by the caller, with unwritten[i]
// set where the raw output still held that type's poison pattern.
Comparison compare_widened(std::span<const double> out, std::span<const std::uint8_t> unwritten,
                           std::span<const double> ref, const Tolerance& tol);

}  // namespace attune
