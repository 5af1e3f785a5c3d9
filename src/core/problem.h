// Problem: what is computed (op plus attributes such as shapes, dtypes, layouts, epilogue). Its
// structural key hashes what it computes, never its display name, so identical work is tuned once.
// Value type: thread-safe to copy.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "core/error.h"

namespace attune {

class Problem {
 public:
  Problem() = default;
  Problem(std::string op, std::map<std::string, std::string> attrs, std::string name = "")
      : op_(std::move(op)), attrs_(std::move(attrs)), name_(std::move(name)) {}

  const std::string& op() const { return op_; }
  const std::map<std::string, std::string>& attrs() const { return attrs_; }
  // Display name; defaults to the canonical text.
  std::string name() const { return name_.empty() ? text() : name_; }
  void set_name(std::string n) { name_ = std::move(n); }

  // nullptr when absent.
  const std::string* attr(const std::string& key) const;
  // A 0|1 flag attribute (OpSignature::flags): whether it reads 1 (absent reads 0).
  bool flag(const std::string& key) const;
  // Integer attribute, or an error naming the problem and the key.
  Result<std::int64_t> int_attr(const std::string& key) const;

  // "op:key=value,key=value" with keys sorted: what it computes, no name.
  std::string text() const;
  // 16 hex digits of the hash of text().
  std::string structural_key() const;

  // Reads "op:key=value,...". Op and keys are words; values non-empty.
  static Result<Problem> parse(const std::string& text);

 private:
  std::string op_;
  std::map<std::string, std::string> attrs_;
  std::string name_;
};

}  // namespace attune
