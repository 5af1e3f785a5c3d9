// The command backend: whole programs as candidates (what `attune stack tune` runs on). A stack
// file's provider is a Problem (op "stack"), its knobs a Space, a candidate a Config; execute()
// is one warm-up and `repeats` timed runs of the program, gated on the baseline's output digest.
// A Backend object is used from one thread at a time.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/command/stack_file.h"
#include "platform/host.h"

namespace attune::command {

struct CommandOptions {
  std::optional<int> sample;  // records in {sample}; default: each provider's `records`
  int repeats = 3;            // timed runs per candidate, after one warm-up
};

// Checks the options (sample within every provider's file, repeats >= 1) before anything runs.
Status check_options(const StackFile& stack, const CommandOptions& options);

// The Problem a provider is stored under: op "stack", keyed by the stack and provider names,
// a hash of its command and environment templates, its sample's content and its record count.
// Named "STACK/PROVIDER".
Problem provider_problem(const StackFile& stack, const Provider& provider, int records,
                         const std::string& sample_digest);

class CommandBackend final : public Backend {
 public:
  // Writes each provider's sample into a private scratch directory (removed with the backend),
  // which keys its Problem. The stack must outlive the backend.
  static Result<std::unique_ptr<CommandBackend>> open(const StackFile& stack,
                                                      platform::HostFingerprint host,
                                                      const CommandOptions& options);
  ~CommandBackend() override;
  CommandBackend(const CommandBackend&) = delete;
  CommandBackend& operator=(const CommandBackend&) = delete;

  std::string name() const override { return "command"; }
  // The host's fingerprint as the tuning database keys it (backend "host").
  Result<DeviceFingerprint> fingerprint() override { return host_.device(); }
  std::vector<ProblemInfo> problems() const override;
  // A provider by its name or its problem's name ("STACK/PROVIDER").
  Result<Problem> resolve(const std::string& spec) const override;
  Result<Space> space(const Problem& problem) const override;
  // One warm-up and the timed runs, stopping at the first rejection. The first clean run of the
  // baseline defines the reference output (its runs must agree with each other: a
  // nondeterministic output cannot be one); every other config must reproduce it on every run.
  // The regime is always deploy (see regimes()).
  Outcome execute(const Problem& problem, const Config& config, Regime regime) override;

  // Each candidate is itself a child process, run by the platform runner in its own process
  // group with a deadline (timeout_s) and killed whole on timeout or Ctrl-C: attune's process
  // never runs the program's code, so a worker process around execute() would isolate nothing.
  bool isolated() const override { return false; }
  // A whole program on its real inputs, after a warm-up run, is the production path: it has no
  // warm/cold distinction, so each candidate is measured once, in deploy.
  std::vector<Regime> regimes() const override { return {Regime::kDeploy}; }
  // Without the defaults' output there is nothing to check a candidate against.
  bool baseline_is_reference() const override { return true; }
  bool reference_lost(const Problem& problem) const override;

  // The providers' problems, in the stack file's order.
  std::vector<Problem> stack_problems() const;
  // The provider a problem names and the records its sample holds; nullptr / 0 when not ours.
  const Provider* provider_of(const Problem& problem) const;
  int records(const Problem& problem) const;

 private:
  struct Entry {
    const Provider* provider = nullptr;
    Problem problem;
    std::string sample;  // absolute path of the sample file
    int records = 0;
    std::optional<std::string> reference;  // the baseline's normalised output, once known
    bool reference_lost = false;           // the baseline, run again for it, failed
  };
  CommandBackend(const StackFile& stack, platform::HostFingerprint host, CommandOptions options,
                 std::string scratch);
  const Entry* entry(const Problem& problem) const;
  // Runs the warm-up and timed runs of point; reference nullptr: the runs must agree with each
  // other and *output receives the normalised output.
  Outcome measure(const Entry& e, const Point& point, const std::string* reference,
                  std::string* output);

  const StackFile& stack_;
  platform::HostFingerprint host_;
  CommandOptions options_;
  std::string scratch_;
  std::vector<Entry> entries_;
  int runs_ = 0;  // names each run's work directory
};

}  // namespace attune::command
