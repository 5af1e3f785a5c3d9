#include "store/sqlite/sqlite_db.h"

namespace attune::sqlite {

Error sqlite_error(sqlite3* db, int rc, std::string_view what) {
  std::string msg = std::string(what) + ": " + (db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
  const int primary = rc & 0xff;
  if (primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB) return Error::corrupt(msg);
  if (primary == SQLITE_CANTOPEN || primary == SQLITE_IOERR || primary == SQLITE_READONLY ||
      primary == SQLITE_FULL || primary == SQLITE_PERM)
    return Error::io(msg);
  return Error::internal(msg);
}

Result<bool> Stmt::step() {
  int rc = sqlite3_step(s_.get());
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return sqlite_error(db_, rc, sqlite3_sql(s_.get()));
}

Status Stmt::run() {
  while (true) {
    ATTUNE_ASSIGN(bool row, step());
    if (!row) return Status::success();
  }
}

std::string Stmt::text(int col) const {
  const unsigned char* p = sqlite3_column_text(s_.get(), col);
  if (!p) return {};
  return std::string(reinterpret_cast<const char*>(p),
                     static_cast<std::size_t>(sqlite3_column_bytes(s_.get(), col)));
}

Result<Stmt> Db::prepare(std::string_view sql) const {
  sqlite3_stmt* s = nullptr;
  int rc = sqlite3_prepare_v2(h_.get(), sql.data(), static_cast<int>(sql.size()), &s, nullptr);
  if (rc != SQLITE_OK) return sqlite_error(h_.get(), rc, "preparing " + std::string(sql));
  return Stmt(h_.get(), s);
}

Status Db::exec(const std::string& sql) const {
  char* err = nullptr;
  int rc = sqlite3_exec(h_.get(), sql.c_str(), nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    sqlite3_free(err);
    return sqlite_error(h_.get(), rc, "executing SQL");
  }
  return Status::success();
}

Result<std::int64_t> Db::scalar(const std::string& sql) const {
  ATTUNE_ASSIGN(Stmt s, prepare(sql));
  ATTUNE_ASSIGN(bool row, s.step());
  if (!row) return Error::internal("no row from: " + sql);
  return s.i64(0);
}

}  // namespace attune::sqlite
