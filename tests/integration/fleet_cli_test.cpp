// The fleet from the command line, on both stores (an SQLite file: one host, several processes;
// PostgreSQL: the fleet's database on the throwaway cluster): `attune tune --enqueue` records work
// items instead of tuning, `attune worker` tunes those for its device exactly as a direct
// `attune tune` would, `attune queue` shows them, and bad flags are one line, exit 2.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <set>

#include "store/store.h"
#include "support/postgres.h"
#include "support/run.h"
#include "support/temp_dir.h"

namespace attune {
namespace {

using testing::lines;
using testing::run_attune;
using testing::TempDir;
using testing::TestDatabase;

// The test's own scheduler variables (a CI job may run under SLURM) left out of the command's.
const std::string kNoScheduler =
    "env -u SLURM_ARRAY_TASK_ID -u SLURM_ARRAY_TASK_MIN -u SLURM_ARRAY_TASK_COUNT -u "
    "JOB_COMPLETION_INDEX -u ATTUNE_SHARD_COUNT ";

// The database a test runs on: a file in its temp dir, or a database of its own on the cluster.
class FleetCli : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "postgres") {
      pg_ = std::make_unique<TestDatabase>();
      ATTUNE_NEED_POSTGRES(*pg_);
      db_ = pg_->url();
    } else {
      db_ = dir_.file("fleet.db");
    }
  }
  testing::RunResult attune(const std::string& args) {
    return run_attune(args + " --db '" + db_ + "'", dir_.path());
  }
  // (config, verdict, regime) of every row in the store at url, in the order they were written.
  static std::vector<std::string> rows(const std::string& url) {
    auto s = open_store(url, false);
    EXPECT_TRUE(s.ok()) << s.error().message();
    std::vector<std::string> out;
    if (!s.ok()) return out;
    auto measured = (*s)->measurements({});
    EXPECT_TRUE(measured.ok());
    if (!measured.ok()) return out;
    for (const auto& r : *measured)
      out.push_back(r.config + " " + std::string(to_string(r.outcome.verdict)) + " " +
                    std::string(to_string(r.regime)));
    return out;
  }

  TempDir dir_;
  std::unique_ptr<TestDatabase> pg_;
  std::string db_;
};

TEST_P(FleetCli, AQueuedItemIsTunedByAWorkerExactlyAsADirectTune) {
  const std::string tune = "tune --backend sim --problem faults --seed 5 --max-candidates 25";
  auto queued = attune(tune + " --enqueue");
  ASSERT_EQ(queued.code, 0) << queued.err;
  EXPECT_NE(queued.out.find("queued 1 work item for device "), std::string::npos) << queued.out;
  EXPECT_TRUE(rows(db_).empty());  // nothing tuned yet

  auto before = attune("queue --json");
  ASSERT_EQ(before.code, 0) << before.err;
  auto q = nlohmann::json::parse(before.out);
  ASSERT_EQ(q["items"].size(), 1u);
  EXPECT_EQ(q["items"][0]["state"], "queued");

  auto worker = attune("worker --backend sim --drain --lease 5");
  ASSERT_EQ(worker.code, 0) << worker.err;
  EXPECT_NE(worker.out.find("1 done, 0 failed, 0 lost"), std::string::npos) << worker.out;

  auto after = nlohmann::json::parse(attune("queue --json").out);
  ASSERT_EQ(after["items"].size(), 1u);
  EXPECT_EQ(after["items"][0]["state"], "done");
  EXPECT_EQ(after["items"][0]["message"], "max_candidates");
  EXPECT_EQ(after["items"][0]["attempts"], 1);
  EXPECT_GT(after["items"][0]["run"].get<std::int64_t>(), 0);
  EXPECT_EQ(after["groups"].size(), 1u);

  // The same tune, run directly into a file of its own: the same candidates, verdicts and order.
  auto direct = run_attune(tune + " --db direct.db", dir_.path());
  ASSERT_EQ(direct.code, 0) << direct.err;
  const auto fleet = rows(db_);
  EXPECT_EQ(fleet.size(), rows(dir_.file("direct.db")).size());
  EXPECT_EQ(fleet, rows(dir_.file("direct.db")));
  EXPECT_FALSE(fleet.empty());
}

TEST_P(FleetCli, AWorkerTakesOnlyTheItemsOfItsDeviceKeyOrKind) {
  ASSERT_EQ(attune("tune --backend sim --problem rmsnorm --max-candidates 5 --enqueue --for "
                   "'cuda:NVIDIA H200'")
                .code,
            0);
  ASSERT_EQ(attune("tune --backend sim --problem faults --max-candidates 5 --enqueue --for "
                   "'sim:attune simulated GPU'")
                .code,
            0);
  auto worker = attune("worker --backend sim --drain");
  ASSERT_EQ(worker.code, 0) << worker.err;
  EXPECT_NE(worker.out.find("1 done"), std::string::npos) << worker.out;
  auto q = attune("queue --list");
  ASSERT_EQ(q.code, 0) << q.err;
  EXPECT_NE(q.out.find("queued   -"), std::string::npos) << q.out;
  EXPECT_NE(q.out.find("cuda:NVIDIA H200"), std::string::npos) << q.out;
  EXPECT_NE(q.out.find("done"), std::string::npos) << q.out;
}

TEST_P(FleetCli, BadFleetFlagsAreOneLineAndExitTwo) {
  for (const auto& [args, says] : std::vector<std::pair<std::string, std::string>>{
           {"tune --backend sim --problem rmsnorm --for x", "--for names the device of --enqueue"},
           {"tune --backend sim --problem rmsnorm --strategy grid --shard 0/2 --enqueue",
            "--trace and --shard are a worker's"},
           {"worker --backend sim --devices 0,x", "--devices '0,x' must list device indices"},
           {"worker --backend sim --lease 0", "--lease must be > 0 seconds"},
           {"queue --state running", "--state 'running' is not one of"},
       }) {
    auto r = attune(args);
    EXPECT_EQ(r.code, 2) << args << ": " << r.out << r.err;
    EXPECT_EQ(lines(r.err), 1u) << args << ": " << r.err;
    EXPECT_NE(r.err.find(says), std::string::npos) << args << ": " << r.err;
  }
}

// The configs a grid shard measured in the rank regime, run with the environment `env`.
std::set<std::string> shard_configs(const TempDir& dir, const std::string& env,
                                    const std::string& shard, const std::string& db) {
  auto r = run_attune("tune --backend sim --problem rmsnorm --strategy grid --patience 0 --shard " +
                          shard + " --db " + db,
                      dir.path(), kNoScheduler + env);
  EXPECT_EQ(r.code, 0) << r.err;
  std::set<std::string> out;
  auto s = open_store(dir.file(db), false);
  if (!s.ok()) return out;
  MeasurementQuery q;
  q.regime = Regime::kRank;
  auto rows = (*s)->measurements(q);
  if (rows.ok())
    for (const auto& row : *rows) out.insert(row.config);
  return out;
}

TEST(ShardAuto, TakesItsShardFromASlurmArrayOrAKubernetesIndexedJob) {
  TempDir dir;
  const auto second_of_three = shard_configs(dir, "", "1/3", "explicit.db");
  ASSERT_GT(second_of_three.size(), 10u);
  // A SLURM array 1-3: task 2 is the second.
  EXPECT_EQ(
      shard_configs(dir, "SLURM_ARRAY_TASK_ID=2 SLURM_ARRAY_TASK_MIN=1 SLURM_ARRAY_TASK_COUNT=3",
                    "auto", "slurm.db"),
      second_of_three);
  // A Kubernetes indexed Job: the index from the pod, the count from the flag or the env.
  EXPECT_EQ(shard_configs(dir, "JOB_COMPLETION_INDEX=1", "auto/3", "k8s.db"), second_of_three);
  EXPECT_EQ(shard_configs(dir, "JOB_COMPLETION_INDEX=1 ATTUNE_SHARD_COUNT=3", "auto", "k8s2.db"),
            second_of_three);
  for (const auto& [env, says] : std::vector<std::pair<std::string, std::string>>{
           {"", "--shard auto: neither $SLURM_ARRAY_TASK_ID"},
           {"JOB_COMPLETION_INDEX=1", "nothing gives the number of tasks"},
           {"JOB_COMPLETION_INDEX=5", "nothing gives the number of tasks"},
           {"SLURM_ARRAY_TASK_ID=x SLURM_ARRAY_TASK_COUNT=2", "$SLURM_ARRAY_TASK_ID='x' is not"},
           {"SLURM_ARRAY_TASK_ID=4 SLURM_ARRAY_TASK_COUNT=2", "task 4 (from $SLURM_ARRAY_TASK_ID)"},
       }) {
    auto r = run_attune("tune --backend sim --problem rmsnorm --strategy grid --shard auto",
                        dir.path(), kNoScheduler + env);
    EXPECT_EQ(r.code, 2) << env << ": " << r.err;
    EXPECT_EQ(lines(r.err), 1u) << env << ": " << r.err;
    EXPECT_NE(r.err.find(says), std::string::npos) << env << ": " << r.err;
  }
}

INSTANTIATE_TEST_SUITE_P(Stores, FleetCli, ::testing::Values("sqlite", "postgres"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace attune
