#include "verify/compare.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <vector>

#include <fmt/format.h>

namespace attune {

Tolerance tolerance_for(std::string_view dtype, std::int64_t reduction_length) {
  // 16-bit outputs of fp32-accumulated work are judged by their own rounding (bf16 keeps 8
  // significant bits, fp16 11) plus the fp32 accumulation, whose rounding error grows like
  // sqrt(k) ulps over a length-k reduction of random inputs. The allowance is about 5 ulps of
  // the output format, element-wise: on the H200 cuBLASLt's own algorithms with a bias epilogue
  // (rounding twice) reached 0.0103 relative error in bf16 and split-K variants 0.0136, fp16
  // variants 0.0032; a broken variant was off by 0.3.
  const double growth = std::sqrt(static_cast<double>(std::max<std::int64_t>(1, reduction_length)));
  const double fp32_acc = 1e-6 * growth;
  if (dtype == "fp64") return {1e-12 * growth, 1e-12};
  if (dtype == "bf16") return {2e-2 + fp32_acc, 1e-6};
  if (dtype == "fp16") return {4e-3 + fp32_acc, 1e-6};
  if (dtype == "fp8") return {1.25e-1, 1e-6};
  if (dtype == "tf32") return {2e-3 * growth, 1e-6};
  return {1e-5 * growth, 1e-6};
}

void poison(std::span<float> out) {
  std::fill(out.begin(), out.end(), std::bit_cast<float>(kPoisonBits));
}

Comparison compare(std::span<const float> out, std::span<const double> ref, const Tolerance& tol) {
  std::vector<double> wide(out.size());
  std::vector<std::uint8_t> unwritten(out.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    wide[i] = out[i];
    unwritten[i] = std::bit_cast<std::uint32_t>(out[i]) == kPoisonBits;
  }
  return compare_widened(wide, unwritten, ref, tol);
}

Comparison compare_widened(std::span<const double> out, std::span<const std::uint8_t> unwritten,
                           std::span<const double> ref, const Tolerance& tol) {
  Comparison c;
  c.check.metric = "max_rel_err";
  c.check.tolerance = tol.rtol;
  if (out.size() != ref.size() || unwritten.size() != out.size()) {
    c.verdict = Verdict::kWrongOutput;
    c.check.value = INFINITY;
    c.message = fmt::format("output has {} elements, reference {}", out.size(), ref.size());
    return c;
  }
  double sum_sq = 0;
  for (double r : ref) sum_sq += r * r;
  const double floor =
      std::max(tol.floor, ref.empty() ? 0.0 : std::sqrt(sum_sq / static_cast<double>(ref.size())));
  double worst = 0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (unwritten[i]) {
      ++c.unwritten;
      continue;
    }
    const double o = out[i];
    if (!std::isfinite(o)) {
      ++c.non_finite;
      continue;
    }
    double err = std::fabs(o - ref[i]) / std::max(std::fabs(ref[i]), floor);
    if (err > tol.rtol) ++c.mismatched;
    if (err > worst) {
      worst = err;
      c.worst_index = i;
    }
  }
  c.check.value = worst;
  if (c.unwritten) {
    c.verdict = Verdict::kWrongOutput;
    c.message = fmt::format("{} of {} outputs never written", c.unwritten, out.size());
  } else if (c.non_finite) {
    c.verdict = Verdict::kNonFinite;
    c.check.value = NAN;
    c.message = fmt::format("{} of {} outputs are NaN or Inf", c.non_finite, out.size());
  } else if (c.mismatched) {
    c.verdict = Verdict::kWrongOutput;
    c.message = fmt::format(
        "{} of {} outputs off; worst at [{}]: {} vs reference {} (rel err {:.3g} > {:.3g})",
        c.mismatched, out.size(), c.worst_index, out[c.worst_index], ref[c.worst_index], worst,
        tol.rtol);
  }
  return c;
}

}  // namespace attune
