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
  return sqlite_error(db_, rc, what_);
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

Result<Stmt> Db::prepare(std::string_view sql, std::string what) const {
  sqlite3_stmt* s = nullptr;
  int rc = sqlite3_prepare_v2(h_.get(), sql.data(), static_cast<int>(sql.size()), &s, nullptr);
  // Preparing reads the schema, so a locked or damaged file can fail here too.
  if (rc != SQLITE_OK) return sqlite_error(h_.get(), rc, what);
  return Stmt(h_.get(), s, std::move(what));
}

Status Db::exec(const std::string& sql, std::string_view what) const {
  int rc = sqlite3_exec(h_.get(), sql.c_str(), nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) return sqlite_error(h_.get(), rc, what);
  return Status::success();
}

Result<std::int64_t> Db::scalar(const std::string& sql, std::string_view what) const {
  ATTUNE_ASSIGN(Stmt s, prepare(sql, std::string(what)));
  ATTUNE_ASSIGN(bool row, s.step());
  if (!row) return Error::internal(std::string(what) + ": the database answered no row");
  return s.i64(0);
}

Result<Transaction> Transaction::begin(const Db& db, Mode mode, std::string_view what) {
  ATTUNE_TRY(db.exec(mode == Mode::kImmediate ? "BEGIN IMMEDIATE" : "BEGIN", what));
  return Transaction(&db, std::string(what));
}

Transaction::~Transaction() {
  if (db_) (void)db_->exec("ROLLBACK", what_);
}

Status Transaction::commit() {
  const Db* db = db_;
  db_ = nullptr;
  Status s = db->exec("COMMIT", what_);
  if (!s.ok()) (void)db->exec("ROLLBACK", what_);
  return s;
}

}  // namespace attune::sqlite
