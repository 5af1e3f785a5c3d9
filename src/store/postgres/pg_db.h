// Thin layer over libpqxx for the PostgreSQL store: statements take their parameters as text (or
// NULL) and every libpqxx exception is turned into an Error at this boundary, named by what was
// being done in words and carrying the server's first line, never the SQL. One thread at a time
// per connection.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <pqxx/pqxx>

#include "core/error.h"

namespace attune::pg {

// The URL as it may be shown: a password in it (user:secret@ or password=...) becomes ***.
std::string shown_url(const std::string& url);

// Positional parameters $1, $2, ... of one statement.
class Params {
 public:
  Params& add(const std::string& text) {
    values_.emplace_back(text);
    return *this;
  }
  Params& add(const char* text) { return add(std::string(text)); }
  Params& add(std::string_view text) { return add(std::string(text)); }
  Params& add(std::int64_t v) { return add(std::to_string(v)); }
  Params& add(int v) { return add(std::to_string(v)); }
  // Shortest text that reads back as the same double.
  Params& add(double v);
  Params& add_null() {
    values_.emplace_back(std::nullopt);
    return *this;
  }
  // Bytes for a BYTEA column, in its hex input form: every byte kept, NUL included.
  Params& add_bytes(const std::string& bytes);
  // 0 as NULL: a reference to no row.
  Params& add_id_or_null(std::int64_t id) { return id ? add(id) : add_null(); }

  const std::vector<std::optional<std::string>>& values() const { return values_; }

 private:
  std::vector<std::optional<std::string>> values_;
};

// One statement in a transaction (or a nontransaction: autocommit).
pqxx::result exec(pqxx::transaction_base& tx, const std::string& sql, const Params& params = {});

// The Error a libpqxx exception stands for: a lost or refused connection is io naming the URL;
// the server's refusals (a foreign key, a constraint) are invalid_argument; "what" comes first.
Error error_from(const std::exception& e, const std::string& what, const std::string& url);

// Runs f, a function returning Result<T> or Status, turning any exception into its Error.
template <typename F>
auto guarded(const std::string& what, const std::string& url, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const std::exception& e) {
    return error_from(e, what, url);
  }
}

// A field as text; "" for NULL.
inline std::string text(const pqxx::field& f) {
  return f.is_null() ? std::string() : f.as<std::string>();
}
inline std::int64_t i64(const pqxx::field& f) {
  return f.is_null() ? 0 : f.as<std::int64_t>();
}
inline double real(const pqxx::field& f) {
  return f.is_null() ? 0.0 : f.as<double>();
}
// A BYTEA field's bytes.
inline std::string bytes(const pqxx::field& f) {
  return f.is_null() ? std::string() : pqxx::binarystring(f).str();
}

}  // namespace attune::pg
