#include "store/sqlite/schema.h"

#include <limits>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace attune::sqlite {

namespace {

// Never edit a released migration: add a new one. Each string runs inside one transaction.
const std::vector<std::string>& migrations() {
  static const std::vector<std::string> m = {
      // 1: runs, devices, problems, measurements.
      R"sql(
CREATE TABLE attune_schema (version INTEGER NOT NULL);
INSERT INTO attune_schema (version) VALUES (0);
CREATE TABLE runs (
  id INTEGER PRIMARY KEY,
  command TEXT NOT NULL,
  arguments TEXT NOT NULL,
  strategy TEXT NOT NULL DEFAULT '',
  seed INTEGER NOT NULL DEFAULT 0,
  version TEXT NOT NULL DEFAULT '',
  device_key TEXT NOT NULL DEFAULT '',
  started_at TEXT NOT NULL,
  finished_at TEXT,
  status TEXT NOT NULL
);
CREATE TABLE devices (
  key TEXT PRIMARY KEY,
  backend TEXT NOT NULL,
  name TEXT NOT NULL,
  arch TEXT NOT NULL,
  sm_count INTEGER NOT NULL,
  memory_bytes INTEGER NOT NULL,
  fingerprint TEXT NOT NULL,
  first_seen TEXT NOT NULL,
  last_seen TEXT NOT NULL
);
CREATE TABLE problems (
  key TEXT PRIMARY KEY,
  op TEXT NOT NULL,
  text TEXT NOT NULL,
  name TEXT NOT NULL,
  payload TEXT NOT NULL DEFAULT '',
  created_at TEXT NOT NULL
);
CREATE INDEX problems_by_name ON problems (name);
CREATE TABLE measurements (
  id INTEGER PRIMARY KEY,
  run_id INTEGER REFERENCES runs (id),
  device_key TEXT NOT NULL REFERENCES devices (key),
  problem_key TEXT NOT NULL REFERENCES problems (key),
  backend TEXT NOT NULL,
  config TEXT NOT NULL,
  config_hash TEXT NOT NULL,
  verdict TEXT NOT NULL,
  regime TEXT NOT NULL,
  cache TEXT,
  samples INTEGER,
  median_us REAL,
  min_us REAL,
  max_us REAL,
  noise REAL,
  error_metric TEXT,
  error_value REAL,
  error_tolerance REAL,
  message TEXT NOT NULL DEFAULT '',
  created_at TEXT NOT NULL
);
CREATE INDEX measurements_lookup
  ON measurements (device_key, problem_key, backend, regime, config_hash);
)sql",
      // 2: clocks and throttle reasons with each measurement; search-tree nodes; priors.
      R"sql(
ALTER TABLE measurements ADD COLUMN sm_clock_mhz INTEGER;
ALTER TABLE measurements ADD COLUMN throttle TEXT;
CREATE TABLE search_nodes (
  device_key TEXT NOT NULL,
  problem_key TEXT NOT NULL REFERENCES problems (key),
  strategy TEXT NOT NULL,
  path TEXT NOT NULL,
  visits INTEGER NOT NULL,
  best_us REAL NOT NULL,
  payload TEXT NOT NULL DEFAULT '',
  updated_at TEXT NOT NULL,
  PRIMARY KEY (device_key, problem_key, strategy, path)
);
CREATE TABLE priors (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  created_at TEXT NOT NULL,
  rows INTEGER NOT NULL,
  calibration REAL NOT NULL,
  quarantined INTEGER NOT NULL,
  model BLOB NOT NULL,
  reservoir BLOB NOT NULL
);
)sql",
      // 3: measurements taken while the device drifted (the anchor moved) are kept but discarded:
      // never answered from the store again, never in tables or the prior.
      R"sql(
ALTER TABLE measurements ADD COLUMN discarded TEXT;
)sql",
      // 4: each problem's baseline config per device and backend, as the tuner measured it: a
      // tuned table's row must beat the baseline's deploy time, and the baseline is only known
      // by which config the backend's space named first when the problem was tuned.
      R"sql(
CREATE TABLE baselines (
  device_key TEXT NOT NULL REFERENCES devices (key),
  problem_key TEXT NOT NULL REFERENCES problems (key),
  backend TEXT NOT NULL,
  config TEXT NOT NULL,
  config_hash TEXT NOT NULL,
  recorded_at TEXT NOT NULL,
  PRIMARY KEY (device_key, problem_key, backend)
);
)sql",
      // 5: the CUDA deploy regime flushes L2 by reads instead of a memset, so a kernel no longer
      // pays for writing back the flush's dirty lines: deploy rows timed the old way are not
      // comparable with new ones. They are kept, discarded, and measured again when asked for.
      R"sql(
UPDATE measurements SET discarded = 'deploy time taken after a memset L2 flush (before schema v5)'
  WHERE backend = 'cuda' AND regime = 'deploy' AND discarded IS NULL;
)sql",
      // 6: a run names the process that owns it (host, boot, pid and the pid's start time, so a
      // reused pid is not taken for the owner): 67 runs of killed tuners stayed 'running' in a
      // kill campaign, and a later open can now close those whose owner is gone. Runs also carry
      // the key of the search they run and the run they resume. Claims split a problem's
      // candidates between concurrent tuners (8 processes of one problem measured 1,929
      // duplicates): a candidate is claimed by a run before it is measured.
      R"sql(
ALTER TABLE runs ADD COLUMN host TEXT;
ALTER TABLE runs ADD COLUMN boot_id TEXT;
ALTER TABLE runs ADD COLUMN pid INTEGER;
ALTER TABLE runs ADD COLUMN pid_start INTEGER;
ALTER TABLE runs ADD COLUMN search_key TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN resumes INTEGER REFERENCES runs (id);
CREATE INDEX runs_running ON runs (host) WHERE status = 'running';
CREATE TABLE claims (
  device_key TEXT NOT NULL,
  problem_key TEXT NOT NULL,
  backend TEXT NOT NULL,
  regime TEXT NOT NULL,
  config_hash TEXT NOT NULL,
  run_id INTEGER NOT NULL REFERENCES runs (id),
  claimed_at TEXT NOT NULL,
  PRIMARY KEY (device_key, problem_key, backend, regime, config_hash)
) WITHOUT ROWID;
CREATE INDEX claims_by_run ON claims (run_id);
)sql",
  };
  return m;
}

}  // namespace

int current_schema_version() {
  return static_cast<int>(migrations().size());
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
    ATTUNE_TRY(db.exec(migrations()[static_cast<std::size_t>(v - 1)], what));
    ATTUNE_TRY(db.exec(fmt::format("UPDATE attune_schema SET version = {}", v), what));
  }
  return Status::success();
}

}  // namespace attune::sqlite
