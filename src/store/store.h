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
  std::string command;      // "tune"
  std::string arguments;    // the argv as JSON
  std::string strategy;
  std::uint64_t seed = 0;
  std::string version;      // attune's version
  std::string device_key;
  std::string started_at;   // ISO 8601 UTC, filled by the store
  std::string finished_at;
  std::string status;       // running, done, failed, interrupted
};

// One candidate's result, whatever its verdict.
struct MeasurementRow {
  std::int64_t id = 0;
  std::int64_t run_id = 0;
  std::string device_key;
  std::string problem_key;  // structural key
  std::string backend;
  std::string config;       // canonical text
  std::string config_hash;
  Regime regime = Regime::kRank;  // the regime it was run in (also for failures)
  Outcome outcome;
  std::string created_at;   // filled by the store
};

// Filter for listing rows; empty fields match everything.
struct MeasurementQuery {
  std::string problem;        // a structural key, a problem name, or an op
  std::string device_key;
  std::string backend;
  std::optional<Regime> regime;
  bool failures_only = false;
};

struct ProblemRecord {
  Problem problem;
  std::string key;
  std::string payload;  // backend data for problems that carry it (a recorded space), or ""
};

// A search-tree node of a strategy for one (device, problem): persisted so later runs continue.
struct SearchNode {
  std::string path;         // the node's prefix, canonical text of the decided knobs
  std::int64_t visits = 0;
  double best_us = 0;       // best time found below this node; 0: none yet
  std::string payload;      // strategy-specific JSON
};

// The config a backend's space names as the baseline of a problem: what runs where no tuned row
// applies, and what every tuned row must beat. One per (device, problem, backend).
struct BaselineRecord {
  std::string device_key;
  std::string problem_key;  // structural key
  std::string backend;
  std::string config;       // canonical text
  std::string config_hash;
  std::string recorded_at;  // filled by the store
};

struct PriorRecord {
  std::int64_t id = 0;
  std::string name;
  std::string created_at;
  std::int64_t rows = 0;
  double calibration = 0;   // rank correlation on held-back rows
  bool quarantined = false;
  std::string model;        // serialized model bytes
  std::string reservoir;    // training rows
};

class Store {
 public:
  virtual ~Store() = default;

  virtual Result<std::int64_t> begin_run(RunInfo run) = 0;
  virtual Status finish_run(std::int64_t run_id, const std::string& status) = 0;
  virtual Result<std::vector<RunInfo>> runs() = 0;

  // Insert or refresh by key.
  virtual Status put_device(const DeviceFingerprint& device) = 0;
  virtual Result<std::vector<DeviceFingerprint>> devices() = 0;
  virtual Status put_problem(const Problem& problem, const std::string& payload = "") = 0;
  virtual Result<std::optional<ProblemRecord>> find_problem(const std::string& key_or_name) = 0;
  virtual Result<std::vector<ProblemRecord>> problems() = 0;

  // Commits the row at once; returns its id.
  virtual Result<std::int64_t> record(MeasurementRow row) = 0;
  // The newest row for this device, problem, backend, regime and config; nullopt if none.
  virtual Result<std::optional<MeasurementRow>> find(const std::string& device_key,
                                                     const std::string& problem_key,
                                                     const std::string& backend, Regime regime,
                                                     const std::string& config_hash) = 0;
  virtual Result<std::vector<MeasurementRow>> measurements(const MeasurementQuery& query) = 0;
  // Marks rows as discarded with the reason (e.g. the anchor drifted while they were measured):
  // they stay in the database but find() and measurements() no longer return them.
  virtual Status discard(const std::vector<std::int64_t>& ids, const std::string& reason) = 0;

  virtual Status put_search_nodes(const std::string& device_key, const std::string& problem_key,
                                  const std::string& strategy,
                                  const std::vector<SearchNode>& nodes) = 0;
  virtual Result<std::vector<SearchNode>> search_nodes(const std::string& device_key,
                                                       const std::string& problem_key,
                                                       const std::string& strategy) = 0;

  // Insert or replace by (device, problem, backend): the newest tuning run's baseline wins.
  virtual Status put_baseline(const BaselineRecord& baseline) = 0;
  // nullopt when no run recorded one (e.g. rows measured before schema v4).
  virtual Result<std::optional<BaselineRecord>> find_baseline(const std::string& device_key,
                                                              const std::string& problem_key,
                                                              const std::string& backend) = 0;

  virtual Result<std::int64_t> put_prior(PriorRecord prior) = 0;
  virtual Result<std::optional<PriorRecord>> latest_prior(const std::string& name) = 0;
};

// Opens "PATH" (SQLite; created if absent when create_if_missing) or "postgresql://..." (a fleet
// database). A file that is not an attune database, or that was written by a newer attune, is
// refused with a clear message and left untouched.
Result<std::unique_ptr<Store>> open_store(const std::string& url, bool create_if_missing = true);

}  // namespace attune
