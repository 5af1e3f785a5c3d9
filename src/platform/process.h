// Runs one program to completion in its own process group with a deadline, capturing stdout and
// stderr through pipes. On timeout the whole group is killed, so a program's children cannot
// outlive it. Functions are reentrant; SIGPIPE is not touched. Thread-safe.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "core/error.h"

namespace attune::platform {

struct ProcessSpec {
  std::vector<std::string> argv;           // argv[0]: a path (with '/') or a name found on PATH
  std::map<std::string, std::string> env;  // added to (and overriding) this process's environment
  std::string cwd;                         // "" = this process's working directory
  std::chrono::milliseconds timeout{60000};
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

// Runs the program; the Result is an error only for failures of attune itself (pipes, poll).
Result<ProcessResult> run_process(const ProcessSpec& spec);

// Kills the process group of every program run_process is running now (up to 64 at once).
// Async-signal-safe: a SIGINT or SIGTERM handler calls it so that no program outlives attune.
void kill_running_programs();

// The absolute path of the program argv0 names: a path with '/' is taken relative to `dir`;
// a bare name is searched on PATH. Not found or not executable: an error naming it.
Result<std::string> resolve_program(const std::string& argv0, const std::string& dir);

}  // namespace attune::platform
