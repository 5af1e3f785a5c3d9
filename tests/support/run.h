// Runs the attune binary under test as a user would, capturing stdout, stderr and exit code.
#pragma once

#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include <gtest/gtest.h>

#include "support/temp_dir.h"

namespace attune::testing {

struct RunResult {
  int code = -1;
  std::string out;
  std::string err;
};

// args is appended to the binary's path as shell words; cwd is the directory to run in; env is
// prepended as shell assignments ("NAME=value ...").
inline RunResult run_attune(const std::string& args, const std::string& cwd,
                            const std::string& env = "") {
  std::string out_file = cwd + "/.stdout", err_file = cwd + "/.stderr";
  std::string cmd = "cd '" + cwd + "' && " + env + " '" + std::string(ATTUNE_BINARY) + "' " + args +
                    " >'" + out_file + "' 2>'" + err_file + "' </dev/null";
  int status = std::system(cmd.c_str());
  RunResult r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = read_bytes(out_file);
  r.err = read_bytes(err_file);
  return r;
}

// Lines of output (newlines counted).
inline std::size_t lines(const std::string& s) {
  return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n'));
}

// A command line attune must refuse: one line on stderr that contains `says`, exit code 2.
struct BadInput {
  std::string args;
  std::string says;
};

// Runs `bad` in `dir` and checks the refusal, and that the database file `db` there is left as it
// was.
inline void expect_refused(const BadInput& bad, const TempDir& dir, const std::string& db) {
  const std::string before = read_bytes(dir.file(db));
  auto r = run_attune(bad.args, dir.path());
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find(bad.says), std::string::npos) << r.err;
  EXPECT_EQ(read_bytes(dir.file(db)), before);
}

}  // namespace attune::testing
