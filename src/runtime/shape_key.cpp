#include "runtime/shape_key.h"

#include <algorithm>
#include <climits>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace attune::runtime {

namespace {
constexpr std::size_t kKeyFlags = 8;  // ShapeKey::flags' bits

// The signature's flags in key order: its flags, then its optional flags.
std::vector<std::string> key_flags(const OpSignature& op) {
  std::vector<std::string> out = op.flags;
  out.insert(out.end(), op.optional_flags.begin(), op.optional_flags.end());
  return out;
}

// A key holds kKeySizes sizes and eight flags: an op that needs more cannot be dispatched by it.
bool fits_key(const OpSignature& op) {
  return op.runtime_key && op.sizes.size() <= kKeySizes &&
         op.flags.size() + op.optional_flags.size() <= kKeyFlags;
}
}  // namespace

Result<OpKind> op_kind(std::string_view name) {
  const OpSignature* op = find_op(name);
  if (!op || !op->runtime_key)
    return Error::invalid_argument(
        fmt::format("libattune-rt has no entry point for op '{}'", name));
  if (!fits_key(*op))
    return Error::internal(
        fmt::format("op '{}' has more sizes or flags than libattune-rt's key holds ({}, {})", name,
                    kKeySizes, kKeyFlags));
  return static_cast<OpKind>(*op->runtime_key);
}

Result<std::uint8_t> flag_bit(std::string_view op, std::string_view flag) {
  ATTUNE_ASSIGN(OpKind kind, op_kind(op));
  const std::vector<std::string> flags = key_flags(*signature_of(kind));
  const auto at = std::find(flags.begin(), flags.end(), flag);
  if (at == flags.end())
    return Error::invalid_argument(fmt::format("op '{}' has no flag '{}'", op, flag));
  return static_cast<std::uint8_t>(1u << (at - flags.begin()));
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
  const std::vector<std::string> flags = key_flags(op);
  for (const auto& [k, v] : p.attrs()) {
    const bool known = k == "dtype" || std::find(flags.begin(), flags.end(), k) != flags.end() ||
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
  for (std::size_t i = 0; i < flags.size(); ++i)
    if (const std::string* f = p.attr(flags[i])) {
      if (*f != "0" && *f != "1")
        return Error::invalid_argument(fmt::format("{} must be 0 or 1", flags[i]));
      if (*f == "1") key.flags = static_cast<std::uint8_t>(key.flags | (1u << i));
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
  const std::vector<std::string> flags = key_flags(*op);
  for (std::size_t i = 0; i < flags.size(); ++i) {
    const bool set = (s.flags >> i) & 1u;
    // An optional flag is written only when set (OpSignature::optional_flags).
    if (set || i < op->flags.size()) attrs.emplace(flags[i], set ? "1" : "0");
  }
  return Problem(op->name, std::move(attrs));
}

}  // namespace attune::runtime
