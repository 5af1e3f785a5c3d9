// What every op's kernel plan reads a config and a shape with (kernels/<op>/<op>_plan.cpp): a
// knob's integer, a knob added after tables were first written, the element type's C++ name.
// Pure functions: thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/config.h"
#include "core/error.h"
#include "core/op.h"
#include "core/problem.h"

namespace attune::kernels {

inline Result<std::int64_t> knob(const Config& c, const char* name) {
  const Value* v = c.get(name);
  if (!v)
    return Error::invalid_argument(fmt::format("config '{}' has no knob '{}'", c.text(), name));
  return v->as_int();
}

// A knob added after tables were first written: a config from before it means `fallback`, what
// the kernel did then.
inline std::int64_t knob_or(const Config& c, const char* name, std::int64_t fallback) {
  const Value* v = c.get(name);
  return v ? v->as_int() : fallback;
}

// A problem of a 16-bit op read by its signature: the sizes in order, bf16 (else fp16), and its
// first flag (absent means 0). A missing size or another dtype is an error naming the problem.
struct HalfShape {
  std::vector<std::int64_t> sizes;
  bool bf16 = true;
  bool flag = false;
};
inline Result<HalfShape> half_shape(const Problem& p, const OpSignature& op) {
  HalfShape h;
  for (const std::string& name : op.sizes) {
    ATTUNE_ASSIGN(std::int64_t v, p.int_attr(name));
    h.sizes.push_back(v);
  }
  const std::string* dtype = p.attr("dtype");
  if (!dtype || (*dtype != "bf16" && *dtype != "fp16"))
    return Error::invalid_argument(op.name + " problem " + p.text() +
                                   ": dtype must be bf16 or fp16");
  h.bf16 = *dtype == "bf16";
  h.flag = !op.flags.empty() && p.flag(op.flags.front());
  return h;
}

inline const char* type_of(bool bf16) {
  return bf16 ? "__nv_bfloat16" : "__half";
}

inline unsigned ceil_div(std::int64_t a, std::int64_t b) {
  return static_cast<unsigned>((a + b - 1) / b);
}

}  // namespace attune::kernels
