#include "store/postgres/pg_store.h"

#include <cmath>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "platform/identity.h"
#include "store/migrations.h"
#include "store/schema_check.h"

namespace attune {

using pg::exec;
using pg::Params;

namespace {

// Timestamps as the SQLite store writes them (ISO 8601 UTC), to the microsecond: rows written in
// one millisecond keep their order by time.
constexpr const char* kNow =
    "to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')";

// now + `seconds` (an SQL expression), in kNow's form.
std::string now_plus(const std::string& seconds) {
  return fmt::format(
      "to_char((clock_timestamp() + ({}) * interval '1 second') AT TIME ZONE 'UTC', "
      "'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')",
      seconds);
}

// The advisory lock that serialises creating and migrating one database ('ATUN').
constexpr std::int64_t kSchemaLock = 0x4154554e;

// The schema version of the database (0: no tables at all, a new database); another program's
// tables, a damaged attune_schema or a newer attune's are refused in one line.
Result<int> attune_schema_version(pqxx::transaction_base& tx, const std::string& url) {
  const std::string shown = pg::shown_url(url);
  auto tables = exec(tx,
                     "SELECT table_name FROM information_schema.tables WHERE table_schema = "
                     "current_schema() ORDER BY table_name");
  bool has_schema = false;
  std::string names;
  for (const auto& row : tables) {
    const std::string name = pg::text(row[0]);
    has_schema = has_schema || name == "attune_schema";
    if (names.size() < 60) names += (names.empty() ? "" : ", ") + name;
  }
  if (tables.empty()) return 0;
  if (!has_schema)
    return Error::corrupt(fmt::format(
        "{} holds tables of another program ({}), not an attune database; refusing to touch it "
        "(give attune an empty database)",
        shown, names));
  auto rows = exec(tx, "SELECT version::text, pg_typeof(version)::text FROM attune_schema");
  if (rows.size() != 1)
    return Error::corrupt(fmt::format(
        "{} is a damaged attune database (attune_schema holds {} rows, where attune writes one); "
        "refusing to touch it",
        shown, rows.size()));
  const std::string text = pg::text(rows[0][0]);
  std::int64_t v = 0;
  try {
    std::size_t used = 0;
    v = std::stoll(text, &used);
    if (used != text.size() || pg::text(rows[0][1]) != "bigint") v = 0;
  } catch (const std::exception&) {
    v = 0;
  }
  if (v < 1)
    return Error::corrupt(fmt::format(
        "{} is a damaged attune database (schema version {} is not one any attune writes); "
        "refusing to touch it",
        shown, text.empty() ? "NULL" : text));
  const int current = store_schema::current_version();
  if (v > current)
    return Error::unsupported(fmt::format(
        "{} was written by a newer attune (schema v{}; this attune reads up to v{}); upgrade "
        "attune or use another --db",
        shown, v, current));
  return static_cast<int>(v);
}

// Every table and column of the schema whose oid the SQL expression `schema` gives, as
// "table.column" (from the catalog, so a column this role may not read is still seen).
std::set<std::string> schema_columns(pqxx::transaction_base& tx, const std::string& schema) {
  auto rows = exec(tx, fmt::format("SELECT c.relname, a.attname FROM pg_class c JOIN pg_attribute "
                                   "a ON a.attrelid = c.oid WHERE c.relnamespace = {} AND "
                                   "c.relkind IN ('r', 'p') AND a.attnum > 0 AND NOT "
                                   "a.attisdropped",
                                   schema));
  std::set<std::string> out;
  for (const auto& row : rows) out.insert(pg::text(row[0]) + "." + pg::text(row[1]));
  return out;
}

// A database that says it is at schema `version` but lacks a table or column that version has (a
// table dropped by hand, a column removed) is refused before anything is written to it, as the
// SQLite store refuses such a file. The store's tables are those of current_schema(), where its
// unqualified names resolve (attune_schema_version looks there too). What the version has is what
// its migrations make of an empty schema: they run on this session's temporary schema inside a
// savepoint that is rolled back, search_path with it, so nothing is left behind; temporary tables
// need only the TEMP privilege every role has by default, where a scratch schema of our own would
// need CREATE on the database.
Status check_tables(pqxx::dbtransaction& tx, int version, const std::string& shown) {
  if (version == 0) return Status::success();
  const std::set<std::string> have =
      schema_columns(tx, "(SELECT oid FROM pg_namespace WHERE nspname = current_schema())");
  std::set<std::string> want;
  {
    pqxx::subtransaction scratch(tx, "attune_expected_schema");
    exec(scratch, "SET LOCAL search_path TO pg_temp");
    for (int v = 1; v <= version; ++v)
      scratch.exec(store_schema::migration(v, store_schema::Dialect::kPostgres));
    want = schema_columns(scratch, "pg_my_temp_schema()");
    scratch.abort();
  }
  return store_schema::check_columns(want, have, version, shown);
}

MeasurementRow read_measurement(const pqxx::row& r) {
  // Column order of kMeasurementColumns.
  MeasurementRow m;
  m.id = pg::i64(r[0]);
  m.run_id = pg::i64(r[1]);
  m.device_key = pg::text(r[2]);
  m.problem_key = pg::text(r[3]);
  m.backend = pg::text(r[4]);
  m.config = pg::text(r[5]);
  m.config_hash = pg::text(r[6]);
  m.outcome.verdict = verdict_from_string(pg::text(r[7])).value_or(Verdict::kCrashed);
  m.regime = regime_from_string(pg::text(r[8])).value_or(Regime::kRank);
  if (!r[10].is_null()) {
    Measurement x;
    x.regime = m.regime;
    x.cache = cache_state_from_string(pg::text(r[9])).value_or(CacheState::kWarm);
    x.samples = static_cast<int>(pg::i64(r[10]));
    x.median_us = pg::real(r[11]);
    x.min_us = pg::real(r[12]);
    x.max_us = pg::real(r[13]);
    x.noise = pg::real(r[14]);
    x.sm_clock_mhz = static_cast<int>(pg::i64(r[20]));
    x.throttle = pg::text(r[21]);
    m.outcome.measurement = x;
  }
  if (!r[15].is_null())
    m.outcome.check =
        ErrorCheck{pg::text(r[15]), r[16].is_null() ? NAN : pg::real(r[16]), pg::real(r[17])};
  m.outcome.message = pg::text(r[18]);
  m.created_at = pg::text(r[19]);
  if (!r[22].is_null()) m.discarded = pg::text(r[22]);
  if (!r[23].is_null()) m.cost_s = pg::real(r[23]);
  return m;
}

constexpr const char* kMeasurementColumns =
    "id, run_id, device_key, problem_key, backend, config, config_hash, verdict, regime, cache, "
    "samples, median_us, min_us, max_us, noise, error_metric, error_value, error_tolerance, "
    "message, created_at, sm_clock_mhz, throttle, discarded, cost_s";

constexpr const char* kWorkColumns =
    "id, device, backend, problem, problem_name, options, state, attempts, lease_token, "
    "coalesce(lease_until, ''), coalesce(holder_host, ''), coalesce(holder_pid, 0), "
    "coalesce(holder_device, ''), coalesce(run_id, 0), created_at, coalesce(finished_at, ''), "
    "message";

WorkItem read_work_item(const pqxx::row& r) {
  WorkItem w;
  w.id = pg::i64(r[0]);
  w.device = pg::text(r[1]);
  w.backend = pg::text(r[2]);
  w.problem = pg::text(r[3]);
  w.problem_name = pg::text(r[4]);
  w.options = pg::text(r[5]);
  w.state = pg::text(r[6]);
  w.attempts = pg::i64(r[7]);
  w.lease_token = pg::i64(r[8]);
  w.lease_until = pg::text(r[9]);
  w.holder_host = pg::text(r[10]);
  w.holder_pid = pg::i64(r[11]);
  w.holder_device = pg::text(r[12]);
  w.run_id = pg::i64(r[13]);
  w.created_at = pg::text(r[14]);
  w.finished_at = pg::text(r[15]);
  w.message = pg::text(r[16]);
  return w;
}

// The owner a runs row names, from its host, boot_id, pid and pid_start columns at `first`.
platform::ProcessIdentity run_owner(const pqxx::row& r, int first) {
  return {pg::text(r[first]), pg::text(r[first + 1]), pg::i64(r[first + 2]), pg::i64(r[first + 3])};
}

// Closes run_id as interrupted if it still runs and drops its claims, in tx.
void interrupt_run(pqxx::transaction_base& tx, std::int64_t run_id) {
  exec(tx,
       fmt::format("UPDATE runs SET status = 'interrupted', finished_at = {} WHERE id = $1 AND "
                   "status = 'running'",
                   kNow),
       Params().add(run_id));
  exec(tx, "DELETE FROM claims WHERE run_id = $1", Params().add(run_id));
}

}  // namespace

Result<std::unique_ptr<PostgresStore>> PostgresStore::open(const std::string& url,
                                                           bool create_if_missing) {
  std::unique_ptr<pqxx::connection> conn;
  try {
    conn = std::make_unique<pqxx::connection>(url);
  } catch (const std::exception& e) {
    std::string why = e.what();
    why = why.substr(0, why.find('\n'));
    return Error::io(
        fmt::format("cannot connect to the PostgreSQL database {}: {}", pg::shown_url(url), why));
  }
  const std::string shown = pg::shown_url(url);
  auto opened = pg::guarded("opening " + shown, url, [&]() -> Status {
    // Classifying, creating and migrating are one transaction under one lock: of several
    // workers opening a new database at once, one creates it and the others see it made.
    pqxx::work tx(*conn);
    exec(tx, "SELECT pg_advisory_xact_lock($1)", Params().add(kSchemaLock));
    ATTUNE_ASSIGN(int version, attune_schema_version(tx, url));
    // Against the version the database says it is at, before migrating it to a newer one.
    ATTUNE_TRY(check_tables(tx, version, shown));
    if (version == 0 && !create_if_missing)
      return Error::not_found(
          shown + " holds no attune database yet (run attune tune first, or pass --db)");
    const int current = store_schema::current_version();
    for (int v = version + 1; v <= current; ++v) {
      tx.exec(store_schema::migration(v, store_schema::Dialect::kPostgres));
      exec(tx, "UPDATE attune_schema SET version = $1", Params().add(v));
    }
    tx.commit();
    return Status::success();
  });
  if (!opened.ok()) return opened.error();
  std::unique_ptr<PostgresStore> store(new PostgresStore(std::move(conn), url));
  auto closed = store->close_orphaned_runs();
  if (!closed) return closed.error().with_context(shown);
  return store;
}

Result<std::int64_t> PostgresStore::begin_run(RunInfo run) {
  return guarded("recording the start of a run", [&]() -> Result<std::int64_t> {
    const platform::ProcessIdentity owner = platform::current_process();
    pqxx::nontransaction tx(*conn_);
    auto r = exec(tx,
                  fmt::format("INSERT INTO runs (command, arguments, strategy, seed, version, "
                              "device_key, started_at, status, host, boot_id, pid, pid_start, "
                              "search_key, resumes) VALUES ($1, $2, $3, $4, $5, $6, {}, "
                              "'running', $7, $8, $9, $10, $11, $12) RETURNING id",
                              kNow),
                  Params()
                      .add(run.command)
                      .add(run.arguments)
                      .add(run.strategy)
                      .add(static_cast<std::int64_t>(run.seed))
                      .add(run.version)
                      .add(run.device_key)
                      .add(owner.host)
                      .add(owner.boot_id)
                      .add(owner.pid)
                      .add(owner.start_ticks)
                      .add(run.search_key)
                      .add_id_or_null(run.resumes));
    return pg::i64(r[0][0]);
  });
}

Status PostgresStore::finish_run(std::int64_t run_id, const std::string& status) {
  return guarded("recording the end of a run", [&]() -> Status {
    pqxx::work tx(*conn_);
    exec(tx, fmt::format("UPDATE runs SET finished_at = {}, status = $1 WHERE id = $2", kNow),
         Params().add(status).add(run_id));
    exec(tx, "DELETE FROM claims WHERE run_id = $1", Params().add(run_id));
    tx.commit();
    return Status::success();
  });
}

Result<std::vector<RunInfo>> PostgresStore::runs() {
  return guarded("listing runs", [&]() -> Result<std::vector<RunInfo>> {
    pqxx::nontransaction tx(*conn_);
    auto rows = exec(tx,
                     "SELECT id, command, arguments, strategy, seed, version, device_key, "
                     "started_at, coalesce(finished_at, ''), status, coalesce(host, ''), "
                     "coalesce(pid, 0), search_key, coalesce(resumes, 0) FROM runs ORDER BY id");
    std::vector<RunInfo> out;
    for (const auto& row : rows) {
      RunInfo r;
      r.id = pg::i64(row[0]);
      r.command = pg::text(row[1]);
      r.arguments = pg::text(row[2]);
      r.strategy = pg::text(row[3]);
      r.seed = static_cast<std::uint64_t>(pg::i64(row[4]));
      r.version = pg::text(row[5]);
      r.device_key = pg::text(row[6]);
      r.started_at = pg::text(row[7]);
      r.finished_at = pg::text(row[8]);
      r.status = pg::text(row[9]);
      r.host = pg::text(row[10]);
      r.pid = pg::i64(row[11]);
      r.search_key = pg::text(row[12]);
      r.resumes = pg::i64(row[13]);
      out.push_back(std::move(r));
    }
    return out;
  });
}

Result<int> PostgresStore::close_orphaned_runs() {
  return guarded("looking for runs whose process is gone", [&]() -> Result<int> {
    const std::string host = platform::host_name();
    if (host.empty()) return 0;  // no run can be judged ours
    pqxx::work tx(*conn_);
    auto rows = exec(tx,
                     "SELECT id, host, coalesce(boot_id, ''), coalesce(pid, 0), "
                     "coalesce(pid_start, 0) FROM runs WHERE status = 'running' AND host = $1 "
                     "FOR UPDATE SKIP LOCKED",
                     Params().add(host));
    int closed = 0;
    for (const auto& row : rows) {
      if (platform::alive(run_owner(row, 1))) continue;
      interrupt_run(tx, pg::i64(row[0]));
      ++closed;
    }
    tx.commit();
    return closed;
  });
}

Result<ClaimResult> PostgresStore::claim(const ClaimKey& key, std::int64_t run_id) {
  return guarded("claiming a candidate", [&]() -> Result<ClaimResult> {
    auto params = [&] {
      return Params()
          .add(key.device_key)
          .add(key.problem_key)
          .add(key.backend)
          .add(to_string(key.regime))
          .add(key.config_hash);
    };
    constexpr const char* kKey =
        "device_key = $1 AND problem_key = $2 AND backend = $3 AND regime = $4 AND "
        "config_hash = $5";
    pqxx::work tx(*conn_);
    // The claim row first (inserted, or locked as it is), then the measured check: a run that
    // records and releases in between is then seen as measured, never measured twice.
    std::optional<pqxx::row> holder;
    while (true) {
      auto ins = exec(tx,
                      fmt::format("INSERT INTO claims (device_key, problem_key, backend, regime, "
                                  "config_hash, run_id, claimed_at) VALUES ($1, $2, $3, $4, $5, "
                                  "$6, {}) ON CONFLICT DO NOTHING RETURNING run_id",
                                  kNow),
                      params().add(run_id));
      if (!ins.empty()) break;
      auto held = exec(tx,
                       "SELECT c.run_id, coalesce(r.status, ''), coalesce(r.host, ''), "
                       "coalesce(r.boot_id, ''), coalesce(r.pid, 0), coalesce(r.pid_start, 0) "
                       "FROM claims c LEFT JOIN runs r ON r.id = c.run_id WHERE c.device_key = "
                       "$1 AND c.problem_key = $2 AND c.backend = $3 AND c.regime = $4 AND "
                       "c.config_hash = $5 FOR UPDATE OF c",
                       params());
      if (!held.empty()) {
        holder = held[0];
        break;
      }
      // Released between the two statements: try to take it again.
    }
    auto measured = exec(tx,
                         fmt::format("SELECT 1 FROM measurements WHERE {} AND discarded IS NULL "
                                     "LIMIT 1",
                                     kKey),
                         params());
    if (!measured.empty()) {
      tx.abort();  // an inserted claim is not kept
      return ClaimResult::kMeasured;
    }
    if (holder) {
      const std::int64_t by = pg::i64((*holder)[0]);
      if (by == run_id) {
        tx.commit();
        return ClaimResult::kOurs;
      }
      if (pg::text((*holder)[1]) == "running") {
        if (platform::alive(run_owner(*holder, 2))) {
          tx.commit();
          return ClaimResult::kHeld;
        }
        // Its tuner was killed: nobody will measure it.
        interrupt_run(tx, by);
      }
      exec(tx,
           fmt::format("INSERT INTO claims (device_key, problem_key, backend, regime, config_hash, "
                       "run_id, claimed_at) VALUES ($1, $2, $3, $4, $5, $6, {0}) ON CONFLICT "
                       "(device_key, problem_key, backend, regime, config_hash) DO UPDATE SET "
                       "run_id = excluded.run_id, claimed_at = excluded.claimed_at",
                       kNow),
           params().add(run_id));
    }
    tx.commit();
    return ClaimResult::kOurs;
  });
}

Status PostgresStore::release(const ClaimKey& key, std::int64_t run_id) {
  return guarded("releasing a claimed candidate", [&]() -> Status {
    pqxx::nontransaction tx(*conn_);
    exec(tx,
         "DELETE FROM claims WHERE device_key = $1 AND problem_key = $2 AND backend = $3 AND "
         "regime = $4 AND config_hash = $5 AND run_id = $6",
         Params()
             .add(key.device_key)
             .add(key.problem_key)
             .add(key.backend)
             .add(to_string(key.regime))
             .add(key.config_hash)
             .add(run_id));
    return Status::success();
  });
}

Status PostgresStore::put_device(const DeviceFingerprint& d) {
  return guarded("recording a device", [&]() -> Status {
    nlohmann::json j = d;
    pqxx::nontransaction tx(*conn_);
    exec(tx,
         fmt::format("INSERT INTO devices (key, backend, name, arch, sm_count, memory_bytes, "
                     "fingerprint, first_seen, last_seen) VALUES ($1, $2, $3, $4, $5, $6, $7, "
                     "{0}, {0}) ON CONFLICT (key) DO UPDATE SET fingerprint = "
                     "excluded.fingerprint, last_seen = {0}",
                     kNow),
         Params()
             .add(d.key())
             .add(d.backend)
             .add(d.name)
             .add(d.arch)
             .add(d.sm_count)
             .add(static_cast<std::int64_t>(d.memory_bytes))
             .add(j.dump()));
    return Status::success();
  });
}

Result<std::vector<DeviceFingerprint>> PostgresStore::devices() {
  return guarded("listing devices", [&]() -> Result<std::vector<DeviceFingerprint>> {
    pqxx::nontransaction tx(*conn_);
    auto rows = exec(tx, "SELECT fingerprint FROM devices ORDER BY first_seen, key");
    std::vector<DeviceFingerprint> out;
    for (const auto& row : rows) {
      auto j = nlohmann::json::parse(pg::text(row[0]), nullptr, false);
      if (j.is_discarded())
        return Error::corrupt("devices table holds a fingerprint that is not JSON");
      ATTUNE_ASSIGN(DeviceFingerprint d, device_from_json(j));
      out.push_back(std::move(d));
    }
    return out;
  });
}

Status PostgresStore::put_problem(const Problem& p, const std::string& payload) {
  return guarded("recording a problem", [&]() -> Status {
    pqxx::nontransaction tx(*conn_);
    exec(tx,
         fmt::format("INSERT INTO problems (key, op, text, name, payload, created_at) VALUES "
                     "($1, $2, $3, $4, $5, {}) ON CONFLICT (key) DO UPDATE SET name = "
                     "excluded.name, payload = CASE WHEN excluded.payload = '' THEN "
                     "problems.payload ELSE excluded.payload END",
                     kNow),
         Params().add(p.structural_key()).add(p.op()).add(p.text()).add(p.name()).add(payload));
    return Status::success();
  });
}

namespace {
Result<ProblemRecord> read_problem(const pqxx::row& r) {
  auto p = Problem::parse(pg::text(r[1]));
  if (!p) return p.error().with_context("problems table");
  p->set_name(pg::text(r[2]));
  return ProblemRecord{*p, pg::text(r[0]), pg::text(r[3])};
}

// Every row a problems query (key, text, name, payload) returned.
Result<std::vector<ProblemRecord>> read_problems(const pqxx::result& rows) {
  std::vector<ProblemRecord> out;
  for (const auto& row : rows) {
    ATTUNE_ASSIGN(ProblemRecord r, read_problem(row));
    out.push_back(std::move(r));
  }
  return out;
}
}  // namespace

Result<std::optional<ProblemRecord>> PostgresStore::find_problem(const std::string& key_or_name) {
  return guarded("looking up a problem", [&]() -> Result<std::optional<ProblemRecord>> {
    pqxx::nontransaction tx(*conn_);
    auto rows = exec(tx,
                     "SELECT key, text, name, payload FROM problems WHERE key = $1 OR name = $1 "
                     "ORDER BY key = $1 DESC, key",
                     Params().add(key_or_name));
    ATTUNE_ASSIGN(std::vector<ProblemRecord> found, read_problems(rows));
    return one_problem(key_or_name, std::move(found));
  });
}

Result<std::vector<ProblemRecord>> PostgresStore::problems() {
  return guarded("listing problems", [&]() -> Result<std::vector<ProblemRecord>> {
    pqxx::nontransaction tx(*conn_);
    auto rows =
        exec(tx, "SELECT key, text, name, '' FROM problems ORDER BY name COLLATE \"C\", key");
    return read_problems(rows);
  });
}

namespace {

// record()'s insert in tx; created_at "" is now.
std::int64_t insert_measurement_in(pqxx::transaction_base& tx, const MeasurementRow& r,
                                   const std::string& created_at) {
  Params p;
  p.add_id_or_null(r.run_id)
      .add(r.device_key)
      .add(r.problem_key)
      .add(r.backend)
      .add(r.config)
      .add(r.config_hash)
      .add(to_string(r.outcome.verdict))
      .add(to_string(r.regime));
  if (const auto& m = r.outcome.measurement)
    p.add(to_string(m->cache))
        .add(m->samples)
        .add(m->median_us)
        .add(m->min_us)
        .add(m->max_us)
        .add(m->noise);
  else
    for (int i = 0; i < 6; ++i) p.add_null();
  if (const auto& c = r.outcome.check) {
    p.add(c->metric);
    if (std::isfinite(c->value))
      p.add(c->value);
    else
      p.add_null();
    p.add(c->tolerance);
  } else {
    p.add_null().add_null().add_null();
  }
  p.add(r.outcome.message);
  if (const auto& m = r.outcome.measurement)
    p.add(m->sm_clock_mhz).add(m->throttle);
  else
    p.add_null().add_null();
  if (created_at.empty())
    p.add_null();
  else
    p.add(created_at);
  if (r.cost_s > 0)
    p.add(r.cost_s);
  else
    p.add_null();
  auto rows =
      exec(tx,
           fmt::format("INSERT INTO measurements (run_id, device_key, problem_key, "
                       "backend, config, config_hash, verdict, regime, cache, samples, "
                       "median_us, min_us, max_us, noise, error_metric, error_value, "
                       "error_tolerance, message, created_at, sm_clock_mhz, throttle, cost_s) "
                       "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, "
                       "$14, $15, $16, $17, $18, coalesce($21, {}), $19, $20, $22) "
                       "RETURNING id",
                       kNow),
           p);
  return pg::i64(rows[0][0]);
}

}  // namespace

Result<std::int64_t> PostgresStore::record(MeasurementRow r) {
  return guarded("recording a measurement", [&]() -> Result<std::int64_t> {
    pqxx::nontransaction tx(*conn_);  // autocommit: the row is durable when this returns
    return insert_measurement_in(tx, r, "");
  });
}

Result<std::optional<MeasurementRow>> PostgresStore::find(const std::string& device_key,
                                                          const std::string& problem_key,
                                                          const std::string& backend, Regime regime,
                                                          const std::string& config_hash) {
  return guarded("looking up a measurement", [&]() -> Result<std::optional<MeasurementRow>> {
    pqxx::nontransaction tx(*conn_);
    auto rows = exec(tx,
                     fmt::format("SELECT {} FROM measurements WHERE device_key = $1 AND "
                                 "problem_key = $2 AND backend = $3 AND regime = $4 AND "
                                 "config_hash = $5 AND discarded IS NULL ORDER BY id DESC LIMIT 1",
                                 kMeasurementColumns),
                     Params()
                         .add(device_key)
                         .add(problem_key)
                         .add(backend)
                         .add(to_string(regime))
                         .add(config_hash));
    if (rows.empty()) return std::optional<MeasurementRow>{};
    return std::optional<MeasurementRow>(read_measurement(rows[0]));
  });
}

Result<std::vector<MeasurementRow>> PostgresStore::measurements(const MeasurementQuery& q) {
  return guarded("listing measurements", [&]() -> Result<std::vector<MeasurementRow>> {
    pqxx::nontransaction tx(*conn_);
    auto rows =
        exec(tx,
             fmt::format("SELECT {} FROM measurements m WHERE ($1 = '' OR m.problem_key = $1 OR "
                         "m.problem_key IN (SELECT key FROM problems WHERE name = $1 OR op = $1)) "
                         "AND ($2 = '' OR m.device_key = $2) AND ($3 = '' OR m.backend = $3) AND "
                         "($4 = '' OR m.regime = $4) AND ($5 = 0 OR m.verdict != 'ok') AND "
                         "($6 = 1 OR m.discarded IS NULL) ORDER BY m.id",
                         kMeasurementColumns),
             Params()
                 .add(q.problem)
                 .add(q.device_key)
                 .add(q.backend)
                 .add(q.regime ? std::string(to_string(*q.regime)) : std::string())
                 .add(q.failures_only ? 1 : 0)
                 .add(q.include_discarded ? 1 : 0));
    std::vector<MeasurementRow> out;
    out.reserve(rows.size());
    for (const auto& row : rows) out.push_back(read_measurement(row));
    return out;
  });
}

Status PostgresStore::discard(const std::vector<std::int64_t>& ids, const std::string& reason) {
  return guarded("discarding measurements", [&]() -> Status {
    pqxx::work tx(*conn_);
    for (std::int64_t id : ids)
      exec(tx, "UPDATE measurements SET discarded = $1 WHERE id = $2",
           Params().add(reason).add(id));
    tx.commit();
    return Status::success();
  });
}

Status PostgresStore::put_search_nodes(const std::string& device_key,
                                       const std::string& problem_key, const std::string& strategy,
                                       const std::vector<SearchNode>& nodes) {
  return guarded("saving search-tree nodes", [&]() -> Status {
    // One transaction for the whole tree: a later run sees all of it or none.
    pqxx::work tx(*conn_);
    for (const auto& n : nodes)
      exec(tx,
           fmt::format("INSERT INTO search_nodes (device_key, problem_key, strategy, path, "
                       "visits, best_us, payload, updated_at) VALUES ($1, $2, $3, $4, $5, $6, "
                       "$7, {}) ON CONFLICT (device_key, problem_key, strategy, path) DO UPDATE "
                       "SET visits = excluded.visits, best_us = excluded.best_us, payload = "
                       "excluded.payload, updated_at = excluded.updated_at",
                       kNow),
           Params()
               .add(device_key)
               .add(problem_key)
               .add(strategy)
               .add(n.path)
               .add(n.visits)
               .add(n.best_us)
               .add(n.payload));
    tx.commit();
    return Status::success();
  });
}

Result<std::vector<SearchNode>> PostgresStore::search_nodes(const std::string& device_key,
                                                            const std::string& problem_key,
                                                            const std::string& strategy) {
  return guarded("reading search-tree nodes", [&]() -> Result<std::vector<SearchNode>> {
    pqxx::nontransaction tx(*conn_);
    auto rows = exec(tx,
                     "SELECT path, visits, best_us, payload FROM search_nodes WHERE device_key = "
                     "$1 AND problem_key = $2 AND strategy = $3 ORDER BY path COLLATE \"C\"",
                     Params().add(device_key).add(problem_key).add(strategy));
    std::vector<SearchNode> out;
    for (const auto& row : rows)
      out.push_back(
          SearchNode{pg::text(row[0]), pg::i64(row[1]), pg::real(row[2]), pg::text(row[3])});
    return out;
  });
}

Status PostgresStore::put_baseline(const BaselineRecord& b) {
  return guarded("recording a baseline", [&]() -> Status {
    pqxx::nontransaction tx(*conn_);
    exec(tx,
         fmt::format("INSERT INTO baselines (device_key, problem_key, backend, config, "
                     "config_hash, recorded_at) VALUES ($1, $2, $3, $4, $5, {}) ON CONFLICT "
                     "(device_key, problem_key, backend) DO UPDATE SET config = excluded.config, "
                     "config_hash = excluded.config_hash, recorded_at = excluded.recorded_at",
                     kNow),
         Params()
             .add(b.device_key)
             .add(b.problem_key)
             .add(b.backend)
             .add(b.config)
             .add(b.config_hash));
    return Status::success();
  });
}

Result<std::optional<BaselineRecord>> PostgresStore::find_baseline(const std::string& device_key,
                                                                   const std::string& problem_key,
                                                                   const std::string& backend) {
  return guarded("looking up a baseline", [&]() -> Result<std::optional<BaselineRecord>> {
    pqxx::nontransaction tx(*conn_);
    auto rows = exec(tx,
                     "SELECT config, config_hash, recorded_at FROM baselines WHERE device_key = "
                     "$1 AND problem_key = $2 AND backend = $3",
                     Params().add(device_key).add(problem_key).add(backend));
    if (rows.empty()) return std::optional<BaselineRecord>{};
    return std::optional<BaselineRecord>(BaselineRecord{device_key, problem_key, backend,
                                                        pg::text(rows[0][0]), pg::text(rows[0][1]),
                                                        pg::text(rows[0][2])});
  });
}

Result<std::int64_t> PostgresStore::put_prior(PriorRecord p) {
  return guarded("saving a prior checkpoint", [&]() -> Result<std::int64_t> {
    pqxx::nontransaction tx(*conn_);
    auto rows = exec(tx,
                     fmt::format("INSERT INTO priors (name, created_at, rows, calibration, "
                                 "quarantined, model, reservoir) VALUES ($1, {}, $2, $3, $4, "
                                 "$5::bytea, $6::bytea) RETURNING id",
                                 kNow),
                     Params()
                         .add(p.name)
                         .add(p.rows)
                         .add(p.calibration)
                         .add(p.quarantined ? 1 : 0)
                         .add_bytes(p.model)
                         .add_bytes(p.reservoir));
    return pg::i64(rows[0][0]);
  });
}

Result<std::optional<PriorRecord>> PostgresStore::latest_prior(const std::string& name) {
  return guarded("reading a prior checkpoint", [&]() -> Result<std::optional<PriorRecord>> {
    pqxx::nontransaction tx(*conn_);
    auto rows = exec(tx,
                     "SELECT id, name, created_at, rows, calibration, quarantined, model, "
                     "reservoir FROM priors WHERE name = $1 ORDER BY id DESC LIMIT 1",
                     Params().add(name));
    if (rows.empty()) return std::optional<PriorRecord>{};
    const auto& r = rows[0];
    PriorRecord p;
    p.id = pg::i64(r[0]);
    p.name = pg::text(r[1]);
    p.created_at = pg::text(r[2]);
    p.rows = pg::i64(r[3]);
    p.calibration = pg::real(r[4]);
    p.quarantined = pg::i64(r[5]) != 0;
    p.model = pg::bytes(r[6]);
    p.reservoir = pg::bytes(r[7]);
    return std::optional<PriorRecord>(std::move(p));
  });
}

Result<std::int64_t> PostgresStore::enqueue(WorkItem w) {
  return guarded("queueing a work item", [&]() -> Result<std::int64_t> {
    pqxx::nontransaction tx(*conn_);
    auto rows = exec(
        tx,
        fmt::format("INSERT INTO work_items (created_at, device, backend, problem, "
                    "problem_name, options, state) VALUES ({}, $1, $2, $3, $4, $5, "
                    "'queued') RETURNING id",
                    kNow),
        Params().add(w.device).add(w.backend).add(w.problem).add(w.problem_name).add(w.options));
    return pg::i64(rows[0][0]);
  });
}

Result<std::optional<WorkItem>> PostgresStore::lease_work(const std::vector<std::string>& devices,
                                                          const std::string& holder_device,
                                                          double lease_s) {
  return guarded("leasing a work item", [&]() -> Result<std::optional<WorkItem>> {
    if (devices.empty()) return std::optional<WorkItem>{};
    Params p;
    std::string in;
    for (const auto& d : devices) {
      p.add(d);
      in += fmt::format("{}${}", in.empty() ? "" : ", ", p.values().size());
    }
    pqxx::work tx(*conn_);
    // SKIP LOCKED: workers leasing at once each take another item instead of queueing on one.
    auto rows = exec(tx,
                     fmt::format("SELECT id, state, coalesce(holder_host, ''), "
                                 "coalesce(holder_boot, ''), coalesce(holder_pid, 0), "
                                 "coalesce(holder_pid_start, 0) FROM work_items WHERE device IN "
                                 "({}) AND (state = 'queued' OR (state = 'leased' AND "
                                 "lease_until < {})) ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED",
                                 in, kNow),
                     p);
    if (rows.empty()) return std::optional<WorkItem>{};
    const std::int64_t id = pg::i64(rows[0][0]);
    if (pg::text(rows[0][1]) == "leased") {
      // Its holder stopped renewing: close what it was running so its claims are free.
      const auto former = run_owner(rows[0], 2);
      auto held = exec(
          tx,
          "SELECT id FROM runs WHERE status = 'running' AND host = $1 AND "
          "coalesce(boot_id, '') = $2 AND pid = $3 AND coalesce(pid_start, 0) = $4 "
          "FOR UPDATE",
          Params().add(former.host).add(former.boot_id).add(former.pid).add(former.start_ticks));
      for (const auto& r : held) interrupt_run(tx, pg::i64(r[0]));
    }
    const platform::ProcessIdentity me = platform::current_process();
    auto taken = exec(tx,
                      fmt::format("UPDATE work_items SET state = 'leased', attempts = attempts + "
                                  "1, lease_token = lease_token + 1, lease_until = {}, "
                                  "holder_host = $2, holder_boot = $3, holder_pid = $4, "
                                  "holder_pid_start = $5, holder_device = $6 WHERE id = $7 "
                                  "RETURNING {}",
                                  now_plus("$1::double precision"), kWorkColumns),
                      Params()
                          .add(lease_s)
                          .add(me.host)
                          .add(me.boot_id)
                          .add(me.pid)
                          .add(me.start_ticks)
                          .add(holder_device)
                          .add(id));
    WorkItem w = read_work_item(taken[0]);
    tx.commit();
    return std::optional<WorkItem>(std::move(w));
  });
}

Result<bool> PostgresStore::renew_lease(std::int64_t id, std::int64_t lease_token, double lease_s) {
  return guarded("renewing a lease", [&]() -> Result<bool> {
    pqxx::nontransaction tx(*conn_);
    auto rows = exec(tx,
                     fmt::format("UPDATE work_items SET lease_until = {} WHERE id = $2 AND "
                                 "lease_token = $3 AND state = 'leased' RETURNING id",
                                 now_plus("$1::double precision")),
                     Params().add(lease_s).add(id).add(lease_token));
    return !rows.empty();
  });
}

Result<bool> PostgresStore::finish_work(std::int64_t id, std::int64_t lease_token,
                                        const std::string& state, const std::string& message,
                                        std::int64_t run_id) {
  return guarded("finishing a work item", [&]() -> Result<bool> {
    if (state != "done" && state != "failed" && state != "queued")
      return Error::invalid_argument("a work item ends done, failed or queued, not " + state);
    pqxx::nontransaction tx(*conn_);
    auto rows =
        exec(tx,
             fmt::format("UPDATE work_items SET state = $1, message = $2, run_id = "
                         "coalesce($3, run_id), lease_until = NULL, finished_at = CASE "
                         "WHEN $1 = 'queued' THEN NULL ELSE {} END WHERE id = $4 AND "
                         "lease_token = $5 AND state = 'leased' RETURNING id",
                         kNow),
             Params().add(state).add(message).add_id_or_null(run_id).add(id).add(lease_token));
    return !rows.empty();
  });
}

Result<std::vector<WorkItem>> PostgresStore::work_items() {
  return guarded("listing work items", [&]() -> Result<std::vector<WorkItem>> {
    pqxx::nontransaction tx(*conn_);
    auto rows = exec(tx, fmt::format("SELECT {} FROM work_items ORDER BY id", kWorkColumns));
    std::vector<WorkItem> out;
    for (const auto& row : rows) out.push_back(read_work_item(row));
    return out;
  });
}

Result<std::int64_t> PostgresStore::import_run(const RunInfo& run) {
  return guarded("merging a run", [&]() -> Result<std::int64_t> {
    pqxx::work tx(*conn_);
    // Serialises merges into this database: two at once must not both add one run.
    exec(tx, "LOCK TABLE runs IN SHARE ROW EXCLUSIVE MODE");
    auto same = exec(tx,
                     "SELECT id FROM runs WHERE started_at = $1 AND coalesce(host, '') = $2 AND "
                     "coalesce(pid, 0) = $3 AND command = $4 AND arguments = $5 ORDER BY id "
                     "LIMIT 1",
                     Params()
                         .add(run.started_at)
                         .add(run.host)
                         .add(run.pid)
                         .add(run.command)
                         .add(run.arguments));
    if (!same.empty()) {
      const std::int64_t id = pg::i64(same[0][0]);
      tx.commit();
      return id;
    }
    Params p;
    p.add(run.command)
        .add(run.arguments)
        .add(run.strategy)
        .add(static_cast<std::int64_t>(run.seed))
        .add(run.version)
        .add(run.device_key)
        .add(run.started_at);
    if (run.finished_at.empty())
      p.add_null();
    else
      p.add(run.finished_at);
    p.add(run.status).add(run.host).add(run.pid).add(run.search_key).add_id_or_null(run.resumes);
    auto added = exec(tx,
                      "INSERT INTO runs (command, arguments, strategy, seed, version, device_key, "
                      "started_at, finished_at, status, host, pid, search_key, resumes) VALUES "
                      "($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) RETURNING id",
                      p);
    const std::int64_t id = pg::i64(added[0][0]);
    tx.commit();
    return id;
  });
}

Result<bool> PostgresStore::import_measurement(const MeasurementRow& row) {
  return guarded("merging a measurement", [&]() -> Result<bool> {
    if (row.created_at.empty()) return Error::invalid_argument("a merged measurement has no time");
    pqxx::work tx(*conn_);
    exec(tx, "LOCK TABLE measurements IN SHARE ROW EXCLUSIVE MODE");
    auto same = exec(tx,
                     "SELECT 1 FROM measurements WHERE device_key = $1 AND problem_key = $2 AND "
                     "backend = $3 AND regime = $4 AND config_hash = $5 AND created_at = $6 "
                     "LIMIT 1",
                     Params()
                         .add(row.device_key)
                         .add(row.problem_key)
                         .add(row.backend)
                         .add(to_string(row.regime))
                         .add(row.config_hash)
                         .add(row.created_at));
    const bool found = !same.empty();
    if (!found) insert_measurement_in(tx, row, row.created_at);
    tx.commit();
    return !found;
  });
}

}  // namespace attune
