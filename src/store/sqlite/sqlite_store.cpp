#include "store/sqlite/sqlite_store.h"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "platform/identity.h"
#include "store/schema_check.h"
#include "store/sqlite/schema.h"

namespace attune {

namespace fs = std::filesystem;
using sqlite::Db;
using sqlite::Stmt;

namespace {

constexpr const char* kNow = "strftime('%Y-%m-%dT%H:%M:%fZ','now')";

// What the file at path is, decided from its header before SQLite touches it.
enum class FileKind { kAbsent, kEmpty, kSqlite, kOther };

Result<FileKind> classify(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return FileKind::kAbsent;
  if (fs::is_directory(path, ec))
    return Error::invalid_argument(path + " is a directory, not a database file");
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error::io("cannot read " + path);
  char header[16] = {};
  in.read(header, sizeof header);
  if (in.gcount() == 0) return FileKind::kEmpty;
  if (in.gcount() == 16 && std::memcmp(header, "SQLite format 3", 16) == 0)
    return FileKind::kSqlite;
  return FileKind::kOther;
}

std::string table_list(const Db& db) {
  auto s = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name LIMIT 5");
  if (!s) return "?";
  std::string out;
  while (true) {
    auto row = s->step();
    if (!row || !*row) break;
    if (!out.empty()) out += ", ";
    out += s->text(0);
  }
  return out.empty() ? "none" : out;
}

MeasurementRow read_measurement(const Stmt& s) {
  // Column order of kMeasurementColumns.
  MeasurementRow r;
  r.id = s.i64(0);
  r.run_id = s.is_null(1) ? 0 : s.i64(1);
  r.device_key = s.text(2);
  r.problem_key = s.text(3);
  r.backend = s.text(4);
  r.config = s.text(5);
  r.config_hash = s.text(6);
  r.outcome.verdict = verdict_from_string(s.text(7)).value_or(Verdict::kCrashed);
  r.regime = regime_from_string(s.text(8)).value_or(Regime::kRank);
  if (!s.is_null(10)) {
    Measurement m;
    m.regime = r.regime;
    m.cache = cache_state_from_string(s.text(9)).value_or(CacheState::kWarm);
    m.samples = static_cast<int>(s.i64(10));
    m.median_us = s.real(11);
    m.min_us = s.real(12);
    m.max_us = s.real(13);
    m.noise = s.real(14);
    m.sm_clock_mhz = s.is_null(20) ? 0 : static_cast<int>(s.i64(20));
    m.throttle = s.text(21);
    r.outcome.measurement = m;
  }
  if (!s.is_null(15))
    r.outcome.check = ErrorCheck{s.text(15), s.is_null(16) ? NAN : s.real(16), s.real(17)};
  r.outcome.message = s.text(18);
  r.created_at = s.text(19);
  if (!s.is_null(22)) r.discarded = s.text(22);
  if (!s.is_null(23)) r.cost_s = s.real(23);
  return r;
}

constexpr const char* kMeasurementColumns =
    "id, run_id, device_key, problem_key, backend, config, config_hash, verdict, regime, cache, "
    "samples, median_us, min_us, max_us, noise, error_metric, error_value, error_tolerance, "
    "message, created_at, sm_clock_mhz, throttle, discarded, cost_s";

// The schema version of an attune database at path (0: a new file, no attune schema yet); a file
// of another program, a damaged attune_schema or a newer attune's database is refused in one line.
Result<int> attune_schema_version(const Db& db, const std::string& path) {
  auto app_id = db.scalar("PRAGMA application_id", "reading the application id");
  if (!app_id) return app_id.error().with_context(path + " is not a readable attune database");
  auto tables = db.scalar("SELECT count(*) FROM sqlite_master", "listing the tables");
  if (!tables) return tables.error().with_context(path + " is not a readable attune database");
  if (*app_id != sqlite::kApplicationId) {
    if (*app_id == 0 && *tables == 0) return 0;
    return Error::corrupt(fmt::format(
        "{} is an SQLite database of another program (application_id {:#x}, tables: {}), not "
        "an attune database; refusing to touch it",
        path, *app_id, table_list(db)));
  }
  auto v = sqlite::schema_version(db);
  if (!v)
    return Error::corrupt(fmt::format(
        "{} is a damaged attune database ({}); refusing to touch it (pass another --db)", path,
        v.error().message()));
  const int current = sqlite::current_schema_version();
  if (*v > current)
    return Error::unsupported(fmt::format(
        "{} was written by a newer attune (schema v{}; this attune reads up to v{}); upgrade "
        "attune or use another --db",
        path, *v, current));
  return *v;
}

// PRAGMA quick_check: a database with damaged pages accepted writes from import and stack tune.
// It reads every page once without cross-checking indexes against their tables: 50 ms on a
// 100k-row (30 MiB) database with a warm page cache on a 2-core AMD EPYC, where integrity_check
// takes 160 ms; a tuner opens its database once.
Status check_integrity(const Db& db, const std::string& path) {
  auto refuse = [&](const std::string& why) {
    return Error::corrupt(
        fmt::format("{} is damaged ({}): refusing to write to it; recover its rows with "
                    "`sqlite3 {} .recover` or pass another --db",
                    path, why, path));
  };
  auto s = db.prepare("PRAGMA quick_check(1)", "checking the database");
  if (!s) return refuse(s.error().message());
  auto row = s->step();
  if (!row) return refuse(row.error().message());
  if (!*row) return refuse("quick_check answered nothing");
  std::string verdict = s->text(0);
  if (verdict == "ok") return Status::success();
  // "*** in database main ***\nTree 5 page 5 ...": one line, without the banner.
  if (const std::string banner = "*** in database main ***"; verdict.rfind(banner, 0) == 0)
    verdict.erase(0, banner.size());
  for (char& c : verdict)
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  const auto first = verdict.find_first_not_of(' ');
  return refuse(first == std::string::npos ? "quick_check failed" : verdict.substr(first));
}

// Every table and column of a database, as "table.column".
Result<std::set<std::string>> schema_columns(const Db& db) {
  ATTUNE_ASSIGN(Stmt s, db.prepare("SELECT m.name, p.name FROM sqlite_master AS m, "
                                   "pragma_table_info(m.name) AS p WHERE m.type = 'table'",
                                   "listing the columns"));
  std::set<std::string> out;
  while (true) {
    ATTUNE_ASSIGN(bool row, s.step());
    if (!row) break;
    out.insert(s.text(0) + "." + s.text(1));
  }
  return out;
}

// A database that says it is at schema `version` but lacks a table or column that version has (a
// table dropped by hand, a half-copied file) is refused before anything is written to it. What
// the version has is what its migrations make of an empty database in memory.
Status check_tables(const Db& db, int version, const std::string& path) {
  if (version == 0) return Status::success();
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(":memory:", &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  Db expected{sqlite::DbHandle(raw)};
  if (rc != SQLITE_OK) return sqlite::sqlite_error(raw, rc, "opening an in-memory database");
  ATTUNE_TRY(sqlite::migrate(expected, 0, version));
  ATTUNE_ASSIGN(std::set<std::string> want, schema_columns(expected));
  ATTUNE_ASSIGN(std::set<std::string> have, schema_columns(db));
  return store_schema::check_columns(want, have, version, path);
}

// The schema version of the database at path, after every check that must pass before anything
// is written to it: what attune_schema_version refuses, damaged pages (for a file that existed:
// `sqlite`), and a table or column its version lacks.
Result<int> checked_version(const Db& db, const std::string& path, bool sqlite) {
  ATTUNE_ASSIGN(int version, attune_schema_version(db, path));
  if (sqlite) ATTUNE_TRY(check_integrity(db, path));
  ATTUNE_TRY(check_tables(db, version, path));
  return version;
}

// journal_mode = WAL, retried while another process holds the lock it needs: several processes
// opening one new file at once all switch it, and only one at a time can.
Status use_wal(const Db& db, const std::string& path) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  std::string last = "busy";
  while (true) {
    sqlite3_stmt* raw = nullptr;
    int rc = sqlite3_prepare_v2(db.get(), "PRAGMA journal_mode = WAL", -1, &raw, nullptr);
    std::unique_ptr<sqlite3_stmt, sqlite::StmtFinalize> st(raw);
    if (rc == SQLITE_OK) rc = sqlite3_step(raw);
    if (rc == SQLITE_ROW) {
      const auto* mode = reinterpret_cast<const char*>(sqlite3_column_text(raw, 0));
      if (mode && std::string(mode) == "wal") return Status::success();
      last = std::string("the journal mode stayed ") + (mode ? mode : "unknown");
    } else if ((rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED) {
      last = sqlite3_errmsg(db.get());
    } else {
      return sqlite::sqlite_error(db.get(), rc, "switching " + path + " to WAL mode");
    }
    if (std::chrono::steady_clock::now() > deadline)
      return Error::io(fmt::format("switching {} to WAL mode: {} for 10 s", path, last));
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace

Result<std::unique_ptr<SqliteStore>> SqliteStore::open_read_only(const std::string& path) {
  // SQLite's immutable mode reads without the -shm file a WAL database needs and cannot create
  // here, and without locks; nothing this user runs can change the file. A non-empty -wal holds
  // rows not yet in the file, so then the -shm must already be there to read them.
  std::error_code ec;
  const bool wal = fs::file_size(path + "-wal", ec) > 0 && !ec;
  std::string uri = "file:";
  for (const char c : fs::absolute(path).string()) {
    if (c == '?' || c == '#' || c == '%')
      uri += fmt::format("%{:02X}", static_cast<unsigned char>(c));
    else
      uri += c;
  }
  if (!wal) uri += "?immutable=1";
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(uri.c_str(), &raw, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, nullptr);
  Db db{sqlite::DbHandle(raw)};
  if (rc != SQLITE_OK) return sqlite::sqlite_error(raw, rc, "opening " + path + " to read");
  sqlite3_extended_result_codes(raw, 1);
  ATTUNE_TRY(db.exec("PRAGMA busy_timeout = 10000", "setting the busy timeout"));
  ATTUNE_ASSIGN(int version, checked_version(db, path, /*sqlite=*/true));
  const int current = sqlite::current_schema_version();
  if (version == 0)
    return Error::invalid_argument(path + " holds no attune measurements (an empty database)");
  if (version < current)
    return Error::invalid_argument(fmt::format(
        "{} is at schema v{} and this user cannot write it to bring it to v{}; open it once "
        "where it can be written (any attune command migrates it)",
        path, version, current));
  return std::unique_ptr<SqliteStore>(new SqliteStore(std::move(db), path));
}

Result<std::unique_ptr<SqliteStore>> SqliteStore::open(const std::string& path,
                                                       bool create_if_missing, bool read_only_ok) {
  ATTUNE_ASSIGN(FileKind kind, classify(path));
  if (kind == FileKind::kOther)
    return Error::corrupt(path +
                          " is not an SQLite database, so not an attune database; "
                          "refusing to touch it (pass another --db)");
  if (kind == FileKind::kAbsent && !create_if_missing)
    return Error::not_found(path + " does not exist (run attune tune first, or pass --db)");
  const bool fresh = kind == FileKind::kAbsent || kind == FileKind::kEmpty;
  // SQLite would say "attempt to write a readonly database" at the first write, after a command
  // has done its work; every command that opens the database writes to it (runs, WAL mode).
  const fs::path dir = fs::path(path).has_parent_path() ? fs::path(path).parent_path() : ".";
  const bool writable = (kind == FileKind::kAbsent || ::access(path.c_str(), W_OK) == 0) &&
                        (::access(dir.c_str(), W_OK) == 0 || fs::exists(path + "-wal"));
  if (kind == FileKind::kSqlite && !writable && read_only_ok) return open_read_only(path);
  if (kind != FileKind::kAbsent && ::access(path.c_str(), W_OK) != 0)
    return Error::invalid_argument(fmt::format(
        "{} cannot be written by this user ({}); attune records every run in its database: make "
        "it writable or pass another --db",
        path, std::strerror(errno)));
  if (!writable)
    return Error::invalid_argument(fmt::format(
        "cannot write in {}, where the database {} keeps its journal ({}-wal) beside it; make "
        "the directory writable or pass another --db",
        dir.string(), path, path));
  sqlite3* raw = nullptr;
  int flags = SQLITE_OPEN_READWRITE | (fresh ? SQLITE_OPEN_CREATE : 0);
  int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  Db db{sqlite::DbHandle(raw)};
  if (rc != SQLITE_OK) return sqlite::sqlite_error(raw, rc, "opening " + path);
  sqlite3_extended_result_codes(raw, 1);
  ATTUNE_TRY(db.exec("PRAGMA busy_timeout = 10000", "setting the busy timeout"));

  // Validate before any write: a foreign, damaged or newer database must stay byte-for-byte as
  // it was. One read snapshot, so a database another process is creating reads as before or after.
  int version = 0;
  {
    ATTUNE_ASSIGN(
        sqlite::Transaction read,
        sqlite::Transaction::begin(db, sqlite::Transaction::Mode::kDeferred, "reading " + path));
    ATTUNE_ASSIGN(version, checked_version(db, path, kind == FileKind::kSqlite));
    ATTUNE_TRY(read.commit());
  }

  // WAL lets readers (eval, another worker) run while a tuner writes. synchronous=NORMAL in WAL
  // mode keeps every commit across a process crash, which is what losing a worker can cause.
  ATTUNE_TRY(use_wal(db, path));
  ATTUNE_TRY(db.exec("PRAGMA synchronous = NORMAL", "setting synchronous mode"));
  ATTUNE_TRY(db.exec("PRAGMA foreign_keys = ON", "turning foreign keys on"));

  // Creating and migrating is one immediate transaction that reads the version again inside it:
  // of 108 processes started together on a new file, 33 failed applying a migration that another
  // one had applied in between ("table attune_schema already exists").
  const int current = sqlite::current_schema_version();
  if (version < current) {
    const std::string what = fmt::format("bringing {} to schema v{}", path, current);
    ATTUNE_ASSIGN(sqlite::Transaction write,
                  sqlite::Transaction::begin(db, sqlite::Transaction::Mode::kImmediate, what));
    ATTUNE_ASSIGN(version, attune_schema_version(db, path));
    if (version == 0)
      ATTUNE_TRY(db.exec(fmt::format("PRAGMA application_id = {}", sqlite::kApplicationId),
                         "marking the database as attune's"));
    if (Status m = sqlite::migrate(db, version, current); !m.ok()) {
      if (version == 0) return m.error();
      return Error::corrupt(fmt::format(
          "{} is a damaged attune database (it says schema v{}, but {}); refusing to touch it "
          "(pass another --db)",
          path, version, m.error().message()));
    }
    ATTUNE_TRY(write.commit());
  }
  std::unique_ptr<SqliteStore> store(new SqliteStore(std::move(db), path));
  auto closed = store->close_orphaned_runs();
  if (!closed) return closed.error().with_context(path);
  return store;
}

Result<std::int64_t> SqliteStore::begin_run(RunInfo run) {
  const platform::ProcessIdentity owner = platform::current_process();
  ATTUNE_ASSIGN(Stmt s, db_.prepare(fmt::format("INSERT INTO runs (command, arguments, strategy, "
                                                "seed, version, device_key, started_at, status, "
                                                "host, boot_id, pid, pid_start, search_key, "
                                                "resumes) VALUES (?, ?, ?, ?, ?, ?, {}, "
                                                "'running', ?, ?, ?, ?, ?, ?)",
                                                kNow),
                                    "recording the start of a run"));
  s.bind(1, run.command)
      .bind(2, run.arguments)
      .bind(3, run.strategy)
      .bind(4, static_cast<std::int64_t>(run.seed))
      .bind(5, run.version)
      .bind(6, run.device_key)
      .bind(7, owner.host)
      .bind(8, owner.boot_id)
      .bind(9, owner.pid)
      .bind(10, owner.start_ticks)
      .bind(11, run.search_key);
  if (run.resumes)
    s.bind(12, run.resumes);
  else
    s.bind_null(12);
  ATTUNE_TRY(s.run());
  return static_cast<std::int64_t>(sqlite3_last_insert_rowid(db_.get()));
}

Status SqliteStore::finish_run(std::int64_t run_id, const std::string& status) {
  constexpr const char* kWhat = "recording the end of a run";
  ATTUNE_ASSIGN(
      Stmt s,
      db_.prepare(fmt::format("UPDATE runs SET finished_at = {}, status = ? WHERE id = ?", kNow),
                  kWhat));
  ATTUNE_ASSIGN(Stmt drop, db_.prepare("DELETE FROM claims WHERE run_id = ?", kWhat));
  ATTUNE_ASSIGN(sqlite::Transaction t,
                sqlite::Transaction::begin(db_, sqlite::Transaction::Mode::kImmediate, kWhat));
  ATTUNE_TRY(s.bind(1, status).bind(2, run_id).run());
  ATTUNE_TRY(drop.bind(1, run_id).run());
  return t.commit();
}

Result<std::vector<RunInfo>> SqliteStore::runs() {
  ATTUNE_ASSIGN(Stmt s, db_.prepare("SELECT id, command, arguments, strategy, seed, version, "
                                    "device_key, started_at, coalesce(finished_at, ''), status, "
                                    "coalesce(host, ''), coalesce(pid, 0), search_key, "
                                    "coalesce(resumes, 0) FROM runs ORDER BY id",
                                    "listing runs"));
  std::vector<RunInfo> out;
  while (true) {
    ATTUNE_ASSIGN(bool row, s.step());
    if (!row) break;
    RunInfo r;
    r.id = s.i64(0);
    r.command = s.text(1);
    r.arguments = s.text(2);
    r.strategy = s.text(3);
    r.seed = static_cast<std::uint64_t>(s.i64(4));
    r.version = s.text(5);
    r.device_key = s.text(6);
    r.started_at = s.text(7);
    r.finished_at = s.text(8);
    r.status = s.text(9);
    r.host = s.text(10);
    r.pid = s.i64(11);
    r.search_key = s.text(12);
    r.resumes = s.i64(13);
    out.push_back(std::move(r));
  }
  return out;
}

Result<bool> SqliteStore::interrupt_run(std::int64_t run_id) {
  constexpr const char* kWhat = "closing a run whose process is gone";
  ATTUNE_ASSIGN(Stmt s, db_.prepare(fmt::format("UPDATE runs SET status = 'interrupted', "
                                                "finished_at = {} WHERE id = ? AND "
                                                "status = 'running'",
                                                kNow),
                                    kWhat));
  ATTUNE_TRY(s.bind(1, run_id).run());
  const bool closed = sqlite3_changes(db_.get()) > 0;  // another process may have closed it
  ATTUNE_ASSIGN(Stmt drop, db_.prepare("DELETE FROM claims WHERE run_id = ?", kWhat));
  ATTUNE_TRY(drop.bind(1, run_id).run());
  return closed;
}

namespace {

// The owner a runs row names, from its host, boot_id, pid and pid_start columns at `first`.
platform::ProcessIdentity run_owner(const Stmt& s, int first) {
  return {s.text(first), s.text(first + 1), s.i64(first + 2), s.i64(first + 3)};
}

}  // namespace

Result<int> SqliteStore::close_orphaned_runs() {
  constexpr const char* kWhat = "looking for runs whose process is gone";
  const std::string host = platform::host_name();
  if (host.empty()) return 0;  // no run can be judged ours
  std::vector<std::int64_t> gone;
  {
    ATTUNE_ASSIGN(Stmt s, db_.prepare("SELECT id, host, coalesce(boot_id, ''), coalesce(pid, 0), "
                                      "coalesce(pid_start, 0) FROM runs "
                                      "WHERE status = 'running' AND host = ?",
                                      kWhat));
    s.bind(1, host);
    while (true) {
      ATTUNE_ASSIGN(bool row, s.step());
      if (!row) break;
      if (!platform::alive(run_owner(s, 1))) gone.push_back(s.i64(0));
    }
  }
  if (gone.empty()) return 0;
  ATTUNE_ASSIGN(sqlite::Transaction t,
                sqlite::Transaction::begin(db_, sqlite::Transaction::Mode::kImmediate, kWhat));
  int closed = 0;
  for (std::int64_t id : gone) {
    ATTUNE_ASSIGN(bool by_us, interrupt_run(id));
    closed += by_us ? 1 : 0;
  }
  ATTUNE_TRY(t.commit());
  return closed;
}

Result<ClaimResult> SqliteStore::claim(const ClaimKey& key, std::int64_t run_id) {
  constexpr const char* kWhat = "claiming a candidate";
  auto bind_key = [&](Stmt& s) -> Stmt& {
    return s.bind(1, key.device_key)
        .bind(2, key.problem_key)
        .bind(3, key.backend)
        .bind(4, to_string(key.regime))
        .bind(5, key.config_hash);
  };
  ATTUNE_ASSIGN(Stmt measured, db_.prepare("SELECT 1 FROM measurements WHERE device_key = ?1 AND "
                                           "problem_key = ?2 AND backend = ?3 AND regime = ?4 AND "
                                           "config_hash = ?5 AND discarded IS NULL LIMIT 1",
                                           kWhat));
  ATTUNE_ASSIGN(Stmt holder,
                db_.prepare("SELECT c.run_id, coalesce(r.status, ''), coalesce(r.host, ''), "
                            "coalesce(r.boot_id, ''), coalesce(r.pid, 0), "
                            "coalesce(r.pid_start, 0) FROM claims c LEFT JOIN runs r "
                            "ON r.id = c.run_id WHERE c.device_key = ?1 AND c.problem_key = ?2 "
                            "AND c.backend = ?3 AND c.regime = ?4 AND c.config_hash = ?5",
                            kWhat));
  ATTUNE_ASSIGN(Stmt take,
                db_.prepare(fmt::format("INSERT INTO claims (device_key, problem_key, backend, "
                                        "regime, config_hash, run_id, claimed_at) VALUES "
                                        "(?1, ?2, ?3, ?4, ?5, ?6, {}) ON CONFLICT (device_key, "
                                        "problem_key, backend, regime, config_hash) DO UPDATE "
                                        "SET run_id = excluded.run_id, "
                                        "claimed_at = excluded.claimed_at",
                                        kNow),
                            kWhat));
  ATTUNE_ASSIGN(sqlite::Transaction t,
                sqlite::Transaction::begin(db_, sqlite::Transaction::Mode::kImmediate, kWhat));
  ATTUNE_ASSIGN(bool done, bind_key(measured).step());
  if (done) {
    ATTUNE_TRY(t.commit());
    return ClaimResult::kMeasured;
  }
  ATTUNE_ASSIGN(bool held, bind_key(holder).step());
  if (held) {
    const std::int64_t by = holder.i64(0);
    if (by == run_id) {
      ATTUNE_TRY(t.commit());
      return ClaimResult::kOurs;
    }
    if (holder.text(1) == "running") {
      if (platform::alive(run_owner(holder, 2))) {
        ATTUNE_TRY(t.commit());
        return ClaimResult::kHeld;
      }
      // Its tuner was killed: nobody will measure it.
      ATTUNE_TRY(interrupt_run(by));
    }
  }
  ATTUNE_TRY(bind_key(take).bind(6, run_id).run());
  ATTUNE_TRY(t.commit());
  return ClaimResult::kOurs;
}

Status SqliteStore::release(const ClaimKey& key, std::int64_t run_id) {
  ATTUNE_ASSIGN(Stmt s, db_.prepare("DELETE FROM claims WHERE device_key = ? AND problem_key = ? "
                                    "AND backend = ? AND regime = ? AND config_hash = ? AND "
                                    "run_id = ?",
                                    "releasing a claimed candidate"));
  s.bind(1, key.device_key)
      .bind(2, key.problem_key)
      .bind(3, key.backend)
      .bind(4, to_string(key.regime))
      .bind(5, key.config_hash)
      .bind(6, run_id);
  return s.run();
}

Status SqliteStore::put_device(const DeviceFingerprint& d) {
  ATTUNE_ASSIGN(
      Stmt s,
      db_.prepare(
          fmt::format(
              "INSERT INTO devices (key, backend, name, arch, sm_count, memory_bytes, fingerprint, "
              "first_seen, last_seen) VALUES (?, ?, ?, ?, ?, ?, ?, {0}, {0}) "
              "ON CONFLICT (key) DO UPDATE SET fingerprint = excluded.fingerprint, last_seen = {0}",
              kNow),
          "recording a device"));
  nlohmann::json j = d;
  s.bind(1, d.key())
      .bind(2, d.backend)
      .bind(3, d.name)
      .bind(4, d.arch)
      .bind(5, d.sm_count)
      .bind(6, static_cast<std::int64_t>(d.memory_bytes))
      .bind(7, j.dump());
  return s.run();
}

Result<std::vector<DeviceFingerprint>> SqliteStore::devices() {
  ATTUNE_ASSIGN(Stmt s, db_.prepare("SELECT fingerprint FROM devices ORDER BY first_seen, rowid",
                                    "listing devices"));
  std::vector<DeviceFingerprint> out;
  while (true) {
    ATTUNE_ASSIGN(bool row, s.step());
    if (!row) break;
    auto j = nlohmann::json::parse(s.text(0), nullptr, false);
    if (j.is_discarded())
      return Error::corrupt("devices table holds a fingerprint that is not JSON");
    ATTUNE_ASSIGN(DeviceFingerprint d, device_from_json(j));
    out.push_back(std::move(d));
  }
  return out;
}

Status SqliteStore::put_problem(const Problem& p, const std::string& payload) {
  ATTUNE_ASSIGN(Stmt s,
                db_.prepare(fmt::format("INSERT INTO problems (key, op, text, name, payload, "
                                        "created_at) VALUES (?, ?, ?, ?, ?, {}) "
                                        "ON CONFLICT (key) DO UPDATE SET name = excluded.name, "
                                        "payload = CASE WHEN excluded.payload = '' THEN "
                                        "problems.payload ELSE excluded.payload END",
                                        kNow),
                            "recording a problem"));
  s.bind(1, p.structural_key())
      .bind(2, p.op())
      .bind(3, p.text())
      .bind(4, p.name())
      .bind(5, payload);
  return s.run();
}

namespace {
Result<ProblemRecord> read_problem(const Stmt& s) {
  auto p = Problem::parse(s.text(1));
  if (!p) return p.error().with_context("problems table");
  p->set_name(s.text(2));
  return ProblemRecord{*p, s.text(0), s.text(3)};
}

// Every row a problems query (key, text, name, payload) returns.
Result<std::vector<ProblemRecord>> read_problems(Stmt& s) {
  std::vector<ProblemRecord> out;
  while (true) {
    ATTUNE_ASSIGN(bool row, s.step());
    if (!row) break;
    ATTUNE_ASSIGN(ProblemRecord r, read_problem(s));
    out.push_back(std::move(r));
  }
  return out;
}
}  // namespace

Result<std::optional<ProblemRecord>> SqliteStore::find_problem(const std::string& key_or_name) {
  ATTUNE_ASSIGN(Stmt s, db_.prepare("SELECT key, text, name, payload FROM problems "
                                    "WHERE key = ?1 OR name = ?1 ORDER BY key = ?1 DESC, key",
                                    "looking up a problem"));
  s.bind(1, key_or_name);
  ATTUNE_ASSIGN(std::vector<ProblemRecord> found, read_problems(s));
  return one_problem(key_or_name, std::move(found));
}

Result<std::vector<ProblemRecord>> SqliteStore::problems() {
  ATTUNE_ASSIGN(Stmt s, db_.prepare("SELECT key, text, name, '' FROM problems ORDER BY name",
                                    "listing problems"));
  return read_problems(s);
}

Result<std::int64_t> SqliteStore::record(MeasurementRow r) {
  return insert_measurement(r, "");
}

Result<std::int64_t> SqliteStore::insert_measurement(const MeasurementRow& r,
                                                     const std::string& created_at) {
  ATTUNE_ASSIGN(
      Stmt s,
      db_.prepare(
          fmt::format(
              "INSERT INTO measurements (run_id, device_key, problem_key, backend, config, "
              "config_hash, "
              "verdict, regime, cache, samples, median_us, min_us, max_us, noise, error_metric, "
              "error_value, error_tolerance, message, created_at, sm_clock_mhz, throttle, cost_s) "
              "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, "
              "?18, coalesce(?21, {}), ?19, ?20, ?22)",
              kNow),
          "recording a measurement"));
  if (created_at.empty())
    s.bind_null(21);
  else
    s.bind(21, created_at);
  if (r.run_id)
    s.bind(1, r.run_id);
  else
    s.bind_null(1);
  s.bind(2, r.device_key)
      .bind(3, r.problem_key)
      .bind(4, r.backend)
      .bind(5, r.config)
      .bind(6, r.config_hash)
      .bind(7, to_string(r.outcome.verdict))
      .bind(8, to_string(r.regime));
  if (const auto& m = r.outcome.measurement) {
    s.bind(9, to_string(m->cache))
        .bind(10, m->samples)
        .bind(11, m->median_us)
        .bind(12, m->min_us)
        .bind(13, m->max_us)
        .bind(14, m->noise)
        .bind(19, m->sm_clock_mhz)
        .bind(20, m->throttle);
  } else {
    for (int i : {9, 10, 11, 12, 13, 14, 19, 20}) s.bind_null(i);
  }
  if (const auto& c = r.outcome.check) {
    s.bind(15, c->metric).bind(17, c->tolerance);
    if (std::isfinite(c->value))
      s.bind(16, c->value);
    else
      s.bind_null(16);
  } else {
    for (int i : {15, 16, 17}) s.bind_null(i);
  }
  s.bind(18, r.outcome.message);
  if (r.cost_s > 0)
    s.bind(22, r.cost_s);
  else
    s.bind_null(22);
  // Autocommit: the row is durable when this returns.
  ATTUNE_TRY(s.run());
  return static_cast<std::int64_t>(sqlite3_last_insert_rowid(db_.get()));
}

Result<std::optional<MeasurementRow>> SqliteStore::find(const std::string& device_key,
                                                        const std::string& problem_key,
                                                        const std::string& backend, Regime regime,
                                                        const std::string& config_hash) {
  ATTUNE_ASSIGN(
      Stmt s,
      db_.prepare(
          fmt::format(
              "SELECT {} FROM measurements WHERE device_key = ? AND problem_key = ? AND backend = "
              "? "
              "AND regime = ? AND config_hash = ? AND discarded IS NULL ORDER BY id DESC LIMIT 1",
              kMeasurementColumns),
          "looking up a measurement"));
  s.bind(1, device_key)
      .bind(2, problem_key)
      .bind(3, backend)
      .bind(4, to_string(regime))
      .bind(5, config_hash);
  ATTUNE_ASSIGN(bool row, s.step());
  if (!row) return std::optional<MeasurementRow>{};
  return std::optional<MeasurementRow>(read_measurement(s));
}

Result<std::vector<MeasurementRow>> SqliteStore::measurements(const MeasurementQuery& q) {
  std::string sql = fmt::format(
      "SELECT {} FROM measurements m WHERE "
      "(?1 = '' OR m.problem_key = ?1 OR m.problem_key IN "
      "   (SELECT key FROM problems WHERE name = ?1 OR op = ?1)) "
      "AND (?2 = '' OR m.device_key = ?2) AND (?3 = '' OR m.backend = ?3) "
      "AND (?4 = '' OR m.regime = ?4) AND (?5 = 0 OR m.verdict != 'ok') "
      "AND (?6 = 1 OR m.discarded IS NULL) "
      "ORDER BY m.id",
      kMeasurementColumns);
  ATTUNE_ASSIGN(Stmt s, db_.prepare(sql, "listing measurements"));
  s.bind(1, q.problem)
      .bind(2, q.device_key)
      .bind(3, q.backend)
      .bind(4, q.regime ? std::string(to_string(*q.regime)) : std::string())
      .bind(5, q.failures_only ? 1 : 0)
      .bind(6, q.include_discarded ? 1 : 0);
  std::vector<MeasurementRow> out;
  while (true) {
    ATTUNE_ASSIGN(bool row, s.step());
    if (!row) break;
    out.push_back(read_measurement(s));
  }
  return out;
}

Status SqliteStore::discard(const std::vector<std::int64_t>& ids, const std::string& reason) {
  ATTUNE_ASSIGN(Stmt s, db_.prepare("UPDATE measurements SET discarded = ? WHERE id = ?",
                                    "discarding measurements"));
  ATTUNE_TRY(db_.exec("BEGIN IMMEDIATE", "discarding measurements"));
  for (std::int64_t id : ids) {
    Status st = s.reset().bind(1, reason).bind(2, id).run();
    if (!st.ok()) {
      (void)db_.exec("ROLLBACK", "discarding measurements");
      return st;
    }
  }
  return db_.exec("COMMIT", "discarding measurements");
}

Status SqliteStore::put_search_nodes(const std::string& device_key, const std::string& problem_key,
                                     const std::string& strategy,
                                     const std::vector<SearchNode>& nodes) {
  ATTUNE_ASSIGN(
      Stmt s,
      db_.prepare(
          fmt::format(
              "INSERT INTO search_nodes (device_key, problem_key, strategy, path, visits, best_us, "
              "payload, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, {}) ON CONFLICT "
              "(device_key, problem_key, strategy, path) DO UPDATE SET visits = excluded.visits, "
              "best_us = excluded.best_us, payload = excluded.payload, updated_at = "
              "excluded.updated_at",
              kNow),
          "saving search-tree nodes"));
  // One transaction for the whole tree: a later run sees all of it or none.
  ATTUNE_TRY(db_.exec("BEGIN IMMEDIATE", "saving search-tree nodes"));
  for (const auto& n : nodes) {
    s.reset()
        .bind(1, device_key)
        .bind(2, problem_key)
        .bind(3, strategy)
        .bind(4, n.path)
        .bind(5, n.visits)
        .bind(6, n.best_us)
        .bind(7, n.payload);
    Status st = s.run();
    if (!st.ok()) {
      (void)db_.exec("ROLLBACK", "saving search-tree nodes");
      return st;
    }
  }
  return db_.exec("COMMIT", "saving search-tree nodes");
}

Result<std::vector<SearchNode>> SqliteStore::search_nodes(const std::string& device_key,
                                                          const std::string& problem_key,
                                                          const std::string& strategy) {
  ATTUNE_ASSIGN(Stmt s, db_.prepare("SELECT path, visits, best_us, payload FROM search_nodes "
                                    "WHERE device_key = ? AND problem_key = ? AND strategy = ? "
                                    "ORDER BY path",
                                    "reading search-tree nodes"));
  s.bind(1, device_key).bind(2, problem_key).bind(3, strategy);
  std::vector<SearchNode> out;
  while (true) {
    ATTUNE_ASSIGN(bool row, s.step());
    if (!row) break;
    out.push_back(SearchNode{s.text(0), s.i64(1), s.real(2), s.text(3)});
  }
  return out;
}

Status SqliteStore::put_baseline(const BaselineRecord& b) {
  ATTUNE_ASSIGN(
      Stmt s,
      db_.prepare(
          fmt::format(
              "INSERT INTO baselines (device_key, problem_key, backend, config, config_hash, "
              "recorded_at) "
              "VALUES (?, ?, ?, ?, ?, {}) ON CONFLICT (device_key, problem_key, backend) DO UPDATE "
              "SET "
              "config = excluded.config, config_hash = excluded.config_hash, "
              "recorded_at = excluded.recorded_at",
              kNow),
          "recording a baseline"));
  s.bind(1, b.device_key)
      .bind(2, b.problem_key)
      .bind(3, b.backend)
      .bind(4, b.config)
      .bind(5, b.config_hash);
  return s.run();
}

Result<std::optional<BaselineRecord>> SqliteStore::find_baseline(const std::string& device_key,
                                                                 const std::string& problem_key,
                                                                 const std::string& backend) {
  ATTUNE_ASSIGN(Stmt s, db_.prepare("SELECT config, config_hash, recorded_at FROM baselines "
                                    "WHERE device_key = ? AND problem_key = ? AND backend = ?",
                                    "looking up a baseline"));
  s.bind(1, device_key).bind(2, problem_key).bind(3, backend);
  ATTUNE_ASSIGN(bool row, s.step());
  if (!row) return std::optional<BaselineRecord>{};
  return std::optional<BaselineRecord>(
      BaselineRecord{device_key, problem_key, backend, s.text(0), s.text(1), s.text(2)});
}

Result<std::int64_t> SqliteStore::put_prior(PriorRecord p) {
  ATTUNE_ASSIGN(Stmt s, db_.prepare(fmt::format("INSERT INTO priors (name, created_at, rows, "
                                                "calibration, quarantined, model, reservoir) "
                                                "VALUES (?, {}, ?, ?, ?, ?, ?)",
                                                kNow),
                                    "saving a prior checkpoint"));
  s.bind(1, p.name)
      .bind(2, p.rows)
      .bind(3, p.calibration)
      .bind(4, p.quarantined ? 1 : 0)
      .bind_blob(5, p.model)
      .bind_blob(6, p.reservoir);
  ATTUNE_TRY(s.run());
  return static_cast<std::int64_t>(sqlite3_last_insert_rowid(db_.get()));
}

Result<std::optional<PriorRecord>> SqliteStore::latest_prior(const std::string& name) {
  ATTUNE_ASSIGN(Stmt s, db_.prepare("SELECT id, name, created_at, rows, calibration, quarantined, "
                                    "model, reservoir FROM priors WHERE name = ? "
                                    "ORDER BY id DESC LIMIT 1",
                                    "reading a prior checkpoint"));
  s.bind(1, name);
  ATTUNE_ASSIGN(bool row, s.step());
  if (!row) return std::optional<PriorRecord>{};
  PriorRecord p;
  p.id = s.i64(0);
  p.name = s.text(1);
  p.created_at = s.text(2);
  p.rows = s.i64(3);
  p.calibration = s.real(4);
  p.quarantined = s.i64(5) != 0;
  p.model = s.text(6);
  p.reservoir = s.text(7);
  return std::optional<PriorRecord>(std::move(p));
}

namespace {

constexpr const char* kWorkColumns =
    "id, device, backend, problem, problem_name, options, state, attempts, lease_token, "
    "coalesce(lease_until, ''), coalesce(holder_host, ''), coalesce(holder_pid, 0), "
    "coalesce(holder_device, ''), coalesce(run_id, 0), created_at, coalesce(finished_at, ''), "
    "message";

WorkItem read_work_item(const Stmt& s) {
  WorkItem w;
  w.id = s.i64(0);
  w.device = s.text(1);
  w.backend = s.text(2);
  w.problem = s.text(3);
  w.problem_name = s.text(4);
  w.options = s.text(5);
  w.state = s.text(6);
  w.attempts = s.i64(7);
  w.lease_token = s.i64(8);
  w.lease_until = s.text(9);
  w.holder_host = s.text(10);
  w.holder_pid = s.i64(11);
  w.holder_device = s.text(12);
  w.run_id = s.i64(13);
  w.created_at = s.text(14);
  w.finished_at = s.text(15);
  w.message = s.text(16);
  return w;
}

// now + ?1 seconds, in kNow's form.
constexpr const char* kLeaseUntil = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now', ?1 || ' seconds')";

}  // namespace

Result<std::int64_t> SqliteStore::enqueue(WorkItem w) {
  ATTUNE_ASSIGN(Stmt s, db_.prepare(fmt::format("INSERT INTO work_items (created_at, device, "
                                                "backend, problem, problem_name, options, state) "
                                                "VALUES ({}, ?, ?, ?, ?, ?, 'queued')",
                                                kNow),
                                    "queueing a work item"));
  s.bind(1, w.device)
      .bind(2, w.backend)
      .bind(3, w.problem)
      .bind(4, w.problem_name)
      .bind(5, w.options);
  ATTUNE_TRY(s.run());
  return static_cast<std::int64_t>(sqlite3_last_insert_rowid(db_.get()));
}

Result<std::optional<WorkItem>> SqliteStore::lease_work(const std::vector<std::string>& devices,
                                                        const std::string& holder_device,
                                                        double lease_s) {
  constexpr const char* kWhat = "leasing a work item";
  if (devices.empty()) return std::optional<WorkItem>{};
  std::string in;
  for (std::size_t i = 0; i < devices.size(); ++i) in += fmt::format("{}?{}", i ? ", " : "", i + 1);
  ATTUNE_ASSIGN(Stmt pick, db_.prepare(fmt::format("SELECT id, state, coalesce(holder_host, ''), "
                                                   "coalesce(holder_boot, ''), "
                                                   "coalesce(holder_pid, 0), "
                                                   "coalesce(holder_pid_start, 0) FROM work_items "
                                                   "WHERE device IN ({}) AND (state = 'queued' OR "
                                                   "(state = 'leased' AND lease_until < {})) "
                                                   "ORDER BY id LIMIT 1",
                                                   in, kNow),
                                       kWhat));
  for (std::size_t i = 0; i < devices.size(); ++i) pick.bind(static_cast<int>(i + 1), devices[i]);
  ATTUNE_ASSIGN(Stmt former, db_.prepare("SELECT id FROM runs WHERE status = 'running' AND "
                                         "host = ? AND coalesce(boot_id, '') = ? AND pid = ? AND "
                                         "coalesce(pid_start, 0) = ?",
                                         kWhat));
  ATTUNE_ASSIGN(Stmt take,
                db_.prepare(fmt::format("UPDATE work_items SET state = 'leased', attempts = "
                                        "attempts + 1, lease_token = lease_token + 1, "
                                        "lease_until = {}, holder_host = ?2, holder_boot = ?3, "
                                        "holder_pid = ?4, holder_pid_start = ?5, "
                                        "holder_device = ?6 WHERE id = ?7",
                                        kLeaseUntil),
                            kWhat));
  ATTUNE_ASSIGN(
      Stmt read,
      db_.prepare(fmt::format("SELECT {} FROM work_items WHERE id = ?", kWorkColumns), kWhat));
  // One immediate transaction: processes leasing at once are serialised by SQLite's write lock.
  ATTUNE_ASSIGN(sqlite::Transaction t,
                sqlite::Transaction::begin(db_, sqlite::Transaction::Mode::kImmediate, kWhat));
  ATTUNE_ASSIGN(bool row, pick.step());
  if (!row) {
    ATTUNE_TRY(t.commit());
    return std::optional<WorkItem>{};
  }
  const std::int64_t id = pick.i64(0);
  if (pick.text(1) == "leased") {
    // Its holder stopped renewing: close what it was running so its claims are free.
    former.bind(1, pick.text(2)).bind(2, pick.text(3)).bind(3, pick.i64(4)).bind(4, pick.i64(5));
    std::vector<std::int64_t> runs;
    while (true) {
      ATTUNE_ASSIGN(bool more, former.step());
      if (!more) break;
      runs.push_back(former.i64(0));
    }
    for (std::int64_t run : runs) ATTUNE_TRY(interrupt_run(run));
  }
  const platform::ProcessIdentity me = platform::current_process();
  take.bind(1, fmt::format("{}", lease_s))
      .bind(2, me.host)
      .bind(3, me.boot_id)
      .bind(4, me.pid)
      .bind(5, me.start_ticks)
      .bind(6, holder_device)
      .bind(7, id);
  ATTUNE_TRY(take.run());
  read.bind(1, id);
  ATTUNE_ASSIGN(bool got, read.step());
  if (!got) return Error::internal("a leased work item vanished inside its transaction");
  WorkItem w = read_work_item(read);
  ATTUNE_TRY(t.commit());
  return std::optional<WorkItem>(std::move(w));
}

Result<bool> SqliteStore::renew_lease(std::int64_t id, std::int64_t lease_token, double lease_s) {
  ATTUNE_ASSIGN(Stmt s, db_.prepare(fmt::format("UPDATE work_items SET lease_until = {} WHERE "
                                                "id = ?2 AND lease_token = ?3 AND state = "
                                                "'leased'",
                                                kLeaseUntil),
                                    "renewing a lease"));
  s.bind(1, fmt::format("{}", lease_s)).bind(2, id).bind(3, lease_token);
  ATTUNE_TRY(s.run());
  return sqlite3_changes(db_.get()) > 0;
}

Result<bool> SqliteStore::finish_work(std::int64_t id, std::int64_t lease_token,
                                      const std::string& state, const std::string& message,
                                      std::int64_t run_id) {
  if (state != "done" && state != "failed" && state != "queued")
    return Error::invalid_argument("a work item ends done, failed or queued, not " + state);
  ATTUNE_ASSIGN(Stmt s, db_.prepare(fmt::format("UPDATE work_items SET state = ?1, message = ?2, "
                                                "run_id = coalesce(?3, run_id), lease_until = "
                                                "NULL, finished_at = CASE WHEN ?1 = 'queued' "
                                                "THEN NULL ELSE {} END WHERE id = ?4 AND "
                                                "lease_token = ?5 AND state = 'leased'",
                                                kNow),
                                    "finishing a work item"));
  s.bind(1, state).bind(2, message);
  if (run_id)
    s.bind(3, run_id);
  else
    s.bind_null(3);
  s.bind(4, id).bind(5, lease_token);
  ATTUNE_TRY(s.run());
  return sqlite3_changes(db_.get()) > 0;
}

Result<std::vector<WorkItem>> SqliteStore::work_items() {
  ATTUNE_ASSIGN(Stmt s,
                db_.prepare(fmt::format("SELECT {} FROM work_items ORDER BY id", kWorkColumns),
                            "listing work items"));
  std::vector<WorkItem> out;
  while (true) {
    ATTUNE_ASSIGN(bool row, s.step());
    if (!row) break;
    out.push_back(read_work_item(s));
  }
  return out;
}

Result<std::int64_t> SqliteStore::import_run(const RunInfo& run) {
  constexpr const char* kWhat = "merging a run";
  ATTUNE_ASSIGN(Stmt same, db_.prepare("SELECT id FROM runs WHERE started_at = ? AND "
                                       "coalesce(host, '') = ? AND coalesce(pid, 0) = ? AND "
                                       "command = ? AND arguments = ? ORDER BY id LIMIT 1",
                                       kWhat));
  ATTUNE_ASSIGN(Stmt add, db_.prepare("INSERT INTO runs (command, arguments, strategy, seed, "
                                      "version, device_key, started_at, finished_at, status, "
                                      "host, pid, search_key, resumes) VALUES (?, ?, ?, ?, ?, ?, "
                                      "?, ?, ?, ?, ?, ?, ?)",
                                      kWhat));
  ATTUNE_ASSIGN(sqlite::Transaction t,
                sqlite::Transaction::begin(db_, sqlite::Transaction::Mode::kImmediate, kWhat));
  same.bind(1, run.started_at)
      .bind(2, run.host)
      .bind(3, run.pid)
      .bind(4, run.command)
      .bind(5, run.arguments);
  ATTUNE_ASSIGN(bool found, same.step());
  if (found) {
    const std::int64_t id = same.i64(0);
    ATTUNE_TRY(t.commit());
    return id;
  }
  add.bind(1, run.command)
      .bind(2, run.arguments)
      .bind(3, run.strategy)
      .bind(4, static_cast<std::int64_t>(run.seed))
      .bind(5, run.version)
      .bind(6, run.device_key)
      .bind(7, run.started_at);
  if (run.finished_at.empty())
    add.bind_null(8);
  else
    add.bind(8, run.finished_at);
  add.bind(9, run.status).bind(10, run.host).bind(11, run.pid).bind(12, run.search_key);
  if (run.resumes)
    add.bind(13, run.resumes);
  else
    add.bind_null(13);
  ATTUNE_TRY(add.run());
  const auto id = static_cast<std::int64_t>(sqlite3_last_insert_rowid(db_.get()));
  ATTUNE_TRY(t.commit());
  return id;
}

Result<bool> SqliteStore::import_measurement(const MeasurementRow& row) {
  constexpr const char* kWhat = "merging a measurement";
  if (row.created_at.empty()) return Error::invalid_argument("a merged measurement has no time");
  ATTUNE_ASSIGN(Stmt same, db_.prepare("SELECT 1 FROM measurements WHERE device_key = ? AND "
                                       "problem_key = ? AND backend = ? AND regime = ? AND "
                                       "config_hash = ? AND created_at = ? LIMIT 1",
                                       kWhat));
  ATTUNE_ASSIGN(sqlite::Transaction t,
                sqlite::Transaction::begin(db_, sqlite::Transaction::Mode::kImmediate, kWhat));
  same.bind(1, row.device_key)
      .bind(2, row.problem_key)
      .bind(3, row.backend)
      .bind(4, to_string(row.regime))
      .bind(5, row.config_hash)
      .bind(6, row.created_at);
  ATTUNE_ASSIGN(bool found, same.step());
  if (!found) ATTUNE_TRY(insert_measurement(row, row.created_at));
  ATTUNE_TRY(t.commit());
  return !found;
}

}  // namespace attune
