// Thin RAII over the SQLite C API: a connection and prepared statements whose failures come back
// as Error values carrying SQLite's message after what was being done, in words ("recording a
// measurement: database is locked"), never the statement's SQL. One thread at a time per
// connection.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

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
  // `what` says in words what running the statement does, for its error messages.
  Stmt(sqlite3* db, sqlite3_stmt* s, std::string what) : db_(db), s_(s), what_(std::move(what)) {}

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
  std::string what_;
};

class Db {
 public:
  Db() = default;
  explicit Db(DbHandle h) : h_(std::move(h)) {}
  sqlite3* get() const { return h_.get(); }

  // `what` names the step in words ("recording a measurement"): a failure reads
  // "<what>: <SQLite's message>". The defaults are for tests and one-off statements.
  Result<Stmt> prepare(std::string_view sql, std::string what = "querying the database") const;
  Status exec(const std::string& sql, std::string_view what = "updating the database") const;
  // The first column of the first row as an integer.
  Result<std::int64_t> scalar(const std::string& sql,
                              std::string_view what = "querying the database") const;

 private:
  DbHandle h_;
};

// One transaction on a Db, rolled back when it goes out of scope without commit(): every early
// return of an error leaves nothing half-written. Move-only.
class Transaction {
 public:
  enum class Mode { kDeferred, kImmediate };  // kDeferred: a read snapshot; kImmediate: writes
  static Result<Transaction> begin(const Db& db, Mode mode, std::string_view what);
  Transaction(Transaction&& other) noexcept : db_(other.db_), what_(std::move(other.what_)) {
    other.db_ = nullptr;
  }
  Transaction& operator=(Transaction&&) = delete;
  Transaction(const Transaction&) = delete;
  ~Transaction();
  Status commit();

 private:
  Transaction(const Db* db, std::string what) : db_(db), what_(std::move(what)) {}
  const Db* db_;
  std::string what_;
};

// SQLite's result code and message as an Error; corruption codes map to Error::corrupt.
Error sqlite_error(sqlite3* db, int rc, std::string_view what);

}  // namespace attune::sqlite
