// Store: the tuning database behind one interface (SQLite embedded; PostgreSQL for a fleet).
// Every candidate's result is committed as soon as it is known. A Store object is used from one
// thread at a time; several processes may share one database file (WAL, busy timeout).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/error.h"
#include "core/measurement.h"
#include "core/problem.h"

namespace attune {

// One tuning run: written when it starts, closed when it ends.
struct RunInfo {
  std::int64_t id = 0;
  std::string command;    // "tune"
  std::string arguments;  // the argv as JSON
  std::string strategy;
  std::uint64_t seed = 0;
  std::string version;  // attune's version
  std::string device_key;
  std::string started_at;  // ISO 8601 UTC, filled by the store
  std::string finished_at;
  std::string status;  // running, done, failed, interrupted
  // The process that began the run, filled by the store (begin_run ignores what is given): a run
  // whose owner is gone is closed as interrupted (close_orphaned_runs). "" and 0 for runs
  // recorded before schema v6.
  std::string host;
  std::int64_t pid = 0;
  std::string search_key;    // the tuner's hash of the options that decide the search; "" none
  std::int64_t resumes = 0;  // the id of the run this one continues; 0: none
};

// One candidate as concurrent tuners split them: the key of a measurement row.
struct ClaimKey {
  std::string device_key, problem_key, backend;
  Regime regime = Regime::kRank;
  std::string config_hash;
};

// What claim() answers.
enum class ClaimResult {
  kOurs,      // measure it: nobody else is
  kHeld,      // another running run is measuring it: ask again later
  kMeasured,  // a row exists already: answer from find()
};

// One candidate's result, whatever its verdict.
struct MeasurementRow {
  std::int64_t id = 0;
  std::int64_t run_id = 0;
  std::string device_key;
  std::string problem_key;  // structural key
  std::string backend;
  std::string config;  // canonical text
  std::string config_hash;
  Regime regime = Regime::kRank;  // the regime it was run in (also for failures)
  Outcome outcome;
  std::string created_at;  // filled by the store
  // Why the row was discarded (discard()); "" for a kept row. Read back only by a query with
  // include_discarded.
  std::string discarded;
  // Seconds of the tuning run's time this measurement cost (the tuner's time since the candidate
  // before it); 0 when not known. A replay is charged it against the time limit.
  double cost_s = 0;
};

// Filter for listing rows; empty fields match everything.
struct MeasurementQuery {
  std::string problem;  // a structural key, a problem name, or an op
  std::string device_key;
  std::string backend;
  std::optional<Regime> regime;
  bool failures_only = false;
  // Discarded rows too, each with its reason (`attune report` shows what drift cost); find() and
  // every other reader never see them.
  bool include_discarded = false;
};

struct ProblemRecord {
  Problem problem;
  std::string key;
  std::string payload;  // backend data for problems that carry it (a recorded space), or ""
};

// A search-tree node of a strategy for one (device, problem): persisted so later runs continue.
struct SearchNode {
  std::string path;  // the node's prefix, canonical text of the decided knobs
  std::int64_t visits = 0;
  double best_us = 0;   // best time found below this node; 0: none yet
  std::string payload;  // strategy-specific JSON
};

// The config a backend's space names as the baseline of a problem: what runs where no tuned row
// applies, and what every tuned row must beat. One per (device, problem, backend).
struct BaselineRecord {
  std::string device_key;
  std::string problem_key;  // structural key
  std::string backend;
  std::string config;  // canonical text
  std::string config_hash;
  std::string recorded_at;  // filled by the store
};

struct PriorRecord {
  std::int64_t id = 0;
  std::string name;
  std::string created_at;
  std::int64_t rows = 0;
  double calibration = 0;  // rank correlation on held-back rows
  bool quarantined = false;
  std::string model;      // serialized model bytes
  std::string reservoir;  // training rows
};

// One unit of fleet work (`attune tune --enqueue`): tune one problem with these options on a
// device of this key or kind. A worker leases it, renews the lease while it tunes, and marks it
// done; an item whose lease runs out is leased again and continues from what was committed.
struct WorkItem {
  std::int64_t id = 0;
  std::string device;  // a device key (DeviceFingerprint::key()) or kind (device_kind())
  std::string backend;
  std::string problem;           // the problem's text, as the backend resolves it
  std::string problem_name;      // what `attune queue` shows
  std::string options;           // the tune options as JSON (tune/work.h)
  std::string state;             // queued, leased, done, failed
  std::int64_t attempts = 0;     // leases taken so far
  std::int64_t lease_token = 0;  // changes at every lease: what renewing and finishing name
  std::string lease_until;       // ISO 8601 UTC by the database's clock; "" when not leased
  // The process holding or last holding it, and the key of the device it tunes on.
  std::string holder_host;
  std::int64_t holder_pid = 0;
  std::string holder_device;
  std::int64_t run_id = 0;  // the run that finished it; 0: none yet
  std::string created_at;   // filled by the store
  std::string finished_at;
  std::string message;  // why it stopped (stopped_by) or failed
};

// The contract every implementation keeps; tests/store/conformance.h checks it on each of them.
// A measurement or a baseline names a device and a problem the store knows (put_device and
// put_problem come first), a measurement's run a run begun here (or 0: none), search nodes a known
// problem; a row naming an unknown one is refused and nothing is stored. Whatever a call wrote is
// committed when it returns, visible to every other connection to the same database, and
// survives closing and reopening it.
class Store {
 public:
  virtual ~Store() = default;

  // A new run, status "running", started_at and the owner (host, pid, for this process) filled;
  // returns its id (ids increase). A non-zero `resumes` names a run begun here.
  virtual Result<std::int64_t> begin_run(RunInfo run) = 0;
  // Sets the run's status and finished_at, and drops every claim of the run.
  virtual Status finish_run(std::int64_t run_id, const std::string& status) = 0;
  // Oldest first.
  virtual Result<std::vector<RunInfo>> runs() = 0;
  // Closes every 'running' run of this host whose owner process is gone (the owner's pid no longer
  // runs with its start time, or the host has rebooted since) as 'interrupted', finished_at now,
  // and drops its claims; returns how many. A run of a live process, or of another host, is never
  // touched. Opening a store does this once; a long-running caller may call it again.
  virtual Result<int> close_orphaned_runs() = 0;

  // Concurrent tuners of one problem split its candidates: each claims a candidate before
  // measuring it. In one transaction: kMeasured when a non-discarded measurement row of the key
  // exists (the caller answers from find()); kOurs when no claim exists, the claim is already
  // run_id's, or the claiming run is no longer 'running' (the claim is taken over); kHeld when
  // another run that is still running holds it. Before answering kHeld for a run of this host
  // whose owner process is gone, that run is closed as interrupted (as close_orphaned_runs does)
  // and the claim taken over. run_id names a run begun here.
  virtual Result<ClaimResult> claim(const ClaimKey& key, std::int64_t run_id) = 0;
  // Drops run_id's claim on key (once its measurement row is recorded); a claim of another run is
  // left as it is.
  virtual Status release(const ClaimKey& key, std::int64_t run_id) = 0;

  // Insert or refresh by key: a device seen again keeps one row with its newest fingerprint.
  virtual Status put_device(const DeviceFingerprint& device) = 0;
  // In the order they were first seen.
  virtual Result<std::vector<DeviceFingerprint>> devices() = 0;
  // Insert or refresh by structural key: the name is the newest one given; a non-empty payload
  // replaces the stored one, an empty one keeps it.
  virtual Status put_problem(const Problem& problem, const std::string& payload = "") = 0;
  // By structural key or by name; a key match wins over a name match, and a name that several
  // problems share (a user kernel tuned at two sizes) is an invalid_argument naming their keys.
  virtual Result<std::optional<ProblemRecord>> find_problem(const std::string& key_or_name) = 0;
  // By name, without payloads (a recorded space can be large; find_problem carries it).
  virtual Result<std::vector<ProblemRecord>> problems() = 0;

  // Commits the row at once; returns its id (ids increase). Every field of the outcome reads back
  // as written, a NaN error value included; created_at is filled.
  virtual Result<std::int64_t> record(MeasurementRow row) = 0;
  // The newest row for this device, problem, backend, regime and config; nullopt if none.
  virtual Result<std::optional<MeasurementRow>> find(const std::string& device_key,
                                                     const std::string& problem_key,
                                                     const std::string& backend, Regime regime,
                                                     const std::string& config_hash) = 0;
  // The rows matching every non-empty field of the query, oldest first; discarded rows only
  // with query.include_discarded.
  virtual Result<std::vector<MeasurementRow>> measurements(const MeasurementQuery& query) = 0;
  // Marks rows as discarded with the reason (e.g. the anchor drifted while they were measured):
  // they stay in the database but find() and measurements() no longer return them.
  virtual Status discard(const std::vector<std::int64_t>& ids, const std::string& reason) = 0;

  // Insert or replace each node by (device, problem, strategy, path), all of them or none.
  virtual Status put_search_nodes(const std::string& device_key, const std::string& problem_key,
                                  const std::string& strategy,
                                  const std::vector<SearchNode>& nodes) = 0;
  // One strategy's nodes for one device and problem, by path.
  virtual Result<std::vector<SearchNode>> search_nodes(const std::string& device_key,
                                                       const std::string& problem_key,
                                                       const std::string& strategy) = 0;

  // Insert or replace by (device, problem, backend): the newest tuning run's baseline wins.
  virtual Status put_baseline(const BaselineRecord& baseline) = 0;
  // nullopt when no run recorded one (e.g. rows measured before schema v4).
  virtual Result<std::optional<BaselineRecord>> find_baseline(const std::string& device_key,
                                                              const std::string& problem_key,
                                                              const std::string& backend) = 0;

  // A new checkpoint; returns its id. The model and reservoir are bytes, kept exactly.
  virtual Result<std::int64_t> put_prior(PriorRecord prior) = 0;
  // The newest checkpoint of that name; nullopt if none.
  virtual Result<std::optional<PriorRecord>> latest_prior(const std::string& name) = 0;

  // The work queue. Times are the database's clock, so hosts need not agree on theirs.
  // A new item, state "queued", created_at filled; returns its id (ids increase).
  virtual Result<std::int64_t> enqueue(WorkItem item) = 0;
  // Leases the oldest item whose device is one of `devices` and that is queued or whose lease
  // ran out, for lease_s seconds, to this process tuning on `holder_device`, in one transaction
  // that no other lease can share (PostgreSQL: FOR UPDATE SKIP LOCKED). Taking an item whose
  // lease ran out first closes every running run of its former holder process as interrupted and
  // drops their claims: that process stopped renewing (killed, cut off), and its candidates must
  // not stay held. nullopt when no item is free.
  virtual Result<std::optional<WorkItem>> lease_work(const std::vector<std::string>& devices,
                                                     const std::string& holder_device,
                                                     double lease_s) = 0;
  // Extends the lease by lease_s seconds from now; false when the item is no longer leased under
  // this token (its lease ran out and another worker took it).
  virtual Result<bool> renew_lease(std::int64_t id, std::int64_t lease_token, double lease_s) = 0;
  // Ends the lease: state "done" or "failed" (finished_at, message and run_id set), or "queued"
  // to hand the item back at once (a worker told to stop). false when not leased under this token.
  virtual Result<bool> finish_work(std::int64_t id, std::int64_t lease_token,
                                   const std::string& state, const std::string& message,
                                   std::int64_t run_id) = 0;
  // Every item, oldest first.
  virtual Result<std::vector<WorkItem>> work_items() = 0;

  // Merging (`attune db merge`, store/merge.h). The id here of a run read from another store:
  // the run with the same started_at, host, pid, command and arguments, else a new one with every
  // field as given (run.resumes must already be an id here; 0: none).
  virtual Result<std::int64_t> import_run(const RunInfo& run) = 0;
  // Inserts a row read from another store with its created_at kept (run_id already an id here),
  // unless a row of the same device, problem, backend, regime, config and created_at exists;
  // whether it was inserted.
  virtual Result<bool> import_measurement(const MeasurementRow& row) = 0;
};

// What a work item's device may name besides a key: every device of this backend and name, e.g.
// "sim:attune simulated GPU" or "cuda:NVIDIA H200".
std::string device_kind(const DeviceFingerprint& device);

// find_problem's answer from the problems whose key or name is `key_or_name`, key matches first
// (defined in store/open.cpp).
Result<std::optional<ProblemRecord>> one_problem(const std::string& key_or_name,
                                                 std::vector<ProblemRecord> found);

// Opens the store a --db text names, picking the implementation by its scheme: "PATH" or
// "sqlite:PATH" (SQLite; created if absent when create_if_missing; "sqlite:///abs/a.db" is
// /abs/a.db), "postgresql://..." or "postgres://..." (a fleet
// database, libpq's URL form: postgresql://user[:password]@host[:port]/dbname[?param=value]; an
// unreachable server is io naming the URL, its password elided). Another "scheme://" is
// invalid_argument. A file that is not an attune database, or that was written by a newer attune,
// is refused with a clear message and left untouched. Defined in store/open.cpp.
// read_only_ok: an SQLite file this user cannot write is opened to read (SqliteStore::open).
Result<std::unique_ptr<Store>> open_store(const std::string& url, bool create_if_missing = true,
                                          bool read_only_ok = false);
// The SQLite file a --db text names ("PATH", "sqlite:PATH", "sqlite:///abs/a.db"); empty for a
// server's URL or a text that names no file.
std::string store_file(const std::string& url);

}  // namespace attune
