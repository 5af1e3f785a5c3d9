// The CLI's commands. Each command file adds its subcommand to the app and returns the action
// main() runs when that subcommand was given. Commands are thin: parse flags, call the layers,
// print. Exit codes (DESIGN.md): 0 done, 1 the work failed, 2 bad input.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace attune::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitBadInput = 2;

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
Command add_worker_command(CLI::App& app, GlobalOptions& g);
Command add_stack_command(CLI::App& app, GlobalOptions& g);
// Issue 4: recorded spaces and the prior (src/cli/import.cpp, export.cpp, prior.cpp).
Command add_import_command(CLI::App& app, GlobalOptions& g);
Command add_export_command(CLI::App& app, GlobalOptions& g);
Command add_prior_command(CLI::App& app, GlobalOptions& g);
// Issue 5: `attune ab`, an A/B of two whole commands (src/cli/ab.cpp), and the fidelity gate over
// a tuned table (src/cli/verify.cpp).
Command add_ab_command(CLI::App& app, GlobalOptions& g);
Command add_verify_command(CLI::App& app, GlobalOptions& g);

// "attune: error: <what>" on stderr, one line; returns kExitBadInput.
int bad_input(const std::string& what);
// "attune: <what>" on stderr; returns kExitFailed.
int failed(const std::string& what);

}  // namespace attune::cli
