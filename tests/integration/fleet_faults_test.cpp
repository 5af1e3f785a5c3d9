// The fleet's kill test (label faults): 8 `attune worker`s on the sim take 160 work items from one
// PostgreSQL database while a driver kills random workers with kill -9 and starts new ones. At the
// end exactly 160 items are done, each by one run, every committed result is there once, and no
// lease, claim or running run is left behind.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "store/store.h"
#include "support/postgres.h"
#include "support/run.h"
#include "support/temp_dir.h"

namespace attune {
namespace {

using testing::run_attune;
using testing::TempDir;
using testing::TestDatabase;

// `attune worker` in the background, its output in dir/worker-N.log.
pid_t start_worker(const std::string& url, const TempDir& dir, int n) {
  const std::string log = dir.file("worker-" + std::to_string(n) + ".log");
  const pid_t pid = fork();
  if (pid == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      dup2(fd, STDOUT_FILENO);
      dup2(fd, STDERR_FILENO);
    }
    execl(ATTUNE_BINARY, ATTUNE_BINARY, "worker", "--backend", "sim", "--db", url.c_str(),
          "--lease", "1", "--poll", "0.1", static_cast<char*>(nullptr));
    _exit(127);
  }
  return pid;
}

TEST(FleetFaults, EightWorkersKilledAtRandomDoAll160ItemsOnceEach) {
  TestDatabase db;
  ATTUNE_NEED_POSTGRES(db);
  TempDir dir;
  constexpr int kItems = 160, kWorkers = 8, kKills = 24;
  {
    std::ofstream shapes(dir.file("shapes.txt"));
    for (int rows = 1; rows <= kItems; ++rows)
      shapes << "rmsnorm:rows=" << rows << ",hidden=4096\n";
  }
  auto queued = run_attune(
      "tune --backend sim --shapes shapes.txt --seed 1 --max-candidates 12 "
      "--enqueue --db '" +
          db.url() + "'",
      dir.path());
  ASSERT_EQ(queued.code, 0) << queued.err;

  std::vector<pid_t> workers;
  int started = 0;
  for (int i = 0; i < kWorkers; ++i) workers.push_back(start_worker(db.url(), dir, started++));
  auto store = open_store(db.url(), false);
  ASSERT_TRUE(store.ok()) << store.error().message();
  auto done = [&] {
    auto items = (*store)->work_items();
    EXPECT_TRUE(items.ok());
    int n = 0;
    for (const auto& w : *items) n += w.state == "done";
    return n;
  };

  // The driver: a fixed seed, so a failure replays the same kills.
  std::mt19937 rng(19);
  int killed = 0;
  for (; killed < kKills && done() < kItems; ++killed) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100 + rng() % 300));
    const std::size_t victim = rng() % workers.size();
    ::kill(workers[victim], SIGKILL);
    ::waitpid(workers[victim], nullptr, 0);
    workers[victim] = start_worker(db.url(), dir, started++);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(5);
  while (done() < kItems && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  for (pid_t pid : workers) ::kill(pid, SIGTERM);
  for (pid_t pid : workers) ::waitpid(pid, nullptr, 0);
  EXPECT_GE(killed, kKills / 2) << "the items were done before the driver killed enough";

  auto items = (*store)->work_items();
  ASSERT_TRUE(items.ok()) << items.error().message();
  ASSERT_EQ(items->size(), static_cast<std::size_t>(kItems));
  std::set<std::int64_t> finishing_runs;
  std::int64_t attempts = 0;
  for (const auto& w : *items) {
    EXPECT_EQ(w.state, "done") << "item " << w.id << ": " << w.message;
    EXPECT_TRUE(w.lease_until.empty()) << "item " << w.id << " still leased";
    EXPECT_TRUE(finishing_runs.insert(w.run_id).second) << "run " << w.run_id << " did two items";
    attempts += w.attempts;
  }
  // Some kills hit a worker holding a lease, whose item a later worker took again.
  EXPECT_GT(attempts, kItems);

  // Every committed result once: no candidate measured twice for one device, problem, backend
  // and regime, and every item's problem has its results.
  auto rows = (*store)->measurements({});
  ASSERT_TRUE(rows.ok()) << rows.error().message();
  std::map<std::string, int> seen;
  std::set<std::string> problems;
  for (const auto& r : *rows) {
    seen[r.device_key + r.problem_key + r.backend + std::string(to_string(r.regime)) +
         r.config_hash] += 1;
    problems.insert(r.problem_key);
  }
  for (const auto& [key, n] : seen) EXPECT_EQ(n, 1) << "measured " << n << " times: " << key;
  EXPECT_EQ(problems.size(), static_cast<std::size_t>(kItems));

  // No run left running, and no claim left held.
  auto runs = (*store)->runs();
  ASSERT_TRUE(runs.ok());
  int done_runs = 0;
  for (const auto& r : *runs) {
    EXPECT_NE(r.status, "running") << "run " << r.id;
    done_runs += r.status == "done";
  }
  EXPECT_GE(done_runs, kItems);  // more where a worker died between its run and marking the item
  pqxx::connection c(db.url());
  pqxx::nontransaction tx(c);
  EXPECT_EQ(tx.exec1("SELECT count(*) FROM claims")[0].as<int>(), 0);
  RecordProperty("kills", killed);
  RecordProperty("leases", static_cast<int>(attempts));
}

}  // namespace
}  // namespace attune
