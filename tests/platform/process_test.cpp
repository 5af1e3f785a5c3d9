#include "platform/process.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <tuple>

#include <gtest/gtest.h>

#include "support/dead.h"
#include "support/temp_dir.h"

namespace attune::platform {
namespace {

using testing::dead;
using testing::read_bytes;
using testing::TempDir;
using testing::write_bytes;

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

// Waits (10 ms at a time, 10 s at most) for `path` to appear; its contents, or "" on giving up.
std::string await_file(const std::string& path) {
  for (int i = 0; i < 1000; ++i) {
    if (std::filesystem::exists(path)) return read_bytes(path);
    ::usleep(10000);
  }
  return "";
}

// A program that starts a hanging grandchild and writes "<its pid> <the grandchild's pid>" to
// `pidfile` (renamed into place, so a reader never sees half of it).
std::vector<std::string> tree(const std::string& pidfile) {
  return {
      "/bin/sh", "-c",
      "sleep 60 & echo $$ $! > " + pidfile + ".tmp; mv " + pidfile + ".tmp " + pidfile + "; wait"};
}

std::pair<pid_t, pid_t> read_pids(const std::string& text) {
  std::istringstream in(text);
  pid_t a = 0, b = 0;
  in >> a >> b;
  return {a, b};
}

TEST(Process, CapturesStdoutStderrExitCodeEnvAndCwd) {
  TempDir dir;
  auto r = run({"/bin/sh", "-c", "echo out; echo err >&2; echo \"$GREETING\"; pwd; exit 7"}, 10000,
               {{"GREETING", "hello"}}, dir.path().string());
  EXPECT_TRUE(r.spawned);
  EXPECT_FALSE(r.timed_out);
  EXPECT_FALSE(r.signaled);
  EXPECT_EQ(r.exit_code, 7);
  EXPECT_EQ(r.out, "out\nhello\n" + dir.path().string() + "\n");
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
  std::string pidfile = dir.file("child.pid");
  // The child of the program writes its pid and sleeps; both must be dead after the timeout.
  auto r = run({"/bin/sh", "-c", "sleep 30 & echo $! > " + pidfile + "; wait"}, 300);
  EXPECT_TRUE(r.timed_out);
  pid_t child = read_pids(read_bytes(pidfile)).first;
  ASSERT_GT(child, 0);
  EXPECT_TRUE(dead(child)) << "the program's child " << child << " survived the timeout";
}

TEST(Process, AChildHoldingThePipesDoesNotOutliveTheProgram) {
  TempDir dir;
  std::string pidfile = dir.file("child.pid");
  // The program exits at once but leaves a child holding stdout; the run ends, the child is killed.
  auto r = run({"/bin/sh", "-c", "sleep 30 & echo $! > " + pidfile + "; echo done"}, 60000);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "done\n");
  pid_t child = read_pids(read_bytes(pidfile)).first;
  ASSERT_GT(child, 0);
  EXPECT_TRUE(dead(child)) << "the program's child " << child << " survived the program";
}

TEST(Process, ResolvesProgramsByPathOrOnPath) {
  EXPECT_EQ(resolve_program("sh", "/").value().back(), 'h');
  EXPECT_FALSE(resolve_program("no-such-program-anywhere", "/").ok());
  EXPECT_EQ(resolve_program("./sh", "/bin").value(), "/bin/sh");
  EXPECT_FALSE(resolve_program("./nothing", "/bin").ok());
}

TEST(Process, FindsABareNameOnPath) {
  auto r = run({"sh", "-c", "exit 3"});
  EXPECT_TRUE(r.spawned);
  EXPECT_EQ(r.exit_code, 3);
}

TEST(Process, AProgramThatMayNotRunIsNotSpawned) {
  TempDir dir;
  write_bytes(dir.file("plain"), "#!/bin/sh\n");  // not executable
  auto r = run({dir.file("plain")});
  EXPECT_FALSE(r.spawned);
  EXPECT_NE(r.spawn_error.find("Permission denied"), std::string::npos) << r.spawn_error;
  auto c = run({"/bin/true"}, 10000, {}, dir.file("no-such-dir"));
  EXPECT_FALSE(c.spawned);
  EXPECT_NE(c.spawn_error.find("No such file"), std::string::npos) << c.spawn_error;
}

TEST(Child, TalksOverPipesInItsOwnProcessGroup) {
  ProcessSpec spec;
  spec.argv = {"/bin/sh", "-c", "read line; echo \"got $line\"; echo oops >&2"};
  auto c = Child::spawn(spec, Stdin::kPipe);
  ASSERT_TRUE(c.ok()) << c.error().message();
  EXPECT_EQ(::getpgid(c->pid()), c->pid());
  ASSERT_EQ(::write(c->stdin_fd(), "hello\n", 6), 6);
  c->close_stdin();
  EXPECT_EQ(c->stdin_fd(), -1);
  int status = c->wait();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  std::string out, err;
  char buf[256];
  ssize_t n;
  while ((n = ::read(c->stdout_fd(), buf, sizeof buf)) > 0)
    out.append(buf, static_cast<std::size_t>(n));
  while ((n = ::read(c->stderr_fd(), buf, sizeof buf)) > 0)
    err.append(buf, static_cast<std::size_t>(n));
  EXPECT_EQ(out, "got hello\n");
  EXPECT_EQ(err, "oops\n");
}

TEST(Child, AProgramThatCannotStartIsNotFoundWithTheSystemsReason) {
  ProcessSpec spec;
  spec.argv = {"/nonexistent/program"};
  auto c = Child::spawn(spec, Stdin::kPipe);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().kind(), Error::Kind::kNotFound);
  EXPECT_EQ(c.error().message(), std::strerror(ENOENT));
}

TEST(Child, WaitUntilGivesUpWhileItRunsAndKillGroupEndsTheWholeTree) {
  TempDir dir;
  ProcessSpec spec;
  spec.argv = tree(dir.file("pids"));
  auto c = Child::spawn(spec);
  ASSERT_TRUE(c.ok()) << c.error().message();
  auto [program, grandchild] = read_pids(await_file(dir.file("pids")));
  ASSERT_EQ(program, c->pid());
  ASSERT_GT(grandchild, 0);
  EXPECT_FALSE(c->try_wait());
  EXPECT_FALSE(c->wait_until(std::chrono::steady_clock::now() + std::chrono::milliseconds(20)));
  c->kill_group();
  auto status = c->wait_until(std::chrono::steady_clock::now() + std::chrono::seconds(10));
  ASSERT_TRUE(status);
  EXPECT_TRUE(WIFSIGNALED(*status) && WTERMSIG(*status) == SIGKILL);
  EXPECT_EQ(c->try_wait(), status);
  EXPECT_TRUE(dead(grandchild)) << "the grandchild " << grandchild << " survived kill_group";
}

TEST(Child, DestroyingARunningChildKillsItsTree) {
  TempDir dir;
  pid_t program = 0, grandchild = 0;
  {
    ProcessSpec spec;
    spec.argv = tree(dir.file("pids"));
    auto c = Child::spawn(spec);
    ASSERT_TRUE(c.ok()) << c.error().message();
    std::tie(program, grandchild) = read_pids(await_file(dir.file("pids")));
    Child moved = std::move(*c);  // the moved-from Child owns nothing and kills nothing
    EXPECT_EQ(c->pid(), -1);
    EXPECT_EQ(moved.pid(), program);
  }
  ASSERT_GT(grandchild, 0);
  EXPECT_TRUE(dead(program));
  EXPECT_TRUE(dead(grandchild));
}

TEST(Child, KillRunningProgramsReachesEveryLiveChild) {
  TempDir dir;
  ProcessSpec spec;
  spec.argv = tree(dir.file("pids"));
  auto c = Child::spawn(spec, Stdin::kPipe);
  ASSERT_TRUE(c.ok()) << c.error().message();
  auto [program, grandchild] = read_pids(await_file(dir.file("pids")));
  ASSERT_GT(grandchild, 0);
  kill_running_programs();
  int status = c->wait();
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  EXPECT_TRUE(dead(grandchild));
}

// Death with the parent, for real: a copy of this test process runs a program (which starts a
// grandchild) through the runner and is killed with SIGKILL, which no handler can catch. The
// program (PR_SET_PDEATHSIG) and its grandchild (the sentinel) must both die with it.
TEST(Child, TheProgramAndItsGroupDieWhenTheParentIsKilled) {
  TempDir dir;
  const std::string pidfile = dir.file("pids");
  pid_t parent = ::fork();
  ASSERT_GE(parent, 0);
  if (parent == 0) {
    ProcessSpec spec;
    spec.argv = tree(pidfile);
    spec.timeout = std::chrono::seconds(60);
    (void)run_process(spec);
    ::_exit(1);
  }
  auto [program, grandchild] = read_pids(await_file(pidfile));
  ::kill(parent, SIGKILL);
  ::waitpid(parent, nullptr, 0);
  ASSERT_GT(program, 0);
  ASSERT_GT(grandchild, 0);
  EXPECT_TRUE(dead(program)) << "the program " << program << " outlived its parent";
  EXPECT_TRUE(dead(grandchild)) << "the grandchild " << grandchild << " outlived attune";
}

}  // namespace
}  // namespace attune::platform
