// The fleet's tuning database: PostgreSQL through libpqxx, the same tables as the SQLite store
// (store/migrations.h) so that many hosts tune through one database and its work queue. Opening
// classifies the database before writing: one that holds another program's tables, a damaged
// attune_schema or a newer attune's schema is refused and left untouched; an empty one is
// created, an older one migrated, under an advisory lock so that workers starting together apply
// each migration once. One thread at a time per PostgresStore (one connection).
#pragma once

#include <memory>
#include <string>

#include "store/postgres/pg_db.h"
#include "store/store.h"

namespace attune {

class PostgresStore final : public Store {
 public:
  // url: libpq's URL form. An empty database is created only when create_if_missing.
  static Result<std::unique_ptr<PostgresStore>> open(const std::string& url,
                                                     bool create_if_missing = true);

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

 private:
  PostgresStore(std::unique_ptr<pqxx::connection> conn, std::string url)
      : conn_(std::move(conn)), url_(std::move(url)) {}
  // Runs f (returning Result<T> or Status) with libpqxx's exceptions turned into Errors.
  template <typename F>
  auto guarded(const std::string& what, F&& f) {
    return pg::guarded(what, url_, std::forward<F>(f));
  }

  std::unique_ptr<pqxx::connection> conn_;
  std::string url_;
};

}  // namespace attune
