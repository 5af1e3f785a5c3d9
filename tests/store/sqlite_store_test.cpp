// SqliteStore: the Store contract (tests/store/conformance.h), and what only the SQLite store
// promises: files classified before they are touched, forward migrations, WAL.
#include "store/sqlite/sqlite_store.h"

#include <gtest/gtest.h>

#include "core/config.h"
#include "store/conformance.h"
#include "store/sqlite/schema.h"
#include "support/temp_dir.h"

namespace attune {
namespace {

using testing::read_bytes;
using testing::TempDir;
using testing::write_bytes;

// A fresh database file per test, opened through open_store as `attune --db` opens it.
class SqliteStoreFactory {
 public:
  Result<std::unique_ptr<Store>> open() {
    return open_store("sqlite:" + dir_.file("conformance.db"));
  }

 private:
  testing::TempDir dir_;
};

INSTANTIATE_TYPED_TEST_SUITE_P(Sqlite, StoreConformance, SqliteStoreFactory);

DeviceFingerprint sim_device() {
  return store_rows::device();
}

// A database file as schema `version` left it, holding the sim device and problem `p`, still open
// for the test to add the rows an older attune wrote.
sqlite::Db database_at(const std::string& path, int version, const Problem& p) {
  sqlite3* raw = nullptr;
  EXPECT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
  sqlite::Db db{sqlite::DbHandle(raw)};
  EXPECT_TRUE(db.exec("PRAGMA application_id = " + std::to_string(sqlite::kApplicationId)).ok());
  EXPECT_TRUE(sqlite::migrate(db, 0, version).ok());
  EXPECT_TRUE(db.exec("INSERT INTO devices VALUES ('" + sim_device().key() +
                      "', 'sim', 'x', 'sim_1', 64, 1, '{}', 't', 't');"
                      "INSERT INTO problems VALUES ('" +
                      p.structural_key() + "', 'gemm', '" + p.text() + "', 'old', '', 't')")
                  .ok());
  return db;
}

TEST(SqliteStore, OpensInWalModeWithForeignKeysOn) {
  TempDir dir;
  auto s = SqliteStore::open(dir.file("a.db"));
  ASSERT_TRUE(s.ok()) << s.error().message();
  // WAL: readers (eval, another worker) run while a tuner writes.
  auto mode = (*s)->db().prepare("PRAGMA journal_mode");
  ASSERT_TRUE(mode.ok());
  ASSERT_TRUE(*mode->step());
  EXPECT_EQ(mode->text(0), "wal");
  EXPECT_EQ(*(*s)->db().scalar("PRAGMA foreign_keys"), 1);
  EXPECT_EQ(*(*s)->db().scalar("PRAGMA application_id"), sqlite::kApplicationId);
}

TEST(SqliteStore, RefusesATextFileAndLeavesItUntouched) {
  TempDir dir;
  std::string path = dir.file("notes.db");
  write_bytes(path, "these are my notes, not a database\n");
  auto store = SqliteStore::open(path);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.error().kind(), Error::Kind::kCorrupt);
  EXPECT_NE(store.error().message().find("not an SQLite database"), std::string::npos);
  EXPECT_EQ(read_bytes(path), "these are my notes, not a database\n");
}

TEST(SqliteStore, RefusesAnotherProgramsDatabaseAndLeavesItUntouched) {
  TempDir dir;
  std::string path = dir.file("other.db");
  {
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
    sqlite::Db db{sqlite::DbHandle(raw)};
    ASSERT_TRUE(db.exec("CREATE TABLE invoices (id INTEGER, total REAL); INSERT INTO invoices "
                        "VALUES (1, 9.5);")
                    .ok());
  }
  std::string before = read_bytes(path);
  auto store = SqliteStore::open(path);
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.error().message().find("another program"), std::string::npos)
      << store.error().message();
  EXPECT_NE(store.error().message().find("invoices"), std::string::npos);
  EXPECT_EQ(read_bytes(path), before);
}

TEST(SqliteStore, RefusesACorruptDatabase) {
  TempDir dir;
  std::string path = dir.file("a.db");
  {
    auto s = SqliteStore::open(path);
    ASSERT_TRUE(s.ok());
  }
  // Keep the header, wreck everything after it.
  std::string bytes = read_bytes(path);
  ASSERT_GT(bytes.size(), 200u);
  for (std::size_t i = 100; i < bytes.size(); ++i) bytes[i] = static_cast<char>(0xA5);
  write_bytes(path, bytes);
  std::remove((path + "-wal").c_str());
  std::remove((path + "-shm").c_str());
  auto store = SqliteStore::open(path);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(read_bytes(path), bytes);
}

TEST(SqliteStore, RefusesADatabaseFromANewerAttune) {
  TempDir dir;
  std::string path = dir.file("a.db");
  {
    auto s = SqliteStore::open(path);
    ASSERT_TRUE(s.ok());
    ASSERT_TRUE((*s)->db().exec("UPDATE attune_schema SET version = 99").ok());
  }
  auto store = SqliteStore::open(path);
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.error().message().find("newer attune"), std::string::npos);
  EXPECT_NE(store.error().message().find("v99"), std::string::npos);
}

TEST(SqliteStore, MigratesAnOlderSchemaKeepingItsRows) {
  TempDir dir;
  std::string path = dir.file("old.db");
  Problem p = *Problem::parse("gemm:m=8,n=8,k=8");
  {
    // A database as schema v1 left it: no clocks column, no search_nodes or priors tables.
    sqlite::Db db = database_at(path, 1, p);
    ASSERT_TRUE(db.exec("INSERT INTO measurements (device_key, problem_key, backend, config, "
                        "config_hash, verdict, regime, samples, median_us, min_us, max_us, noise, "
                        "created_at) VALUES ('" +
                        sim_device().key() + "', '" + p.structural_key() +
                        "', 'sim', 'a=1', 'h', 'ok', 'rank', 3, 4.5, 4.4, 4.6, 0.01, 't')")
                    .ok());
    EXPECT_FALSE(db.exec("SELECT sm_clock_mhz FROM measurements").ok());
  }
  auto store = SqliteStore::open(path);
  ASSERT_TRUE(store.ok()) << store.error().message();
  EXPECT_EQ(*sqlite::schema_version((*store)->db()), sqlite::current_schema_version());
  auto rows = (*store)->measurements({});
  ASSERT_TRUE(rows.ok()) << rows.error().message();
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_DOUBLE_EQ((*rows)[0].outcome.measurement->median_us, 4.5);
  EXPECT_EQ((*rows)[0].outcome.measurement->sm_clock_mhz, 0);  // not known in v1
  // The v2 tables exist now.
  EXPECT_TRUE((*store)
                  ->put_search_nodes(sim_device().key(), p.structural_key(), "mcts",
                                     {{"a=1", 3, 4.5, "{}"}})
                  .ok());
  EXPECT_EQ((*store)->search_nodes(sim_device().key(), p.structural_key(), "mcts")->size(), 1u);
}

TEST(SqliteStore, ADiscardedRowStaysInTheFileWithItsReason) {
  testing::TempDir dir;
  auto s = SqliteStore::open(dir.file("a.db"));
  ASSERT_TRUE(s.ok());
  Problem p = *Problem::parse("rmsnorm:rows=8,hidden=64");
  ASSERT_TRUE((*s)->put_device(sim_device()).ok());
  ASSERT_TRUE((*s)->put_problem(p).ok());
  auto id = (*s)->record(store_rows::row(p, "t=1", 3.0));
  ASSERT_TRUE(id.ok());
  ASSERT_TRUE((*s)->discard({*id}, "the anchor moved +40%").ok());
  EXPECT_TRUE((*s)->measurements({})->empty());
  EXPECT_EQ(
      *(*s)->db().scalar("SELECT count(*) FROM measurements WHERE discarded LIKE 'the anchor%'"),
      1);
}

TEST(SqliteStore, AV3DatabaseMigratesToV4KeepingEveryRow) {
  testing::TempDir dir;
  std::string path = dir.file("v3.db");
  Problem p = *Problem::parse("gemm:m=8,n=8,k=8");
  const std::string dev = sim_device().key(), key = p.structural_key();
  {
    // A database as schema v3 left it: no baselines table.
    sqlite::Db db = database_at(path, 3, p);
    ASSERT_TRUE(
        db.exec("INSERT INTO runs (command, arguments, started_at, status) VALUES ('tune', '[]', "
                "'t', 'done');"
                "INSERT INTO measurements (run_id, device_key, problem_key, backend, config, "
                "config_hash, verdict, regime, samples, median_us, min_us, max_us, noise, "
                "created_at, sm_clock_mhz, discarded) VALUES "
                "(1, '" +
                dev + "', '" + key +
                "', 'sim', 'a=1', 'h1', 'ok', 'deploy', 3, 4.5, 4.4, 4.6, 0.01, 't', 1980, NULL),"
                "(1, '" +
                dev + "', '" + key +
                "', 'sim', 'a=2', 'h2', 'ok', 'rank', 3, 9.5, 9.4, 9.6, 0.01, 't', 1980, 'drift');"
                "INSERT INTO search_nodes VALUES ('" +
                dev + "', '" + key + "', 'mcts', 'a=1', 3, 4.5, '{}', 't')")
            .ok());
    EXPECT_FALSE(db.exec("SELECT * FROM baselines").ok());
  }
  auto store = SqliteStore::open(path);
  ASSERT_TRUE(store.ok()) << store.error().message();
  EXPECT_EQ(*sqlite::schema_version((*store)->db()), sqlite::current_schema_version());
  EXPECT_EQ((*store)->runs()->size(), 1u);
  auto rows = (*store)->measurements({});
  ASSERT_TRUE(rows.ok()) << rows.error().message();
  ASSERT_EQ(rows->size(), 1u);  // the discarded row is still discarded
  EXPECT_DOUBLE_EQ((*rows)[0].outcome.measurement->median_us, 4.5);
  EXPECT_EQ((*rows)[0].regime, Regime::kDeploy);
  EXPECT_EQ(*(*store)->db().scalar("SELECT count(*) FROM measurements"), 2);
  EXPECT_EQ((*store)->search_nodes(dev, key, "mcts")->size(), 1u);
  // Rows measured before v4 have no recorded baseline; the table is there for the next run.
  EXPECT_FALSE((*store)->find_baseline(dev, key, "sim")->has_value());
  ASSERT_TRUE((*store)->put_baseline({dev, key, "sim", "a=1", "h1", ""}).ok());
  EXPECT_TRUE((*store)->find_baseline(dev, key, "sim")->has_value());
}

TEST(SqliteStore, AV4DatabaseKeepsItsCudaDeployRowsButNoLongerAnswersWithThem) {
  testing::TempDir dir;
  std::string path = dir.file("v4.db");
  Problem p = *Problem::parse("gemm:m=8,n=8,k=8");
  const std::string dev = sim_device().key(), key = p.structural_key();
  {
    // cuda deploy (timed after a memset flush), cuda rank, sim deploy.
    sqlite::Db db = database_at(path, 4, p);
    ASSERT_TRUE(db.exec("INSERT INTO measurements (device_key, problem_key, backend, config, "
                        "config_hash, verdict, "
                        "regime, samples, median_us, min_us, max_us, noise, created_at) VALUES "
                        "('" +
                        dev + "', '" + key +
                        "', 'cuda', 'a=1', 'h1', 'ok', 'deploy', 3, 4.5, 4.4, 4.6, 0.01, 't'),"
                        "('" +
                        dev + "', '" + key +
                        "', 'cuda', 'a=1', 'h1', 'ok', 'rank', 3, 3.5, 3.4, 3.6, 0.01, 't'),"
                        "('" +
                        dev + "', '" + key +
                        "', 'sim', 'a=1', 'h1', 'ok', 'deploy', 3, 5.5, 5.4, 5.6, 0.01, 't')")
                    .ok());
  }
  auto store = SqliteStore::open(path);
  ASSERT_TRUE(store.ok()) << store.error().message();
  EXPECT_EQ(*sqlite::schema_version((*store)->db()), 5);
  EXPECT_FALSE((*store)->find(dev, key, "cuda", Regime::kDeploy, "h1")->has_value());
  EXPECT_TRUE((*store)->find(dev, key, "cuda", Regime::kRank, "h1")->has_value());
  EXPECT_TRUE((*store)->find(dev, key, "sim", Regime::kDeploy, "h1")->has_value());
  EXPECT_EQ(*(*store)->db().scalar("SELECT count(*) FROM measurements"), 3);
  EXPECT_EQ(*(*store)->db().scalar(
                "SELECT count(*) FROM measurements WHERE discarded LIKE '%memset L2 flush%'"),
            1);
}

}  // namespace
}  // namespace attune
