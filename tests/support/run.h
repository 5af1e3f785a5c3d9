// Runs the attune binary under test as a user would, capturing stdout, stderr and exit code.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <string>

#include "support/temp_dir.h"

namespace attune::testing {

struct RunResult {
  int code = -1;
  std::string out;
  std::string err;
};

// args is appended to the binary's path as shell words; cwd is the directory to run in; env is
// prepended as shell assignments ("NAME=value ...").
inline RunResult run_attune(const std::string& args, const std::string& cwd, const std::string& env = "") {
  std::string out_file = cwd + "/.stdout", err_file = cwd + "/.stderr";
  std::string cmd = "cd '" + cwd + "' && " + env + " '" + std::string(ATTUNE_BINARY) + "' " + args + " >'" + out_file +
                    "' 2>'" + err_file + "' </dev/null";
  int status = std::system(cmd.c_str());
  RunResult r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = read_bytes(out_file);
  r.err = read_bytes(err_file);
  return r;
}

}  // namespace attune::testing
