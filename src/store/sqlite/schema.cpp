#include "store/sqlite/schema.h"

#include <limits>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "store/migrations.h"

namespace attune::sqlite {

int current_schema_version() {
  return store_schema::current_version();
}

Result<int> schema_version(const Db& db) {
  constexpr const char* kReading = "reading the schema version";
  ATTUNE_ASSIGN(std::int64_t has, db.scalar("SELECT count(*) FROM sqlite_master "
                                            "WHERE type = 'table' AND name = 'attune_schema'",
                                            kReading));
  if (!has) return 0;
  ATTUNE_ASSIGN(std::int64_t rows, db.scalar("SELECT count(*) FROM attune_schema", kReading));
  if (rows != 1)
    return Error::corrupt(
        fmt::format("attune_schema holds {} rows, where attune writes one", rows));
  ATTUNE_ASSIGN(Stmt s, db.prepare("SELECT typeof(version), version, quote(version) "
                                   "FROM attune_schema",
                                   kReading));
  ATTUNE_ASSIGN(bool row, s.step());
  if (!row) return Error::corrupt("attune_schema holds no row");
  // Every attune that wrote a version wrote an integer from 1 up; a version that is not one
  // cannot be migrated from (and indexing the migrations with it was a crash).
  const std::int64_t v = s.i64(1);
  if (s.text(0) != "integer" || v < 1 || v > std::numeric_limits<int>::max())
    return Error::corrupt(fmt::format("schema version {} is not one any attune writes", s.text(2)));
  return static_cast<int>(v);
}

Status migrate(const Db& db, int from, int to) {
  if (from < 0 || to > current_schema_version() || from > to)
    return Error::internal(fmt::format("no migration from schema v{} to v{}", from, to));
  for (int v = from + 1; v <= to; ++v) {
    const std::string what = fmt::format("migrating the database to schema v{}", v);
    ATTUNE_TRY(db.exec(store_schema::migration(v, store_schema::Dialect::kSqlite), what));
    ATTUNE_TRY(db.exec(fmt::format("UPDATE attune_schema SET version = {}", v), what));
  }
  return Status::success();
}

}  // namespace attune::sqlite
