// The embedded tuning database: SQLite with WAL, foreign keys and a busy timeout, so several
// processes can share one file, and create or migrate it together: the schema is brought up to
// date in one immediate transaction. Opening never overwrites: a foreign, damaged (PRAGMA
// quick_check) or newer file is refused before anything is written. One thread at a time per
// SqliteStore.
#pragma once

#include <memory>
#include <string>

#include "store/sqlite/sqlite_db.h"
#include "store/store.h"

namespace attune {

class SqliteStore final : public Store {
 public:
  // read_only_ok: a database this user cannot write (a read-only file or directory) is opened
  // to read instead of refused, for the commands that only read (export, report, eval); it must
  // be at this attune's schema version, and any write to it fails.
  static Result<std::unique_ptr<SqliteStore>> open(const std::string& path,
                                                   bool create_if_missing = true,
                                                   bool read_only_ok = false);

  Result<std::int64_t> begin_run(RunInfo run) override;
  Status finish_run(std::int64_t run_id, const std::string& status) override;
  Result<std::vector<RunInfo>> runs() override;
  Result<int> close_orphaned_runs() override;
  Result<ClaimResult> claim(const ClaimKey& key, std::int64_t run_id) override;
  Status release(const ClaimKey& key, std::int64_t run_id) override;

  Status put_device(const DeviceFingerprint& device) override;
  Result<std::vector<DeviceFingerprint>> devices() override;
  Status put_problem(const Problem& problem, const std::string& payload = "") override;
  Result<std::optional<ProblemRecord>> find_problem(const std::string& key_or_name) override;
  Result<std::vector<ProblemRecord>> problems() override;

  Result<std::int64_t> record(MeasurementRow row) override;
  Result<std::optional<MeasurementRow>> find(const std::string& device_key,
                                             const std::string& problem_key,
                                             const std::string& backend, Regime regime,
                                             const std::string& config_hash) override;
  Result<std::vector<MeasurementRow>> measurements(const MeasurementQuery& query) override;
  Status discard(const std::vector<std::int64_t>& ids, const std::string& reason) override;

  Status put_search_nodes(const std::string& device_key, const std::string& problem_key,
                          const std::string& strategy,
                          const std::vector<SearchNode>& nodes) override;
  Result<std::vector<SearchNode>> search_nodes(const std::string& device_key,
                                               const std::string& problem_key,
                                               const std::string& strategy) override;

  Status put_baseline(const BaselineRecord& baseline) override;
  Result<std::optional<BaselineRecord>> find_baseline(const std::string& device_key,
                                                      const std::string& problem_key,
                                                      const std::string& backend) override;

  Result<std::int64_t> put_prior(PriorRecord prior) override;
  Result<std::optional<PriorRecord>> latest_prior(const std::string& name) override;

  Result<std::int64_t> enqueue(WorkItem item) override;
  Result<std::optional<WorkItem>> lease_work(const std::vector<std::string>& devices,
                                             const std::string& holder_device,
                                             double lease_s) override;
  Result<bool> renew_lease(std::int64_t id, std::int64_t lease_token, double lease_s) override;
  Result<bool> finish_work(std::int64_t id, std::int64_t lease_token, const std::string& state,
                           const std::string& message, std::int64_t run_id) override;
  Result<std::vector<WorkItem>> work_items() override;

  Result<std::int64_t> import_run(const RunInfo& run) override;
  Result<bool> import_measurement(const MeasurementRow& row) override;

  const sqlite::Db& db() const { return db_; }

 private:
  SqliteStore(sqlite::Db db, std::string path) : db_(std::move(db)), path_(std::move(path)) {}
  static Result<std::unique_ptr<SqliteStore>> open_read_only(const std::string& path);
  // Closes run_id as interrupted if it still runs and drops its claims, inside the caller's
  // transaction; true when this call closed it.
  Result<bool> interrupt_run(std::int64_t run_id);
  // record()'s insert; created_at "" is now.
  Result<std::int64_t> insert_measurement(const MeasurementRow& row, const std::string& created_at);
  sqlite::Db db_;
  std::string path_;
};

}  // namespace attune
