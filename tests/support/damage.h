// Damages an SQLite database file the way a bad disk or a torn copy does: one page of a table's
// b-tree overwritten in place, the file header and every other page left as they were.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <fstream>
#include <string>

namespace attune::testing {

// Overwrites the root page of `table` (an interior page once the table spans several) with a
// pattern; false when the file or table cannot be read. The WAL is checkpointed into the file
// first, so what is damaged is what every later reader sees.
inline bool damage_table_page(const std::string& path, const std::string& table) {
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) return false;
  std::int64_t page_size = 0, root = 0;
  sqlite3_stmt* s = nullptr;
  const std::string sql =
      "SELECT (SELECT page_size FROM pragma_page_size), rootpage FROM sqlite_master "
      "WHERE type = 'table' AND name = '" +
      table + "'";
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr) == SQLITE_OK &&
      sqlite3_step(s) == SQLITE_ROW) {
    page_size = sqlite3_column_int64(s, 0);
    root = sqlite3_column_int64(s, 1);
  }
  sqlite3_finalize(s);
  sqlite3_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)", nullptr, nullptr, nullptr);
  sqlite3_close(db);
  if (page_size <= 0 || root <= 1) return false;
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  if (!f) return false;
  f.seekp((root - 1) * page_size);
  const std::string garbage(static_cast<std::size_t>(page_size), '\xA5');
  f.write(garbage.data(), static_cast<std::streamsize>(garbage.size()));
  return static_cast<bool>(f);
}

}  // namespace attune::testing
