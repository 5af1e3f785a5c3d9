// Errors as values at module boundaries: Error carries a kind and one human line;
// Result<T> holds either a T or an Error. Value types, no shared state: thread-safe to copy.
#pragma once

#include <cassert>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace attune {

class Error {
 public:
  enum class Kind {
    kInvalidArgument,  // a user's bad input: flag, spec, shape, file contents
    kIo,               // a file or pipe could not be read or written
    kCorrupt,          // stored data is damaged or not ours
    kNotFound,
    kUnsupported,  // the request is well formed but cannot be served here
    kInternal,
  };

  static Error invalid_argument(std::string m) { return {Kind::kInvalidArgument, std::move(m)}; }
  static Error io(std::string m) { return {Kind::kIo, std::move(m)}; }
  static Error corrupt(std::string m) { return {Kind::kCorrupt, std::move(m)}; }
  static Error not_found(std::string m) { return {Kind::kNotFound, std::move(m)}; }
  static Error unsupported(std::string m) { return {Kind::kUnsupported, std::move(m)}; }
  static Error internal(std::string m) { return {Kind::kInternal, std::move(m)}; }

  Kind kind() const { return kind_; }
  const std::string& message() const { return message_; }

  // The same error with context in front: "opening attune.db: <message>".
  Error with_context(const std::string& context) const {
    return {kind_, context + ": " + message_};
  }

 private:
  Error(Kind kind, std::string message) : kind_(kind), message_(std::move(message)) {}
  Kind kind_;
  std::string message_;
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT(google-explicit-constructor)
  Result(Error error) : v_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & {
    assert(ok());
    return std::get<0>(v_);
  }
  const T& value() const& {
    assert(ok());
    return std::get<0>(v_);
  }
  T&& value() && {
    assert(ok());
    return std::get<0>(std::move(v_));
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const {
    assert(!ok());
    return std::get<1>(v_);
  }

 private:
  std::variant<T, Error> v_;
};

// Result<void>: success or an Error.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT
  static Status success() { return {}; }

  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const {
    assert(!ok_);
    return error_;
  }

 private:
  Error error_ = Error::internal("");
  bool ok_ = true;
};

// A source file as attune's tree names it ("src/cuda/cuda_device.cpp"), for messages that cite
// __FILE__: that may be absolute on the build machine, or relative to the build directory when
// ccache rewrote it ("../src/...").
inline std::string_view in_tree(std::string_view file) {
  for (std::string_view top : {"src/", "tests/", "bench/", "examples/"})
    for (std::size_t at = file.find(top); at != std::string_view::npos; at = file.find(top, at + 1))
      if (at == 0 || file[at - 1] == '/') return file.substr(at);
  return file;
}

}  // namespace attune

// Propagate an error from an expression returning Result<T> or Status.
#define ATTUNE_TRY(expr)                              \
  do {                                                \
    auto attune_try_r_ = (expr);                      \
    if (!attune_try_r_) return attune_try_r_.error(); \
  } while (0)

#define ATTUNE_CONCAT_INNER_(a, b) a##b
#define ATTUNE_CONCAT_(a, b) ATTUNE_CONCAT_INNER_(a, b)
// auto x = ATTUNE_ASSIGN_OR_RETURN-style: ATTUNE_ASSIGN(auto x, expr);
#define ATTUNE_ASSIGN(decl, expr) \
  ATTUNE_ASSIGN_IMPL_(ATTUNE_CONCAT_(attune_r_, __LINE__), decl, expr)
#define ATTUNE_ASSIGN_IMPL_(tmp, decl, expr) \
  auto tmp = (expr);                         \
  if (!tmp) return tmp.error();              \
  decl = std::move(tmp).value()
