// Fault isolation for real: candidates that segfault, abort or hang run in `attune
// candidate-worker` processes; the scheduler survives them and keeps going in a fresh worker.
#include "backends/worker/worker.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "backends/sim/sim_backend.h"
#include "support/dead.h"

namespace attune {
namespace {

struct Fixture : ::testing::Test {
  SimBackend sim;
  Problem faults = *sim.resolve("faults");
  WorkerRunner runner{{ATTUNE_BINARY, "candidate-worker", "--backend", "sim"}, 5.0};
  Outcome run(const std::string& config) {
    return runner.run(faults, *Config::parse(config), Regime::kRank);
  }
};

TEST_F(Fixture, OkCandidateRunsAndIsMeasured) {
  Outcome o = run("block=128,vec=2,unroll=1,stages=1");
  ASSERT_EQ(o.verdict, Verdict::kOk) << o.message;
  ASSERT_TRUE(o.measurement);
  EXPECT_GT(o.measurement->median_us, 0);
  EXPECT_GE(o.measurement->samples, 10);
  ASSERT_TRUE(o.check);
  EXPECT_LE(o.check->value, o.check->tolerance);
}

TEST_F(Fixture, SegfaultAndAbortAreCrashedAndTheNextCandidateRunsInAFreshWorker) {
  Outcome segv = run("block=64,vec=2,unroll=2,stages=1");
  EXPECT_EQ(segv.verdict, Verdict::kCrashed);
  EXPECT_NE(segv.message.find("signal 11"), std::string::npos) << segv.message;
  Outcome abrt = run("block=128,vec=1,unroll=4,stages=1");
  EXPECT_EQ(abrt.verdict, Verdict::kCrashed);
  EXPECT_NE(abrt.message.find("device-side assert"), std::string::npos) << abrt.message;
  // Each death is confirmed by a rerun in a fresh worker, which dies too.
  EXPECT_NE(segv.message.find("died on it again"), std::string::npos) << segv.message;
  EXPECT_EQ(run("block=128,vec=2,unroll=1,stages=1").verdict, Verdict::kOk);
  EXPECT_EQ(runner.started(), 5);
}

TEST_F(Fixture, HangIsKilledAtTheDeadlineAsTimeout) {
  runner.set_timeout(0.5);
  Outcome o = run("block=64,vec=1,unroll=1,stages=2");
  EXPECT_EQ(o.verdict, Verdict::kTimeout);
  EXPECT_EQ(runner.worker_pid(), -1);  // killed and reaped
  EXPECT_EQ(run("block=128,vec=2,unroll=1,stages=1").verdict, Verdict::kOk);
}

TEST_F(Fixture, InProcessFaultsComeBackAsTheirVerdicts) {
  EXPECT_EQ(run("block=128,vec=4,unroll=4,stages=1").verdict, Verdict::kBuildFailed);
  EXPECT_EQ(run("block=256,vec=1,unroll=1,stages=2").verdict, Verdict::kLaunchFailed);
  EXPECT_EQ(run("block=128,vec=1,unroll=2,stages=2").verdict, Verdict::kOom);
  EXPECT_EQ(run("block=256,vec=1,unroll=2,stages=1").verdict, Verdict::kWrongOutput);
  EXPECT_EQ(run("block=128,vec=4,unroll=1,stages=1").verdict, Verdict::kNonFinite);
  EXPECT_EQ(runner.started(), 1);  // none of these cost a worker restart
}

// A worker killed from outside (the OOM killer, a user) is not the candidate's crash: the
// candidate runs again in a fresh worker, and what that run gives is its result. Here it hangs
// again, so it is a timeout, and the first death is in its message.
TEST_F(Fixture, WorkerKilledFromOutsideIsRerunInAFreshWorker) {
  runner.set_timeout(1.5);
  ASSERT_EQ(run("block=128,vec=2,unroll=1,stages=1").verdict, Verdict::kOk);
  const pid_t pid = runner.worker_pid();
  ASSERT_GT(pid, 0);
  // While the worker is stuck in a hanging candidate, someone kills it.
  std::thread killer([pid] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    ::kill(pid, SIGKILL);
  });
  Outcome o = run("block=64,vec=1,unroll=1,stages=2");
  killer.join();
  EXPECT_EQ(o.verdict, Verdict::kTimeout) << o.message;
  EXPECT_NE(o.message.find("signal 9"), std::string::npos) << o.message;
  EXPECT_EQ(run("block=128,vec=2,unroll=1,stages=1").verdict, Verdict::kOk);
  EXPECT_NE(runner.worker_pid(), pid);
}

// The campaign's case: 36 of 39 outside kills stored a healthy config as crashed, never tried
// again. Killed between candidates, the worker's death lands on the next one, which passes in a
// fresh worker and is reported as passing, with the death in its message.
TEST_F(Fixture, AHealthyCandidateWhoseWorkerWasKilledPassesOnTheRerun) {
  ASSERT_EQ(run("block=128,vec=2,unroll=1,stages=1").verdict, Verdict::kOk);
  const pid_t pid = runner.worker_pid();
  ASSERT_GT(pid, 0);
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  Outcome o = run("block=256,vec=2,unroll=1,stages=1");
  EXPECT_EQ(o.verdict, Verdict::kOk) << o.message;
  EXPECT_NE(o.message.find("signal 9"), std::string::npos) << o.message;
  EXPECT_NE(o.message.find("passed on a rerun"), std::string::npos) << o.message;
  EXPECT_EQ(runner.started(), 2);
}

TEST_F(Fixture, TheWorkerLeadsItsOwnProcessGroup) {
  // So that a deadline's kill takes whatever the worker started with it, and the terminal's
  // Ctrl-C reaches the scheduler only (the worker then dies with the scheduler).
  ASSERT_EQ(run("block=128,vec=2,unroll=1,stages=1").verdict, Verdict::kOk);
  ASSERT_GT(runner.worker_pid(), 0);
  EXPECT_EQ(::getpgid(runner.worker_pid()), runner.worker_pid());
}

using testing::dead;

TEST(Worker, AWorkerInAHangingCandidateDiesWithAKilledScheduler) {
  int report[2];
  ASSERT_EQ(::pipe(report), 0);
  pid_t scheduler = ::fork();
  ASSERT_GE(scheduler, 0);
  if (scheduler == 0) {
    // A copy of this process as the scheduler: it starts a worker, says its pid, then waits on a
    // candidate that hangs until it is killed from outside with SIGKILL.
    SimBackend sim;
    Problem faults = *sim.resolve("faults");
    WorkerRunner runner{{ATTUNE_BINARY, "candidate-worker", "--backend", "sim"}, 60.0};
    if (runner.run(faults, *Config::parse("block=128,vec=2,unroll=1,stages=1"), Regime::kRank)
            .verdict != Verdict::kOk)
      ::_exit(1);
    pid_t worker = runner.worker_pid();
    if (::write(report[1], &worker, sizeof worker) != sizeof worker) ::_exit(1);
    runner.run(faults, *Config::parse("block=64,vec=1,unroll=1,stages=2"), Regime::kRank);
    ::_exit(1);
  }
  ::close(report[1]);
  pid_t worker = 0;
  ASSERT_EQ(::read(report[0], &worker, sizeof worker), static_cast<ssize_t>(sizeof worker));
  ::close(report[0]);
  ASSERT_GT(worker, 0);
  ::kill(scheduler, SIGKILL);
  ::waitpid(scheduler, nullptr, 0);
  EXPECT_TRUE(dead(worker)) << "the worker " << worker << " outlived its scheduler";
}

TEST(Worker, AMissingWorkerBinaryIsALaunchFailureNotACrashOfTheScheduler) {
  SimBackend sim;
  WorkerRunner runner({"/nonexistent/attune", "candidate-worker"}, 1.0);
  Outcome o = runner.run(*sim.resolve("faults"),
                         *Config::parse("block=128,vec=1,unroll=1,stages=1"), Regime::kRank);
  EXPECT_EQ(o.verdict, Verdict::kLaunchFailed);
  EXPECT_EQ(o.message, "cannot start worker /nonexistent/attune: No such file or directory");
}

}  // namespace
}  // namespace attune
