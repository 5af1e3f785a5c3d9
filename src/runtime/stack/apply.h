// The stack's applier (`attune stack run`): each provider once, with its tuned knobs overlaid on
// its defaults only where the tuned file's fingerprint matches this machine, else the defaults.
// Work directories are kept. Keeps no state: safe from any thread.
#pragma once

#include <atomic>
#include <optional>
#include <string>
#include <vector>

#include "backends/command/program_run.h"
#include "backends/command/stack_file.h"
#include "core/error.h"
#include "platform/host.h"
#include "table/stack_yaml.h"

namespace attune::runtime {

using command::Rejection;
using command::StackFile;
using table::TunedStack;

struct ProviderRun {
  std::string name;
  std::string label;   // the config it ran with
  bool tuned = false;  // true: tuned knobs were applied
  std::optional<Rejection> failure;
  std::string detail;
  double throughput = 0;  // records per second
  std::string workdir;    // kept when RunOptions::workdir_root was given
  platform::ProcessResult process;
  bool ok() const { return !failure; }
};

struct StackRun {
  bool tuned_given = false;
  bool fingerprint_matched = false;
  std::vector<std::string> mismatches;  // fingerprint_differences, when tuned_given
  std::string workdir_root;
  // workdir_root is a directory made under the temporary directory for this run: the caller
  // removes it once it has read the providers' results (remove_temporary_workdir).
  bool temporary_workdir = false;
  std::vector<ProviderRun> providers;
  bool ok() const;
};

// Removes a run's temporary work directory (nothing when the user named one).
void remove_temporary_workdir(const StackRun& run);

struct RunOptions {
  const TunedStack* tuned = nullptr;  // nullptr: run the defaults
  std::optional<int> sample;          // records in {sample}; default: each provider's `records`
  // default: a new directory under the temporary directory, removed on failure here and by the
  // caller after a run (remove_temporary_workdir)
  std::string workdir_root;
  const std::atomic<bool>* interrupted = nullptr;  // set to stop before the next provider
};

// Checks a tuned file against the stack: same stack name, known providers, knobs among their
// values. Errors are invalid_argument, worded "PATH:LINE: what is wrong".
Status check_tuned(const StackFile& stack, const TunedStack& tuned);

Result<StackRun> run_stack(const StackFile& stack, const platform::HostFingerprint& here,
                           const RunOptions& options);

}  // namespace attune::runtime
