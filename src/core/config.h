// Config: one full assignment of a Space's knobs, in the Space's order. Its canonical text
// ("block=128,vec=4") and the hash of that text identify it in the database forever.
// Value type: thread-safe to copy.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/value.h"

namespace attune {

class Config {
 public:
  using Entry = std::pair<std::string, Value>;

  Config() = default;
  explicit Config(std::vector<Entry> entries) : entries_(std::move(entries)) {}

  const std::vector<Entry>& entries() const { return entries_; }
  bool empty() const { return entries_.empty(); }
  // nullptr when the knob is not part of this config.
  const Value* get(std::string_view name) const;

  // "name=value,name=value" in Space order; "" for a space with no knobs.
  std::string text() const;
  std::uint64_t hash() const;
  std::string hash_hex() const;

  // Reads canonical text without a Space (values typed by Value::parse). Space::parse also checks
  // the names and values against the knobs.
  static Result<Config> parse(std::string_view text);

  friend bool operator==(const Config& a, const Config& b) { return a.entries_ == b.entries_; }

 private:
  std::vector<Entry> entries_;
};

}  // namespace attune
