// The one process runner: a Child runs a program in its own process group with pipes, is killed
// with everything it started, and dies with attune, even when attune is killed by SIGKILL;
// run_process() runs one program to completion on it with a deadline. Functions are reentrant and
// thread-safe; a Child is used from one thread at a time. SIGPIPE is not touched.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"

namespace attune::platform {

struct ProcessSpec {
  std::vector<std::string> argv;             // argv[0]: a path (with '/') or a name found on PATH
  std::map<std::string, std::string> env;    // added to (and overriding) this process's environment
  std::string cwd;                           // "" = this process's working directory
  std::chrono::milliseconds timeout{60000};  // run_process only: a Child runs until it is stopped
};

struct ProcessResult {
  bool spawned = false;  // false: the program could not be started (spawn_error says why)
  std::string spawn_error;
  bool timed_out = false;  // the deadline passed and the group was killed
  bool signaled = false;   // the program died by a signal (not ours)
  int exit_code = -1;      // when it exited normally
  int signal = 0;          // when signaled
  double wall_s = 0;       // from spawn to the program's exit
  std::string out;         // stdout
  std::string err;         // stderr
};

// Where a Child's stdin comes from.
enum class Stdin { kNull, kPipe };

// A running program, the leader of its own process group (so the terminal's SIGINT does not reach
// it; kill_running_programs() does). stdout and stderr are non-blocking pipes; stdin is /dev/null
// or a pipe. Its signal mask is empty and the usual signals have their default action.
//
// Death with the parent: the program gets SIGKILL when the thread that spawned it ends (Linux's
// PR_SET_PDEATHSIG, which follows the spawning thread, not the process: spawn from a thread that
// outlives the Child), and a sentinel process kills its whole group when attune's process ends
// in any way. Move-only; destroying a Child that still runs kills its group and reaps it.
class Child {
 public:
  // Starts spec.argv. A program that cannot be started (not found, not executable, no such cwd,
  // no process left) is an error of kind kNotFound whose message is the system's reason
  // ("No such file or directory"), for the caller to put after the program's name; an error of
  // kind kIo is a failure of attune's own pipes.
  static Result<Child> spawn(const ProcessSpec& spec, Stdin in = Stdin::kNull);

  Child(Child&& other) noexcept;
  Child& operator=(Child&& other) noexcept;
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child();

  pid_t pid() const { return pid_; }    // also its process group's id
  int stdin_fd() const { return in_; }  // -1 with Stdin::kNull or after close_stdin()
  int stdout_fd() const { return out_; }
  int stderr_fd() const { return err_; }
  // Readable once the program has exited (a pidfd), even while a child of it holds the pipes;
  // -1 on kernels before 5.3, where try_wait() has to be polled.
  int exit_fd() const { return pidfd_; }
  // Closing stdin asks a program that reads it to end.
  void close_stdin();

  // SIGKILL to the whole process group: the program and everything it started.
  void kill_group();
  // The wait status (for WIFEXITED and friends) once the program has exited and been reaped;
  // nullopt while it runs. Repeated calls after the exit return the same status.
  std::optional<int> try_wait();
  // Waits for the exit until `deadline` at most; nullopt when the program still runs then.
  std::optional<int> wait_until(std::chrono::steady_clock::time_point deadline);
  // Waits for the exit however long it takes.
  int wait();
  // True when the program was reaped by someone else (a waitpid(-1) elsewhere in attune): its
  // status is then unknown and reads as 0.
  bool vanished() const { return vanished_; }

 private:
  Child() = default;
  void release();

  pid_t pid_ = -1;
  int in_ = -1, out_ = -1, err_ = -1, pidfd_ = -1;
  std::optional<int> status_;
  bool vanished_ = false;
  int slot_ = -1;  // index in the registry kill_running_programs() reads; -1: not registered
};

// Runs the program with stdin on /dev/null, capturing stdout and stderr, until it exits or
// spec.timeout passes (then its group is killed: timed_out). Whatever the program left running in
// its group is killed when it exits. The Result is an error only for failures of attune itself
// (pipes, poll).
Result<ProcessResult> run_process(const ProcessSpec& spec);

// Kills the process group of every Child alive now (run_process's included; up to 256 at once).
// Async-signal-safe: a SIGINT or SIGTERM handler calls it so that no program outlives attune.
void kill_running_programs();
// How many times kill_running_programs() was called in this process: a runner that sees it move
// while its program ran knows the death was attune's doing, not the program's.
unsigned programs_killed();

// The absolute path of the program argv0 names: a path with '/' is taken relative to `dir`;
// a bare name is searched on PATH. Not found or not executable: an error naming it.
Result<std::string> resolve_program(const std::string& argv0, const std::string& dir);

}  // namespace attune::platform
