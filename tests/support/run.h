// Runs the attune binary under test as a user would, capturing stdout, stderr and exit code.
#pragma once

#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "support/temp_dir.h"

namespace attune::testing {

struct RunResult {
  int code = -1;
  std::string out;
  std::string err;
};

// Runs `binary` with args appended as shell words; cwd is the directory to run in; env is
// prepended as shell assignments ("NAME=value ...").
inline RunResult run_binary(const std::string& binary, const std::string& args,
                            const std::string& cwd, const std::string& env = "") {
  std::string out_file = cwd + "/.stdout", err_file = cwd + "/.stderr";
  std::string cmd = "cd '" + cwd + "' && " + env + " '" + binary + "' " + args + " >'" + out_file +
                    "' 2>'" + err_file + "' </dev/null";
  int status = std::system(cmd.c_str());
  RunResult r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = read_bytes(out_file);
  r.err = read_bytes(err_file);
  return r;
}

// This build's attune (ATTUNE_BINARY), as run_binary runs it.
inline RunResult run_attune(const std::string& args, const std::string& cwd,
                            const std::string& env = "") {
  return run_binary(ATTUNE_BINARY, args, cwd, env);
}

// The attune the GPU tests run: $ATTUNE_BIN (tools/gpu-check gives the installed one), else this
// build's.
inline std::string gpu_attune_binary() {
  const char* bin = std::getenv("ATTUNE_BIN");
  return bin ? bin : ATTUNE_BINARY;
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
