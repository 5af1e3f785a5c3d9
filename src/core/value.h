// A knob option's value: an integer, a real or a word. Canonical text is what configs, hashes
// and the database store, so it must be stable. Value type: thread-safe to copy.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>

namespace attune {

class Value {
 public:
  Value() : v_(std::int64_t{0}) {}
  Value(std::int64_t i) : v_(i) {}              // NOLINT(google-explicit-constructor)
  Value(int i) : v_(std::int64_t{i}) {}         // NOLINT(google-explicit-constructor)
  Value(double d) : v_(d) {}                    // NOLINT(google-explicit-constructor)
  Value(std::string s) : v_(std::move(s)) {}    // NOLINT(google-explicit-constructor)
  Value(const char* s) : v_(std::string(s)) {}  // NOLINT(google-explicit-constructor)

  bool is_int() const { return v_.index() == 0; }
  bool is_real() const { return v_.index() == 1; }
  bool is_word() const { return v_.index() == 2; }

  // Integer view; a real is truncated, a word is 0. Constraints over numeric knobs use this.
  std::int64_t as_int() const;
  double as_real() const;
  const std::string& as_word() const;

  // Canonical text: integers in decimal, reals in shortest round-trip form, words verbatim.
  std::string text() const;

  // Reads "12" as an integer, "1.5" or "1e3" as a real, anything else as a word.
  static Value parse(const std::string& text);

  friend bool operator==(const Value& a, const Value& b) { return a.v_ == b.v_; }

 private:
  std::variant<std::int64_t, double, std::string> v_;
};

}  // namespace attune
