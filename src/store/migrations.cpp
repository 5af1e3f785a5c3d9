#include "store/migrations.h"

#include <vector>

namespace attune::store_schema {

namespace {

// Never edit a released migration: add a new one. Each string runs inside one transaction. The
// column types are written {id}, {int}, {real}, {blob} and a key-only table's {without_rowid},
// so that SQLite reads every migration as it always has and PostgreSQL the same tables in its
// own types.
const std::vector<std::string>& migrations() {
  static const std::vector<std::string> m = {
      // 1: runs, devices, problems, measurements.
      R"sql(
CREATE TABLE attune_schema (version {int} NOT NULL);
INSERT INTO attune_schema (version) VALUES (0);
CREATE TABLE runs (
  id {id},
  command TEXT NOT NULL,
  arguments TEXT NOT NULL,
  strategy TEXT NOT NULL DEFAULT '',
  seed {int} NOT NULL DEFAULT 0,
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
  sm_count {int} NOT NULL,
  memory_bytes {int} NOT NULL,
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
  id {id},
  run_id {int} REFERENCES runs (id),
  device_key TEXT NOT NULL REFERENCES devices (key),
  problem_key TEXT NOT NULL REFERENCES problems (key),
  backend TEXT NOT NULL,
  config TEXT NOT NULL,
  config_hash TEXT NOT NULL,
  verdict TEXT NOT NULL,
  regime TEXT NOT NULL,
  cache TEXT,
  samples {int},
  median_us {real},
  min_us {real},
  max_us {real},
  noise {real},
  error_metric TEXT,
  error_value {real},
  error_tolerance {real},
  message TEXT NOT NULL DEFAULT '',
  created_at TEXT NOT NULL
);
CREATE INDEX measurements_lookup
  ON measurements (device_key, problem_key, backend, regime, config_hash);
)sql",
      // 2: clocks and throttle reasons with each measurement; search-tree nodes; priors.
      R"sql(
ALTER TABLE measurements ADD COLUMN sm_clock_mhz {int};
ALTER TABLE measurements ADD COLUMN throttle TEXT;
CREATE TABLE search_nodes (
  device_key TEXT NOT NULL,
  problem_key TEXT NOT NULL REFERENCES problems (key),
  strategy TEXT NOT NULL,
  path TEXT NOT NULL,
  visits {int} NOT NULL,
  best_us {real} NOT NULL,
  payload TEXT NOT NULL DEFAULT '',
  updated_at TEXT NOT NULL,
  PRIMARY KEY (device_key, problem_key, strategy, path)
);
CREATE TABLE priors (
  id {id},
  name TEXT NOT NULL,
  created_at TEXT NOT NULL,
  rows {int} NOT NULL,
  calibration {real} NOT NULL,
  quarantined {int} NOT NULL,
  model {blob} NOT NULL,
  reservoir {blob} NOT NULL
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
ALTER TABLE runs ADD COLUMN pid {int};
ALTER TABLE runs ADD COLUMN pid_start {int};
ALTER TABLE runs ADD COLUMN search_key TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN resumes {int} REFERENCES runs (id);
CREATE INDEX runs_running ON runs (host) WHERE status = 'running';
CREATE TABLE claims (
  device_key TEXT NOT NULL,
  problem_key TEXT NOT NULL,
  backend TEXT NOT NULL,
  regime TEXT NOT NULL,
  config_hash TEXT NOT NULL,
  run_id {int} NOT NULL REFERENCES runs (id),
  claimed_at TEXT NOT NULL,
  PRIMARY KEY (device_key, problem_key, backend, regime, config_hash)
){without_rowid};
CREATE INDEX claims_by_run ON claims (run_id);
)sql",
      // 7: the fleet's work queue. `attune tune --enqueue` records one item per problem for a
      // device key or kind; a worker leases an item (holder, lease_token, lease_until by the
      // database's clock) and renews the lease while it tunes; an item whose lease ran out is
      // taken again, and the run of its holder closed as interrupted so its claims are free.
      R"sql(
CREATE TABLE work_items (
  id {id},
  created_at TEXT NOT NULL,
  device TEXT NOT NULL,
  backend TEXT NOT NULL,
  problem TEXT NOT NULL,
  problem_name TEXT NOT NULL DEFAULT '',
  options TEXT NOT NULL,
  state TEXT NOT NULL,
  attempts {int} NOT NULL DEFAULT 0,
  lease_token {int} NOT NULL DEFAULT 0,
  lease_until TEXT,
  holder_host TEXT,
  holder_boot TEXT,
  holder_pid {int},
  holder_pid_start {int},
  holder_device TEXT,
  run_id {int} REFERENCES runs (id),
  finished_at TEXT,
  message TEXT NOT NULL DEFAULT ''
);
CREATE INDEX work_items_ready ON work_items (state, device);
)sql",
      // 8: what a measurement cost the run that took it (seconds of the tuner's time since the
      // candidate before it: build, run, and the search's own work between them). A replay is
      // charged that cost against --time-limit, so a re-run with the same limit stops where the
      // first run stopped instead of spending the limit again on new candidates. NULL: not known
      // (rows from before v8), charged nothing.
      R"sql(
ALTER TABLE measurements ADD COLUMN cost_s {real};
)sql",
      // 9: a CUDA deploy time is what the candidate adds to a CUDA graph behind another kernel
      // (a graph of an empty kernel and the candidate, less the empty kernel's graph), not the
      // time of a graph of the candidate alone, which paid a launch that a kernel in a layer's
      // graph does not (1.6-2.9 us per kernel on the H200). Deploy rows timed the old way are
      // kept, discarded, and measured again when asked for.
      R"sql(
UPDATE measurements SET discarded = 'deploy time of a graph of the candidate alone (before schema v9)'
  WHERE backend = 'cuda' AND regime = 'deploy' AND discarded IS NULL;
)sql",
  };
  return m;
}

void replace_all(std::string& text, const std::string& from, const std::string& to) {
  for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
}

}  // namespace

int current_version() {
  return static_cast<int>(migrations().size());
}

std::string migration(int version, Dialect dialect) {
  std::string sql = migrations().at(static_cast<std::size_t>(version - 1));
  const bool pg = dialect == Dialect::kPostgres;
  replace_all(sql, "{id}",
              pg ? "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY" : "INTEGER PRIMARY KEY");
  replace_all(sql, "{int}", pg ? "BIGINT" : "INTEGER");
  replace_all(sql, "{real}", pg ? "DOUBLE PRECISION" : "REAL");
  replace_all(sql, "{blob}", pg ? "BYTEA" : "BLOB");
  replace_all(sql, "{without_rowid}", pg ? "" : " WITHOUT ROWID");
  return sql;
}

}  // namespace attune::store_schema
