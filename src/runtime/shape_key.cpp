#include "runtime/shape_key.h"

#include <algorithm>
#include <climits>
#include <string>

#include <fmt/format.h>

namespace attune::runtime {

namespace {
// A key holds kKeySizes sizes and one flag: an op that needs more cannot be dispatched by it.
bool fits_key(const OpSignature& op) {
  return op.runtime_key && op.sizes.size() <= kKeySizes && op.flags.size() <= 1;
}
}  // namespace

Result<OpKind> op_kind(std::string_view name) {
  const OpSignature* op = find_op(name);
  if (!op || !op->runtime_key)
    return Error::invalid_argument(
        fmt::format("libattune-rt has no entry point for op '{}'", name));
  if (!fits_key(*op))
    return Error::internal(fmt::format(
        "op '{}' has more sizes or flags than libattune-rt's key holds ({}, 1)", name, kKeySizes));
  return static_cast<OpKind>(*op->runtime_key);
}

const OpSignature* signature_of(OpKind kind) {
  for (const OpSignature* op : registered_ops())
    if (op->runtime_key && static_cast<OpKind>(*op->runtime_key) == kind && fits_key(*op))
      return op;
  return nullptr;
}

std::string_view dtype_name(Dtype d) {
  return d == Dtype::kBf16 ? "bf16" : "fp16";
}

std::optional<Dtype> dtype_of(std::string_view name) {
  if (name == "bf16") return Dtype::kBf16;
  if (name == "fp16") return Dtype::kFp16;
  return std::nullopt;
}

Result<ShapeKey> shape_key_of(const Problem& p) {
  ATTUNE_ASSIGN(OpKind kind, op_kind(p.op()));
  const OpSignature& op = *signature_of(kind);
  ShapeKey key;
  key.op = kind;
  for (const auto& [k, v] : p.attrs()) {
    const bool known = k == "dtype" ||
                       std::find(op.flags.begin(), op.flags.end(), k) != op.flags.end() ||
                       std::find(op.sizes.begin(), op.sizes.end(), k) != op.sizes.end();
    if (!known)
      return Error::invalid_argument(
          fmt::format("attribute '{}' is not one libattune-rt dispatches {} on", k, op.name));
  }
  const std::string* dtype = p.attr("dtype");
  const std::optional<Dtype> d = dtype ? dtype_of(*dtype) : std::nullopt;
  if (!d)
    return Error::invalid_argument(
        fmt::format("{}: libattune-rt runs bf16 and fp16 only", p.text()));
  key.dtype = *d;
  if (!op.flags.empty())
    if (const std::string* f = p.attr(op.flags[0])) {
      if (*f != "0" && *f != "1")
        return Error::invalid_argument(fmt::format("{} must be 0 or 1", op.flags[0]));
      key.flag = *f == "1";
    }
  for (std::size_t s = 0; s < op.sizes.size(); ++s) {
    auto v = p.int_attr(op.sizes[s]);
    if (!v || *v < 1 || *v > INT32_MAX)
      return Error::invalid_argument(
          fmt::format("'{}' must be a positive 32-bit integer", op.sizes[s]));
    key.sizes[s] = *v;
  }
  return key;
}

Result<Problem> problem_of(const ShapeKey& s) {
  const OpSignature* op = signature_of(s.op);
  if (!op)
    return Error::invalid_argument(
        fmt::format("no registered op has libattune-rt key {}", static_cast<unsigned>(s.op)));
  std::map<std::string, std::string> attrs = {{"dtype", std::string(dtype_name(s.dtype))}};
  for (std::size_t i = 0; i < op->sizes.size(); ++i)
    attrs[op->sizes[i]] = std::to_string(s.sizes[i]);
  if (!op->flags.empty()) attrs.emplace(op->flags[0], s.flag ? "1" : "0");
  return Problem(op->name, std::move(attrs));
}

}  // namespace attune::runtime
