// 16-bit float formats on the host: conversions (round to nearest even) and fresh random fills
// for inputs. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <cstring>
#include <random>
#include <string_view>
#include <vector>

namespace attune::cuda {

enum class Half { kBf16, kFp16 };

inline float bf16_to_float(std::uint16_t b) {
  std::uint32_t u = static_cast<std::uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline std::uint16_t float_to_bf16(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;  // NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>(u >> 16);
}

inline float fp16_to_float(std::uint16_t h) {
  _Float16 x;
  std::memcpy(&x, &h, 2);
  return static_cast<float>(x);
}

inline std::uint16_t float_to_fp16(float f) {
  _Float16 x = static_cast<_Float16>(f);
  std::uint16_t h;
  std::memcpy(&h, &x, 2);
  return h;
}

inline float half_to_float(Half t, std::uint16_t v) {
  return t == Half::kBf16 ? bf16_to_float(v) : fp16_to_float(v);
}
inline std::uint16_t float_to_half(Half t, float f) {
  return t == Half::kBf16 ? float_to_bf16(f) : float_to_fp16(f);
}

// A 16-bit NaN with a payload no arithmetic produces: an output still holding it was never written.
inline constexpr std::uint16_t kPoison16 = 0x7fad;

// Uniform values in [lo, hi), rounded to the format; fresh from the seed.
inline std::vector<std::uint16_t> random_halves(Half t, std::size_t n, std::uint64_t seed,
                                                float lo = -1.f, float hi = 1.f) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<std::uint16_t> v(n);
  for (auto& x : v) x = float_to_half(t, u(g));
  return v;
}

}  // namespace attune::cuda
