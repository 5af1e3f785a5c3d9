// Shared pieces of the stack tests: a scratch directory, file writing, the fake provider's path,
// and an in-memory Store that keeps what a tune writes. Not thread-safe (tests are serial).
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "store/store.h"

namespace attune::stack::testing {

inline const std::string kFakeProvider =
    std::string(ATTUNE_SOURCE_DIR) + "/tests/stack/providers/fake_provider.sh";

class TempDir {
 public:
  TempDir() {
    std::string t = (std::filesystem::temp_directory_path() / "attune-stack-test-XXXXXX").string();
    path_ = ::mkdtemp(t.data()) ? t : "";
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline void write_file(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Keeps runs, problems and rows in memory, as the SQLite store would persist them.
class MemoryStore : public Store {
 public:
  std::vector<RunInfo> run_rows;
  std::vector<DeviceFingerprint> device_rows;
  std::vector<Problem> problem_rows;
  std::vector<MeasurementRow> rows;

  Result<std::int64_t> begin_run(RunInfo run) override {
    run.id = static_cast<std::int64_t>(run_rows.size()) + 1;
    run.status = "running";
    run_rows.push_back(run);
    return run.id;
  }
  Status finish_run(std::int64_t id, const std::string& status) override {
    run_rows.at(static_cast<std::size_t>(id - 1)).status = status;
    return Status::success();
  }
  Result<std::vector<RunInfo>> runs() override { return run_rows; }
  Status put_device(const DeviceFingerprint& d) override {
    device_rows.push_back(d);
    return Status::success();
  }
  Result<std::vector<DeviceFingerprint>> devices() override { return device_rows; }
  Status put_problem(const Problem& p, const std::string&) override {
    problem_rows.push_back(p);
    return Status::success();
  }
  Result<std::optional<ProblemRecord>> find_problem(const std::string&) override {
    return std::optional<ProblemRecord>();
  }
  Result<std::vector<ProblemRecord>> problems() override { return std::vector<ProblemRecord>{}; }
  Result<std::int64_t> record(MeasurementRow row) override {
    row.id = static_cast<std::int64_t>(rows.size()) + 1;
    rows.push_back(row);
    return row.id;
  }
  Result<std::optional<MeasurementRow>> find(const std::string&, const std::string&,
                                             const std::string&, Regime,
                                             const std::string&) override {
    return std::optional<MeasurementRow>();
  }
  Result<std::vector<MeasurementRow>> measurements(const MeasurementQuery&) override { return rows; }
  Status discard(const std::vector<std::int64_t>&, const std::string&) override { return Status::success(); }
  Status put_search_nodes(const std::string&, const std::string&, const std::string&,
                          const std::vector<SearchNode>&) override {
    return Status::success();
  }
  Result<std::vector<SearchNode>> search_nodes(const std::string&, const std::string&,
                                               const std::string&) override {
    return std::vector<SearchNode>{};
  }
  Status put_baseline(const BaselineRecord&) override { return Status::success(); }
  Result<std::optional<BaselineRecord>> find_baseline(const std::string&, const std::string&,
                                                      const std::string&) override {
    return std::optional<BaselineRecord>();
  }
  Result<std::int64_t> put_prior(PriorRecord) override { return std::int64_t{1}; }
  Result<std::optional<PriorRecord>> latest_prior(const std::string&) override {
    return std::optional<PriorRecord>();
  }
};

}  // namespace attune::stack::testing
