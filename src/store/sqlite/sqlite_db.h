// Thin RAII over the SQLite C API: a connection and prepared statements whose failures come back
// as Error values carrying SQLite's message. One thread at a time per connection.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <sqlite3.h>

#include "core/error.h"

namespace attune::sqlite {

struct DbClose {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
struct StmtFinalize {
  void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
};
using DbHandle = std::unique_ptr<sqlite3, DbClose>;

class Stmt {
 public:
  Stmt(sqlite3* db, sqlite3_stmt* s) : db_(db), s_(s) {}

  Stmt& bind(int i, std::int64_t v) {
    sqlite3_bind_int64(s_.get(), i, v);
    return *this;
  }
  Stmt& bind(int i, int v) {
    sqlite3_bind_int64(s_.get(), i, v);
    return *this;
  }
  Stmt& bind(int i, double v) {
    sqlite3_bind_double(s_.get(), i, v);
    return *this;
  }
  Stmt& bind(int i, std::string_view v) {
    sqlite3_bind_text(s_.get(), i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Stmt& bind(int i, const std::string& v) { return bind(i, std::string_view(v)); }
  Stmt& bind(int i, const char* v) { return bind(i, std::string_view(v)); }
  Stmt& bind_blob(int i, std::string_view v) {
    sqlite3_bind_blob(s_.get(), i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Stmt& bind_null(int i) {
    sqlite3_bind_null(s_.get(), i);
    return *this;
  }
  template <typename T>
  Stmt& bind(int i, const std::optional<T>& v) {
    return v ? bind(i, *v) : bind_null(i);
  }

  // Makes the statement ready to run again with new bindings.
  Stmt& reset() {
    sqlite3_reset(s_.get());
    sqlite3_clear_bindings(s_.get());
    return *this;
  }
  // true: a row is ready; false: done.
  Result<bool> step();
  // Steps to completion, expecting no rows.
  Status run();

  bool is_null(int col) const { return sqlite3_column_type(s_.get(), col) == SQLITE_NULL; }
  std::int64_t i64(int col) const { return sqlite3_column_int64(s_.get(), col); }
  double real(int col) const { return sqlite3_column_double(s_.get(), col); }
  std::string text(int col) const;

 private:
  sqlite3* db_;
  std::unique_ptr<sqlite3_stmt, StmtFinalize> s_;
};

class Db {
 public:
  Db() = default;
  explicit Db(DbHandle h) : h_(std::move(h)) {}
  sqlite3* get() const { return h_.get(); }

  Result<Stmt> prepare(std::string_view sql) const;
  Status exec(const std::string& sql) const;
  // The first column of the first row as an integer.
  Result<std::int64_t> scalar(const std::string& sql) const;

 private:
  DbHandle h_;
};

// SQLite's result code and message as an Error; corruption codes map to Error::corrupt.
Error sqlite_error(sqlite3* db, int rc, std::string_view what);

}  // namespace attune::sqlite
