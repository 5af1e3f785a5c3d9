// ProcessIdentity: a process is alive while its pid runs with the same start time on this boot;
// another boot of this host is dead; another host is never judged.
#include "platform/identity.h"

#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

namespace attune::platform {
namespace {

TEST(ProcessIdentity, ThisProcessIsAliveAndNamesItself) {
  const ProcessIdentity me = current_process();
  EXPECT_EQ(me.pid, getpid());
  EXPECT_FALSE(me.host.empty());
  EXPECT_EQ(me.boot_id.size(), 36u) << me.boot_id;  // a UUID
  EXPECT_GT(me.start_ticks, 0);
  EXPECT_TRUE(alive(me));
}

TEST(ProcessIdentity, AProcessThatExitedIsGoneAndAReusedPidIsNotTheOwner) {
  pid_t pid = fork();
  if (pid == 0) _exit(0);
  ProcessIdentity child = current_process();
  child.pid = pid;
  child.start_ticks = process_start_ticks(pid).value_or(0);  // running or a zombie
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_FALSE(alive(child));
  EXPECT_FALSE(process_start_ticks(pid).has_value());

  // This pid with another start time: another process that got the dead owner's pid.
  ProcessIdentity reused = current_process();
  reused.start_ticks += 1;
  EXPECT_FALSE(alive(reused));
}

TEST(ProcessIdentity, AZombieIsGone) {
  pid_t pid = fork();
  if (pid == 0) _exit(0);
  // Waits for the exit without reaping: /proc still lists it, in state Z.
  siginfo_t info{};
  ASSERT_EQ(waitid(P_PID, pid, &info, WEXITED | WNOWAIT), 0);
  ProcessIdentity child = current_process();
  child.pid = pid;
  child.start_ticks = 0;
  EXPECT_FALSE(alive(child));
  waitpid(pid, nullptr, 0);
}

TEST(ProcessIdentity, AnotherBootOfThisHostIsDeadAndAnotherHostIsNeverJudged) {
  ProcessIdentity rebooted = current_process();
  rebooted.boot_id = "00000000-0000-0000-0000-000000000000";
  EXPECT_FALSE(alive(rebooted));  // the machine restarted since: nothing of that boot runs

  ProcessIdentity elsewhere = current_process();
  elsewhere.host = "another-host.example";
  elsewhere.boot_id = "00000000-0000-0000-0000-000000000000";
  elsewhere.pid = 999999999;
  EXPECT_TRUE(alive(elsewhere));

  ProcessIdentity unknown;  // nothing known: never taken for dead
  EXPECT_TRUE(alive(unknown));
}

}  // namespace
}  // namespace attune::platform
