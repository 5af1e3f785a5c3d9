#include "runtime/shape_key.h"

#include <string>

namespace attune::runtime {

std::string_view op_name(OpKind op) { return op == OpKind::kGemm ? "gemm" : "rmsnorm"; }
std::string_view dtype_name(Dtype d) { return d == Dtype::kBf16 ? "bf16" : "fp16"; }
std::string_view baseline_config(OpKind op) { return op == OpKind::kGemm ? kGemmBaselineConfig : kRmsnormBaselineConfig; }
std::string_view axis_name(OpKind op) { return op == OpKind::kGemm ? "m" : "rows"; }

Problem problem_of(const ShapeKey& s) {
  const std::string flag = s.flag ? "1" : "0";
  if (s.op == OpKind::kGemm)
    return Problem("gemm", {{"m", std::to_string(s.m)}, {"n", std::to_string(s.n)}, {"k", std::to_string(s.k)},
                            {"dtype", std::string(dtype_name(s.dtype))}, {"bias", flag}});
  return Problem("rmsnorm", {{"rows", std::to_string(s.m)}, {"hidden", std::to_string(s.n)},
                             {"dtype", std::string(dtype_name(s.dtype))}, {"residual", flag}});
}

}  // namespace attune::runtime
