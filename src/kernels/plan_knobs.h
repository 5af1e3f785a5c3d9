// What every op's kernel plan reads a config and a shape with (kernels/<op>/<op>_plan.cpp): a
// knob's integer, a knob added after tables were first written, the element type's C++ name.
// Pure functions: thread-safe.
#pragma once

#include <cstdint>

#include <fmt/format.h>

#include "core/config.h"
#include "core/error.h"
#include "core/problem.h"

namespace attune::kernels {

inline Result<std::int64_t> knob(const Config& c, const char* name) {
  const Value* v = c.get(name);
  if (!v) return Error::invalid_argument(fmt::format("config '{}' has no knob '{}'", c.text(), name));
  return v->as_int();
}

// A knob added after tables were first written: a config from before it means `fallback`, what
// the kernel did then.
inline std::int64_t knob_or(const Config& c, const char* name, std::int64_t fallback) {
  const Value* v = c.get(name);
  return v ? v->as_int() : fallback;
}

// Whether a 16-bit problem is bf16 (else fp16); any other dtype is an error naming the problem.
inline Result<bool> is_bf16(const Problem& p) {
  const std::string* dtype = p.attr("dtype");
  if (!dtype || (*dtype != "bf16" && *dtype != "fp16"))
    return Error::invalid_argument(p.op() + " problem " + p.text() + ": dtype must be bf16 or fp16");
  return *dtype == "bf16";
}

// A 0|1 flag attribute; absent means 0.
inline bool flag_of(const Problem& p, const char* name) {
  const std::string* v = p.attr(name);
  return v && *v == "1";
}

inline const char* type_of(bool bf16) { return bf16 ? "__nv_bfloat16" : "__half"; }

inline unsigned ceil_div(std::int64_t a, std::int64_t b) { return static_cast<unsigned>((a + b - 1) / b); }

}  // namespace attune::kernels
