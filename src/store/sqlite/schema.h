// The SQLite store's schema as forward migrations: version N is reached from N-1 by migration N.
// A database records its version in attune_schema and carries attune's application_id, so a
// foreign SQLite file is told apart from an older attune database.
#pragma once

#include <cstdint>

#include "core/error.h"
#include "store/sqlite/sqlite_db.h"

namespace attune::sqlite {

// 'ATUN' in the SQLite header's application_id field.
inline constexpr std::int32_t kApplicationId = 0x4154554e;

int current_schema_version();
// The database's schema version; 0 for a database with no attune schema yet. An attune_schema
// that does not hold exactly one integer version of 1 or more is Error::corrupt (a version above
// current_schema_version() is returned: the caller names it as a newer attune's).
Result<int> schema_version(const Db& db);
// Applies migrations from+1 .. to with their version bumps, inside the caller's transaction:
// SqliteStore::open runs them all in one BEGIN IMMEDIATE after re-reading the version in it, so
// processes opening one new file at once never apply a migration twice.
Status migrate(const Db& db, int from, int to);

}  // namespace attune::sqlite
