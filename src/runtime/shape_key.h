// ShapeKey: one runtime call's problem as integers (op, dtype, epilogue flag, sizes), so the
// dispatch path hashes and compares a few words instead of building a Problem per call. The
// canonical Problem (and its text) is built only on the first call of a shape. Value type.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/problem.h"

namespace attune::runtime {

enum class OpKind : std::uint8_t { kGemm = 0, kRmsnorm = 1 };
enum class Dtype : std::uint8_t { kBf16 = 0, kFp16 = 1 };

// The tuner's baselines: what every miss runs (cuBLASLt's heuristic's first algorithm; the
// rmsnorm family's base config).
inline constexpr std::string_view kGemmBaselineConfig = "kernel=cublaslt,lt_algo=0,lt_split=0,lt_tile=0";
inline constexpr std::string_view kRmsnormBaselineConfig = "threads=256,rows_per_block=1,vec=1,unroll=1";

struct ShapeKey {
  OpKind op = OpKind::kGemm;
  Dtype dtype = Dtype::kBf16;
  bool flag = false;  // gemm: bias; rmsnorm: residual
  // gemm: m, n, k; rmsnorm: rows, hidden, 0. `m` is the axis a bucketed table ranges over.
  std::int64_t m = 0, n = 0, k = 0;

  friend bool operator==(const ShapeKey&, const ShapeKey&) = default;
};

inline std::uint64_t mix(std::uint64_t x) noexcept {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

inline std::uint64_t hash(const ShapeKey& s) noexcept {
  const std::uint64_t tag = static_cast<std::uint64_t>(s.op) | static_cast<std::uint64_t>(s.dtype) << 8 |
                            static_cast<std::uint64_t>(s.flag) << 16;
  return mix(mix(mix(tag ^ static_cast<std::uint64_t>(s.m)) ^ static_cast<std::uint64_t>(s.n)) ^
             static_cast<std::uint64_t>(s.k));
}

std::string_view op_name(OpKind op);
std::string_view dtype_name(Dtype d);
std::string_view baseline_config(OpKind op);
// The axis name a bucketed table of this op ranges over ("m", "rows").
std::string_view axis_name(OpKind op);

// The canonical problem of a call, as the tuner names it (attune tune --shapes reads its text).
Problem problem_of(const ShapeKey& s);

}  // namespace attune::runtime
