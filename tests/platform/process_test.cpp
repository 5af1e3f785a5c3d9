#include "platform/process.h"

#include <signal.h>

#include <cerrno>
#include <fstream>

#include <gtest/gtest.h>

#include "backends/command/fixtures.h"

namespace attune::platform {
namespace {

using command::testing::TempDir;

ProcessResult run(std::vector<std::string> argv, int timeout_ms = 10000,
                  std::map<std::string, std::string> env = {}, std::string cwd = "") {
  ProcessSpec spec;
  spec.argv = std::move(argv);
  spec.timeout = std::chrono::milliseconds(timeout_ms);
  spec.env = std::move(env);
  spec.cwd = std::move(cwd);
  auto r = run_process(spec);
  EXPECT_TRUE(r.ok());
  return r.ok() ? *r : ProcessResult{};
}

// Gone or a zombie: the orphan's new parent may reap it late (or never, in a container whose
// init does not reap), so a zombie counts as dead. A SIGKILLed process dies when next scheduled,
// so it is given up to 5 s to get there.
bool dead(pid_t pid) {
  for (int i = 0; i < 500; ++i) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    if (!stat) return true;
    std::string line;
    std::getline(stat, line);
    auto close = line.rfind(')');
    if (close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'Z') return true;
    ::usleep(10000);
  }
  return false;
}

TEST(Process, CapturesStdoutStderrExitCodeEnvAndCwd) {
  TempDir dir;
  auto r = run({"/bin/sh", "-c", "echo out; echo err >&2; echo \"$GREETING\"; pwd; exit 7"}, 10000,
               {{"GREETING", "hello"}}, dir.path());
  EXPECT_TRUE(r.spawned);
  EXPECT_FALSE(r.timed_out);
  EXPECT_FALSE(r.signaled);
  EXPECT_EQ(r.exit_code, 7);
  EXPECT_EQ(r.out, "out\nhello\n" + dir.path() + "\n");
  EXPECT_EQ(r.err, "err\n");
}

TEST(Process, ReportsDeathBySignal) {
  auto r = run({"/bin/sh", "-c", "kill -ABRT $$"});
  EXPECT_TRUE(r.signaled);
  EXPECT_EQ(r.signal, SIGABRT);
}

TEST(Process, AProgramThatCannotStartIsNotSpawned) {
  auto r = run({"/nonexistent/program"});
  EXPECT_FALSE(r.spawned);
  EXPECT_NE(r.spawn_error.find("No such file"), std::string::npos) << r.spawn_error;
}

TEST(Process, ATimeoutKillsTheWholeProcessGroup) {
  TempDir dir;
  std::string pidfile = dir / "child.pid";
  // The child of the program writes its pid and sleeps; both must be dead after the timeout.
  auto r = run({"/bin/sh", "-c", "sleep 30 & echo $! > " + pidfile + "; wait"}, 300);
  EXPECT_TRUE(r.timed_out);
  std::ifstream in(pidfile);
  pid_t child = 0;
  in >> child;
  ASSERT_GT(child, 0);
  EXPECT_TRUE(dead(child)) << "the program's child " << child << " survived the timeout";
}

TEST(Process, AChildHoldingThePipesDoesNotOutliveTheProgram) {
  TempDir dir;
  std::string pidfile = dir / "child.pid";
  // The program exits at once but leaves a child holding stdout; the run ends, the child is killed.
  auto r = run({"/bin/sh", "-c", "sleep 30 & echo $! > " + pidfile + "; echo done"}, 60000);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "done\n");
  std::ifstream in(pidfile);
  pid_t child = 0;
  in >> child;
  ASSERT_GT(child, 0);
  EXPECT_TRUE(dead(child)) << "the program's child " << child << " survived the program";
}

TEST(Process, ResolvesProgramsByPathOrOnPath) {
  EXPECT_EQ(resolve_program("sh", "/").value().back(), 'h');
  EXPECT_FALSE(resolve_program("no-such-program-anywhere", "/").ok());
  EXPECT_EQ(resolve_program("./sh", "/bin").value(), "/bin/sh");
  EXPECT_FALSE(resolve_program("./nothing", "/bin").ok());
}

}  // namespace
}  // namespace attune::platform
