// The CLI's commands. Each command file adds its subcommand to the app and returns the action
// main() runs when that subcommand was given. Commands are thin: parse flags, call the layers,
// print. Exit codes (DESIGN.md): 0 done, 1 the work failed, 2 bad input.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

namespace attune::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitBadInput = 2;
// Stopped by SIGINT, SIGTERM or SIGHUP after printing what was done (128 + SIGINT, as a shell
// reports a command ended by Ctrl-C).
inline constexpr int kExitInterrupted = 130;

// Flags every command shares; filled by CLI11 before any action runs.
struct GlobalOptions {
  std::string db = "attune.db";   // --db PATH|URL
  bool verbose = false;           // -v: one line per step
  bool json = false;              // --json: a machine-readable report on stdout, logs on stderr
  std::vector<std::string> argv;  // the whole command line, recorded with each run
};

struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

Command add_device_command(CLI::App& app, GlobalOptions& g);
Command add_problems_command(CLI::App& app, GlobalOptions& g);
Command add_tune_command(CLI::App& app, GlobalOptions& g);
Command add_eval_command(CLI::App& app, GlobalOptions& g);
// The fleet worker (src/cli/worker.cpp), the work queue (queue.cpp) and `attune db merge` (db.cpp):
// issue 19.
Command add_worker_command(CLI::App& app, GlobalOptions& g);
Command add_queue_command(CLI::App& app, GlobalOptions& g);
Command add_db_command(CLI::App& app, GlobalOptions& g);
// The hidden subcommand `attune tune` starts to run candidates in a process of their own.
inline constexpr const char* kCandidateWorker = "candidate-worker";
Command add_candidate_worker_command(CLI::App& app, GlobalOptions& g);
Command add_stack_command(CLI::App& app, GlobalOptions& g);
// Issue 4: recorded spaces and the prior (src/cli/import.cpp, export.cpp, prior.cpp).
Command add_import_command(CLI::App& app, GlobalOptions& g);
Command add_export_command(CLI::App& app, GlobalOptions& g);
Command add_prior_command(CLI::App& app, GlobalOptions& g);
// Issue 5: `attune ab`, an A/B of two whole commands (src/cli/ab.cpp), and the fidelity gate over
// a tuned table (src/cli/verify.cpp).
Command add_ab_command(CLI::App& app, GlobalOptions& g);
Command add_verify_command(CLI::App& app, GlobalOptions& g);
// Issue 14: `attune space`, a user kernel's spec checked and its configs counted without a GPU
// (src/cli/space.cpp).
Command add_space_command(CLI::App& app, GlobalOptions& g);
// Issue 16: `attune sweep`, a grid of an op's sizes tuned into table rows (src/cli/sweep.cpp).
Command add_sweep_command(CLI::App& app, GlobalOptions& g);
// Issue 20: `attune report`, the database as one self-contained HTML page (src/cli/report.cpp).
Command add_report_command(CLI::App& app, GlobalOptions& g);

// "attune: error: <what>" on stderr, one line (control characters escaped); returns
// kExitBadInput.
int bad_input(const std::string& what);
// "attune: <what>" on stderr, one line; returns kExitFailed.
int failed(const std::string& what);
// Text from outside (a file, a flag) made safe to print on one line: control characters and
// bytes that are not UTF-8 as \n, \t, \xHH.
std::string printable(std::string_view text);

// Checks of a numeric flag's text before CLI11 converts it: a finite number (nan and inf refused),
// and a count without a sign (CLI11 would wrap -1 to 2^64-1).
CLI::Validator finite_number();
CLI::Validator unsigned_integer();
// A flag's text must not be empty (where "" would silently mean "not given").
CLI::Validator non_empty();

}  // namespace attune::cli
