// The tuning database's schema as one list of forward migrations for every store: version N is
// reached from N-1 by migration N, written once and rendered in each store's SQL dialect, so an
// SQLite file and a PostgreSQL database of one version hold the same tables. Pure functions.
#pragma once

#include <string>

namespace attune::store_schema {

enum class Dialect { kSqlite, kPostgres };

// The newest schema version this attune writes.
int current_version();
// Migration `version` (1 .. current_version()) in `dialect`; it does not bump attune_schema.
std::string migration(int version, Dialect dialect);

}  // namespace attune::store_schema
