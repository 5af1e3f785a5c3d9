// SqliteStore: the Store contract (tests/store/conformance.h), and what only the SQLite store
// promises: files classified before they are touched, forward migrations, WAL.
#include "store/sqlite/sqlite_store.h"

#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <optional>

#include "core/config.h"
#include "platform/identity.h"
#include "store/conformance.h"
#include "store/sqlite/schema.h"
#include "support/damage.h"
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

// Forks n children that each run `body` at the same moment (they wait on one pipe that the parent
// closes when all are forked) and exit with its code; returns their exit codes (-1: killed).
template <typename Body>
std::vector<int> run_at_once(int n, Body body) {
  int gate[2];
  EXPECT_EQ(pipe(gate), 0);
  std::vector<pid_t> pids;
  for (int i = 0; i < n; ++i) {
    pid_t pid = fork();
    if (pid == 0) {
      close(gate[1]);
      char c;
      (void)!read(gate[0], &c, 1);  // returns 0 when the parent closes the gate
      _exit(body(i));
    }
    pids.push_back(pid);
  }
  close(gate[0]);
  close(gate[1]);
  std::vector<int> codes;
  for (pid_t pid : pids) {
    int status = 0;
    waitpid(pid, &status, 0);
    codes.push_back(WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  }
  return codes;
}

// 108 `attune tune` started together on a new file had 33 fail with "table attune_schema already
// exists" or "duplicate column name": creating and migrating the schema is one transaction that
// re-reads the version inside it.
TEST(SqliteStore, ManyProcessesOpeningANewFileAtOnceAllSucceed) {
  for (int round = 0; round < 3; ++round) {
    TempDir dir;
    const std::string path = dir.file("fresh.db");
    auto codes = run_at_once(16, [&](int) {
      auto s = open_store(path);
      if (!s.ok()) {
        std::fprintf(stderr, "%s\n", s.error().message().c_str());
        return 1;
      }
      return 0;
    });
    EXPECT_EQ(codes, std::vector<int>(16, 0)) << "round " << round;
    auto s = SqliteStore::open(path);
    ASSERT_TRUE(s.ok()) << s.error().message();
    EXPECT_EQ(*sqlite::schema_version((*s)->db()), sqlite::current_schema_version());
    EXPECT_EQ(*(*s)->db().scalar("SELECT count(*) FROM attune_schema"), 1);
  }
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

// A database with a damaged page of its measurements took writes from import and stack tune:
// it is checked (PRAGMA quick_check) before anything is written, and refused untouched.
TEST(SqliteStore, RefusesADatabaseWithADamagedPageAndWritesNothing) {
  TempDir dir;
  std::string path = dir.file("a.db");
  {
    auto s = SqliteStore::open(path);
    ASSERT_TRUE(s.ok());
    Problem p = *Problem::parse("rmsnorm:rows=8,hidden=64");
    ASSERT_TRUE((*s)->put_device(sim_device()).ok());
    ASSERT_TRUE((*s)->put_problem(p).ok());
    ASSERT_TRUE((*s)->db().exec("BEGIN").ok());
    for (int i = 0; i < 2000; ++i)
      ASSERT_TRUE((*s)->record(store_rows::row(p, "t=" + std::to_string(i), 1.0 + i)).ok());
    ASSERT_TRUE((*s)->db().exec("COMMIT").ok());
  }
  ASSERT_TRUE(testing::damage_table_page(path, "measurements"));
  const std::string before = read_bytes(path);
  auto store = SqliteStore::open(path);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.error().kind(), Error::Kind::kCorrupt);
  EXPECT_NE(store.error().message().find(path + " is damaged ("), std::string::npos)
      << store.error().message();
  EXPECT_NE(store.error().message().find("refusing to write to it"), std::string::npos);
  EXPECT_EQ(store.error().message().find('\n'), std::string::npos) << store.error().message();
  EXPECT_EQ(read_bytes(path), before);
}

// Errors say in words what failed, never the SQL statement (one error printed a whole INSERT).
TEST(SqliteStore, AFailedWriteSaysWhatFailedInWordsNotInSql) {
  TempDir dir;
  const std::string path = dir.file("a.db");
  auto s = SqliteStore::open(path);
  ASSERT_TRUE(s.ok());
  Problem p = *Problem::parse("rmsnorm:rows=8,hidden=64");
  ASSERT_TRUE((*s)->put_device(sim_device()).ok());
  ASSERT_TRUE((*s)->put_problem(p).ok());
  // Another connection holds the write lock longer than the busy timeout allows.
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
  sqlite::Db other{sqlite::DbHandle(raw)};
  ASSERT_TRUE(other.exec("BEGIN IMMEDIATE").ok());
  ASSERT_TRUE((*s)->db().exec("PRAGMA busy_timeout = 50").ok());
  auto r = (*s)->record(store_rows::row(p, "t=1", 1.0));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(), "recording a measurement: database is locked");
  auto b = (*s)->put_baseline({sim_device().key(), p.structural_key(), "sim", "t=1", "h", ""});
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.error().message(), "recording a baseline: database is locked");
  ASSERT_TRUE(other.exec("ROLLBACK").ok());
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

// An old database opened at the current schema: its one cuda deploy row is kept but discarded
// (the reason names `why`) and no longer answers; its cuda rank and sim deploy rows still do.
void expect_only_cuda_deploy_discarded(const std::string& path, const std::string& dev,
                                       const std::string& key, const std::string& why) {
  auto store = SqliteStore::open(path);
  ASSERT_TRUE(store.ok()) << store.error().message();
  EXPECT_EQ(*sqlite::schema_version((*store)->db()), sqlite::current_schema_version());
  EXPECT_FALSE((*store)->find(dev, key, "cuda", Regime::kDeploy, "h1")->has_value());
  EXPECT_TRUE((*store)->find(dev, key, "cuda", Regime::kRank, "h1")->has_value());
  EXPECT_TRUE((*store)->find(dev, key, "sim", Regime::kDeploy, "h1")->has_value());
  EXPECT_EQ(*(*store)->db().scalar("SELECT count(*) FROM measurements"), 3);
  EXPECT_EQ(*(*store)->db().scalar("SELECT count(*) FROM measurements WHERE discarded LIKE '%" +
                                   why + "%'"),
            1);
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
  expect_only_cuda_deploy_discarded(path, dev, key, "memset L2 flush");
}

TEST(SqliteStore, AV8DatabaseKeepsItsCudaDeployRowsButNoLongerAnswersWithThem) {
  testing::TempDir dir;
  std::string path = dir.file("v8.db");
  Problem p = *Problem::parse("gemm:m=8,n=8,k=8");
  const std::string dev = sim_device().key(), key = p.structural_key();
  {
    // cuda deploy (a graph of the candidate alone), cuda rank, sim deploy.
    sqlite::Db db = database_at(path, 8, p);
    for (const char* row : {"'cuda', 'deploy'", "'cuda', 'rank'", "'sim', 'deploy'"})
      ASSERT_TRUE(db.exec(fmt::format("INSERT INTO measurements (device_key, problem_key, "
                                      "backend, regime, config, config_hash, verdict, samples, "
                                      "median_us, min_us, max_us, noise, created_at) VALUES "
                                      "('{}', '{}', {}, 'a=1', 'h1', 'ok', 3, 4.5, 4.4, 4.6, "
                                      "0.01, 't')",
                                      dev, key, row))
                      .ok());
  }
  expect_only_cuda_deploy_discarded(path, dev, key, "graph of the candidate alone");
}

// The owners' runs as `status` by id.
std::map<std::int64_t, std::string> run_statuses(Store& s) {
  std::map<std::int64_t, std::string> out;
  auto runs = s.runs();
  EXPECT_TRUE(runs.ok()) << runs.error().message();
  if (runs.ok())
    for (const RunInfo& r : *runs) out[r.id] = r.status;
  return out;
}

// A child process that opens `path`, begins a run (and claims `key` for it when given), writes the
// run's id on a pipe, and then either exits at once (as kill -9 would leave it: no finish_run) or
// waits until told to go. The parent reads the id with run_id().
class RunningChild {
 public:
  RunningChild(const std::string& path, const std::optional<ClaimKey>& key, bool linger) {
    EXPECT_EQ(pipe(id_), 0);
    EXPECT_EQ(pipe(go_), 0);
    pid_ = fork();
    if (pid_ == 0) {
      close(id_[0]);
      close(go_[1]);
      auto s = open_store(path);
      if (!s.ok()) _exit(1);
      auto run = (*s)->begin_run({0, "tune", "[]", "mcts", 1});
      if (!run.ok()) _exit(2);
      if (key && !((*s)->claim(*key, *run).ok())) _exit(3);
      std::int64_t id = *run;
      if (write(id_[1], &id, sizeof id) != sizeof id) _exit(4);
      char c;
      if (linger) (void)!read(go_[0], &c, 1);
      _exit(0);
    }
    close(id_[1]);
    close(go_[0]);
    if (read(id_[0], &run_id_, sizeof run_id_) != sizeof run_id_) run_id_ = -1;
    if (!linger) end();
  }
  ~RunningChild() { end(); }
  std::int64_t run_id() const { return run_id_; }
  pid_t pid() const { return pid_; }
  // Lets it exit and reaps it.
  void end() {
    if (pid_ <= 0) return;
    close(go_[1]);
    close(id_[0]);
    int status = 0;
    waitpid(pid_, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
    pid_ = -pid_;
  }

 private:
  int id_[2] = {-1, -1}, go_[2] = {-1, -1};
  pid_t pid_ = -1;
  std::int64_t run_id_ = -1;
};

// 67 runs of killed tuners stayed 'running' forever: the next open closes them.
TEST(SqliteStore, ARunWhoseProcessDiedIsInterruptedAtTheNextOpen) {
  TempDir dir;
  const std::string path = dir.file("a.db");
  RunningChild killed(path, std::nullopt, /*linger=*/false);
  ASSERT_GT(killed.run_id(), 0);
  auto s = SqliteStore::open(path);
  ASSERT_TRUE(s.ok()) << s.error().message();
  auto runs = (*s)->runs();
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 1u);
  EXPECT_EQ((*runs)[0].status, "interrupted");
  EXPECT_FALSE((*runs)[0].finished_at.empty());
  EXPECT_EQ((*runs)[0].pid, -killed.pid());  // end() negated it once reaped
  EXPECT_EQ((*runs)[0].host, platform::host_name());
  EXPECT_EQ(*(*s)->close_orphaned_runs(), 0);  // nothing left to close
}

TEST(SqliteStore, ARunOfALiveProcessIsLeftRunningUntilItsProcessIsGone) {
  TempDir dir;
  const std::string path = dir.file("a.db");
  RunningChild tuner(path, std::nullopt, /*linger=*/true);
  ASSERT_GT(tuner.run_id(), 0);
  auto s = SqliteStore::open(path);
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_EQ(run_statuses(**s)[tuner.run_id()], "running");
  EXPECT_EQ(*(*s)->close_orphaned_runs(), 0);
  tuner.end();  // now it exits without finishing its run
  EXPECT_EQ(*(*s)->close_orphaned_runs(), 1);
  EXPECT_EQ(run_statuses(**s)[tuner.run_id()], "interrupted");
}

// Runs another host owns cannot be judged from here; a run of this host's previous boot is dead.
TEST(SqliteStore, ARunOfAnotherHostIsLeftAloneAndOneOfAnEarlierBootIsClosed) {
  TempDir dir;
  const std::string path = dir.file("a.db");
  Problem p = *Problem::parse("gemm:m=8,n=8,k=8");
  MeasurementRow row = store_rows::row(p, "t=1", 1.0);
  const ClaimKey key{row.device_key, row.problem_key, row.backend, row.regime, row.config_hash};
  {
    auto s = SqliteStore::open(path);
    ASSERT_TRUE(s.ok());
    const std::string me = platform::host_name();
    ASSERT_TRUE((*s)->db()
                    .exec("INSERT INTO runs (id, command, arguments, started_at, status, host, "
                          "boot_id, pid, pid_start) VALUES "
                          "(1, 'tune', '[]', 't', 'running', 'elsewhere.example', 'b', 999999, 1),"
                          "(2, 'tune', '[]', 't', 'running', '" +
                          me + "', 'an-earlier-boot', " + std::to_string(getpid()) +
                          ", 1),"
                          "(3, 'tune', '[]', 't', 'running', NULL, NULL, NULL, NULL);"
                          "INSERT INTO claims VALUES ('" +
                          key.device_key + "', '" + key.problem_key + "', 'sim', 'rank', '" +
                          key.config_hash + "', 1, 't')")
                    .ok());
  }
  auto s = SqliteStore::open(path);
  ASSERT_TRUE(s.ok()) << s.error().message();
  auto status = run_statuses(**s);
  EXPECT_EQ(status[1], "running");      // another host's: unknown, so alive
  EXPECT_EQ(status[2], "interrupted");  // this host has rebooted since
  EXPECT_EQ(status[3], "running");      // recorded before schema v6: no owner to judge
  auto mine = (*s)->begin_run({0, "tune", "[]", "mcts", 1});
  ASSERT_TRUE(mine.ok());
  EXPECT_EQ(*(*s)->claim(key, *mine), ClaimResult::kHeld);  // another host's claim stands
  EXPECT_EQ(run_statuses(**s)[1], "running");
}

// The tuner that claimed a candidate was killed: the next claim closes its run and takes it over
// instead of waiting forever.
TEST(SqliteStore, AClaimOfARunWhoseProcessDiedIsTakenOver) {
  TempDir dir;
  const std::string path = dir.file("a.db");
  auto s = SqliteStore::open(path);  // opened before the other tuner dies
  ASSERT_TRUE(s.ok()) << s.error().message();
  Problem p = *Problem::parse("gemm:m=8,n=8,k=8");
  MeasurementRow row = store_rows::row(p, "t=1", 1.0);
  const ClaimKey key{row.device_key, row.problem_key, row.backend, row.regime, row.config_hash};
  auto mine = (*s)->begin_run({0, "tune", "[]", "mcts", 1});
  ASSERT_TRUE(mine.ok());
  {
    RunningChild live(path, key, /*linger=*/true);
    ASSERT_GT(live.run_id(), 0);
    EXPECT_EQ(*(*s)->claim(key, *mine), ClaimResult::kHeld);
  }
  RunningChild killed(path, key, /*linger=*/false);  // the first one's run was closed at its open
  ASSERT_GT(killed.run_id(), 0);
  EXPECT_EQ(run_statuses(**s)[killed.run_id()], "running");
  auto c = (*s)->claim(key, *mine);
  ASSERT_TRUE(c.ok()) << c.error().message();
  EXPECT_EQ(*c, ClaimResult::kOurs);
  EXPECT_EQ(run_statuses(**s)[killed.run_id()], "interrupted");
  EXPECT_EQ(*(*s)->db().scalar("SELECT count(*) FROM claims"), 1);
  EXPECT_EQ(*(*s)->db().scalar("SELECT run_id FROM claims"), *mine);
}

TEST(SqliteStore, AClaimWhoseRunEndedIsTakenOver) {
  TempDir dir;
  auto s = SqliteStore::open(dir.file("a.db"));
  ASSERT_TRUE(s.ok()) << s.error().message();
  const ClaimKey key{"d", "p", "sim", Regime::kRank, "h"};
  auto a = (*s)->begin_run({0, "tune", "[]", "mcts", 1});
  auto b = (*s)->begin_run({0, "tune", "[]", "mcts", 1});
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(*(*s)->claim(key, *a), ClaimResult::kOurs);
  // Ended without dropping its claims (as an attune before claims were dropped would leave it).
  ASSERT_TRUE(
      (*s)->db().exec("UPDATE runs SET status = 'failed' WHERE id = " + std::to_string(*a)).ok());
  EXPECT_EQ(*(*s)->claim(key, *b), ClaimResult::kOurs);
  EXPECT_EQ(*(*s)->db().scalar("SELECT run_id FROM claims"), *b);
}

}  // namespace
}  // namespace attune
