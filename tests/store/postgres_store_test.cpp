// PostgresStore: the Store contract (tests/store/conformance.h) on a database of its own per test
// on the throwaway cluster (tools/pg-test-cluster), and what only a server store promises: a
// database of another program, a damaged or newer schema, or one missing a table or column of
// its version refused with nothing touched, an unreachable server named in one line with its
// password elided, workers creating one new database at once.
#include "store/postgres/pg_store.h"

#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "store/conformance.h"
#include "store/migrations.h"
#include "support/postgres.h"

namespace attune {
namespace {

using testing::TestDatabase;

class PostgresStoreFactory {
 public:
  std::string unavailable() const { return db_.url().empty() ? db_.why_not() : ""; }
  bool must_fail() const { return db_.must_fail(); }
  Result<std::unique_ptr<Store>> open() { return open_store(db_.url()); }

 private:
  TestDatabase db_;
};

}  // namespace

INSTANTIATE_TYPED_TEST_SUITE_P(Postgres, StoreConformance, PostgresStoreFactory);

namespace {

std::int64_t count(const TestDatabase& db, const std::string& sql) {
  pqxx::connection c(db.url());
  pqxx::nontransaction tx(c);
  return tx.exec1(sql)[0].as<std::int64_t>();
}

TEST(PostgresStore, AnEmptyDatabaseGetsTheSchemaOfTheSqliteStore) {
  TestDatabase db;
  ATTUNE_NEED_POSTGRES(db);
  auto s = open_store(db.url());
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_EQ(count(db, "SELECT version FROM attune_schema"), store_schema::current_version());
  for (const char* table : {"runs", "devices", "problems", "measurements", "search_nodes", "priors",
                            "baselines", "claims", "work_items"})
    EXPECT_EQ(count(db, std::string("SELECT count(*) FROM information_schema.tables WHERE "
                                    "table_name = '") +
                            table + "'"),
              1)
        << table;
}

TEST(PostgresStore, RefusesADatabaseOfAnotherProgramAndTouchesNothing) {
  TestDatabase db;
  ATTUNE_NEED_POSTGRES(db);
  db.exec("CREATE TABLE invoices (id int); INSERT INTO invoices VALUES (1)");
  auto s = open_store(db.url());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("another program (invoices)"), std::string::npos)
      << s.error().message();
  EXPECT_EQ(s.error().message().find('\n'), std::string::npos);
  EXPECT_EQ(count(db,
                  "SELECT count(*) FROM information_schema.tables WHERE table_schema = "
                  "'public'"),
            1);
}

TEST(PostgresStore, RefusesADatabaseFromANewerAttuneAndADamagedOne) {
  TestDatabase db;
  ATTUNE_NEED_POSTGRES(db);
  ASSERT_TRUE(open_store(db.url()).ok());
  const int newer = store_schema::current_version() + 1;
  db.exec("UPDATE attune_schema SET version = " + std::to_string(newer));
  auto s = open_store(db.url());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().kind(), Error::Kind::kUnsupported);
  EXPECT_NE(s.error().message().find("newer attune (schema v" + std::to_string(newer)),
            std::string::npos)
      << s.error().message();
  EXPECT_EQ(count(db, "SELECT version FROM attune_schema"), newer);  // left as it was
  db.exec("INSERT INTO attune_schema VALUES (1)");
  auto damaged = open_store(db.url());
  ASSERT_FALSE(damaged.ok());
  EXPECT_EQ(damaged.error().kind(), Error::Kind::kCorrupt);
  EXPECT_NE(damaged.error().message().find("holds 2 rows"), std::string::npos)
      << damaged.error().message();
}

// A database as a tuner killed mid-run leaves it: one run still 'running' whose process is gone,
// which any open that goes on to write closes as interrupted.
void leave_an_orphaned_run(const TestDatabase& db) {
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    auto s = open_store(db.url());
    if (!s.ok()) _exit(1);
    RunInfo run;
    run.command = "tune";
    run.arguments = "[]";
    _exit((*s)->begin_run(run).ok() ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  ASSERT_EQ(count(db, "SELECT count(*) FROM runs WHERE status = 'running'"), 1);
}

TEST(PostgresStore, ADatabaseMissingATableOrColumnIsRefusedBeforeAnyWrite) {
  for (const auto& [sql, what] : std::vector<std::pair<std::string, std::string>>{
           {"DROP TABLE measurements", "without table measurements"},
           {"ALTER TABLE measurements DROP COLUMN verdict", "without column measurements.verdict"},
           {"DROP TABLE claims; ALTER TABLE runs DROP COLUMN pid",
            "without table claims, column runs.pid"}}) {
    TestDatabase db;
    ATTUNE_NEED_POSTGRES(db);
    leave_an_orphaned_run(db);
    db.exec(sql);
    auto s = open_store(db.url());
    ASSERT_FALSE(s.ok()) << sql;
    const std::string m = s.error().message();
    EXPECT_EQ(s.error().kind(), Error::Kind::kCorrupt) << m;
    EXPECT_NE(m.find(pg::shown_url(db.url()) + " is a damaged attune database (schema v" +
                     std::to_string(store_schema::current_version()) + " " + what +
                     "); refusing to touch it"),
              std::string::npos)
        << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    // Nothing written: the orphaned run is not closed, and no table was left behind.
    EXPECT_EQ(count(db, "SELECT count(*) FROM runs WHERE status = 'running'"), 1) << sql;
    EXPECT_EQ(count(db, "SELECT count(*) FROM runs"), 1) << sql;
    EXPECT_EQ(count(db,
                    "SELECT count(*) FROM information_schema.tables WHERE table_schema NOT IN "
                    "('public', 'pg_catalog', 'information_schema')"),
              0)
        << sql;
  }
}

TEST(PostgresStore, AnOlderDatabaseMissingATableOfItsVersionIsRefusedBeforeMigrating) {
  TestDatabase db;
  ATTUNE_NEED_POSTGRES(db);
  // Version 5, as an attune of then wrote it, then damaged: the column came with v3.
  for (int v = 1; v <= 5; ++v)
    db.exec(store_schema::migration(v, store_schema::Dialect::kPostgres));
  db.exec("UPDATE attune_schema SET version = 5");
  db.exec("ALTER TABLE measurements DROP COLUMN discarded");
  auto s = open_store(db.url());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("(schema v5 without column measurements.discarded)"),
            std::string::npos)
      << s.error().message();
  EXPECT_EQ(count(db, "SELECT version FROM attune_schema"), 5);
  EXPECT_EQ(count(db, "SELECT count(*) FROM information_schema.tables WHERE table_name = 'claims'"),
            0);  // migration 6 never ran
}

TEST(PostgresStore, ADatabaseWithTablesAndColumnsAUserAddedStillOpens) {
  TestDatabase db;
  ATTUNE_NEED_POSTGRES(db);
  leave_an_orphaned_run(db);
  db.exec("ALTER TABLE runs ADD COLUMN note TEXT; CREATE TABLE my_notes (id int)");
  auto s = open_store(db.url());
  ASSERT_TRUE(s.ok()) << s.error().message();
  // Opened and went on to write: the orphaned run is closed.
  EXPECT_EQ(count(db, "SELECT count(*) FROM runs WHERE status = 'interrupted'"), 1);
  auto again = open_store(db.url());
  ASSERT_TRUE(again.ok()) << again.error().message();
  EXPECT_EQ(count(db,
                  "SELECT count(*) FROM information_schema.tables WHERE table_name = "
                  "'my_notes'"),
            1);
}

TEST(PostgresStore, AnEmptyDatabaseIsNotCreatedWhenAskedNotTo) {
  TestDatabase db;
  ATTUNE_NEED_POSTGRES(db);
  auto s = open_store(db.url(), false);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().kind(), Error::Kind::kNotFound);
  EXPECT_EQ(count(db,
                  "SELECT count(*) FROM information_schema.tables WHERE table_schema = "
                  "'public'"),
            0);
}

TEST(PostgresStore, AnUnreachableServerIsNamedInOneLineWithoutItsPassword) {
  // A port nothing listens on (the test cluster is not needed).
  auto s = open_store("postgresql://tuner:hunter2@127.0.0.1:1/fleet?connect_timeout=5");
  ASSERT_FALSE(s.ok());
  const std::string m = s.error().message();
  EXPECT_EQ(s.error().kind(), Error::Kind::kIo);
  EXPECT_NE(m.find("postgresql://tuner:***@127.0.0.1:1/fleet"), std::string::npos) << m;
  EXPECT_EQ(m.find("hunter2"), std::string::npos) << m;
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
}

TEST(PostgresStore, ShownUrlsElideEveryPassword) {
  EXPECT_EQ(pg::shown_url("postgresql://u:p@h/db"), "postgresql://u:***@h/db");
  EXPECT_EQ(pg::shown_url("postgresql://u@h:5432/db"), "postgresql://u@h:5432/db");
  EXPECT_EQ(pg::shown_url("postgresql://h/db?user=u&password=p&sslmode=require"),
            "postgresql://h/db?user=u&password=***&sslmode=require");
}

TEST(PostgresStore, ManyProcessesOpeningANewDatabaseAtOnceAllSucceed) {
  TestDatabase db;
  ATTUNE_NEED_POSTGRES(db);
  std::vector<pid_t> children;
  for (int i = 0; i < 8; ++i) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) _exit(open_store(db.url()).ok() ? 0 : 1);
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  EXPECT_EQ(count(db, "SELECT count(*) FROM attune_schema"), 1);
}

}  // namespace
}  // namespace attune
