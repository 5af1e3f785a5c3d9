// ShapeKey: one runtime call's problem as integers (op, dtype, epilogue flag, sizes), so the
// dispatch path hashes and compares a few words instead of building a Problem per call. The
// canonical Problem (and its text) is built only on the first call of a shape. Value type.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include "core/error.h"
#include "core/op.h"
#include "core/problem.h"

namespace attune::runtime {

// The op a key is of: its signature's runtime key (core/op.h, OpSignature::runtime_key), never a
// number written here. Only op_kind() makes one.
enum class OpKind : std::uint8_t {};
enum class Dtype : std::uint8_t { kBf16 = 0, kFp16 = 1 };

// The most sizes an op's signature may have for libattune-rt to key it (gemm_rope's batch,
// sequence, KV depth, query and KV heads, head size, theta and hidden size are eight).
inline constexpr std::size_t kKeySizes = 8;

struct ShapeKey {
  OpKind op{};
  Dtype dtype = Dtype::kBf16;
  // Bit i: the signature's i-th flag (its flags, then its optional flags) is set (gemm: bias, then
  // silu_mul; rmsnorm: residual).
  std::uint8_t flags = 0;
  // The signature's sizes in order, 0 past them (gemm: m, n, k; rmsnorm: rows, hidden). The
  // first is the axis a bucketed table ranges over.
  std::array<std::int64_t, kKeySizes> sizes{};

  std::int64_t axis() const noexcept { return sizes[0]; }
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
  const std::uint64_t tag = static_cast<std::uint64_t>(s.op) |
                            static_cast<std::uint64_t>(s.dtype) << 8 |
                            static_cast<std::uint64_t>(s.flags) << 16;
  std::uint64_t h = tag;
  for (std::int64_t v : s.sizes) h = mix(h ^ static_cast<std::uint64_t>(v));
  return h;
}

// The key of a registered op that libattune-rt dispatches (its signature has a runtime key, at
// most kKeySizes sizes and eight flags); any other op is an error naming it.
Result<OpKind> op_kind(std::string_view op);
// The signature whose runtime key `op` is; nullptr for a key no registered op has.
const OpSignature* signature_of(OpKind op);

// The bit of ShapeKey::flags that `flag` of `op` sets (its place among the signature's flags, then
// optional flags); an error for an op libattune-rt does not key or a flag the op does not have.
Result<std::uint8_t> flag_bit(std::string_view op, std::string_view flag);

std::string_view dtype_name(Dtype d);
// "bf16" -> kBf16, "fp16" -> kFp16; nullopt for a dtype libattune-rt does not run.
std::optional<Dtype> dtype_of(std::string_view name);

// The key of an exact problem of a dispatched op; an unknown op or attribute, a flag other than
// 0 or 1, or a size that is not a positive 32-bit integer is refused (the table index's checks).
Result<ShapeKey> shape_key_of(const Problem& problem);
// The canonical problem of a call, as the tuner names it (attune tune --shapes reads its text);
// an error for a key of no registered op.
Result<Problem> problem_of(const ShapeKey& s);

}  // namespace attune::runtime
