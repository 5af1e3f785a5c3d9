// `attune stack tune`: per provider the baseline first (it defines the correct output), then the
// grid, each candidate gated on every run; the fastest eligible one wins; results go to the Store.
// One tune_stack call at a time per Store (a Store is used from one thread).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/problem.h"
#include "stack/evaluate.h"
#include "platform/host.h"
#include "stack/stack_file.h"
#include "store/store.h"

namespace attune::stack {

using platform::HostFingerprint;

struct CandidateResult {
  Point point;
  std::string label;  // canonical config text: "batch_size=16,dtype=bf16"
  std::vector<std::pair<std::string, std::string>> knobs;  // as written in the stack file
  int changed = 0;                                         // knobs that differ from the defaults
  int order = 0;  // position in the run order (0: the baseline)
  std::optional<Rejection> rejection;
  std::string detail;               // why it was rejected, with the run it happened on
  std::vector<double> throughputs;  // timed runs, records per second
  double throughput = 0;            // their median
  std::string digest;  // of the normalised output (the same on every run when eligible)
  bool eligible() const { return !rejection; }
};

struct ProviderResult {
  std::string name;
  int records = 0;           // records in {sample}
  Problem problem;           // as the tuning database keys it
  bool baseline_ok = false;  // false: the defaults failed, nothing else was run
  CandidateResult baseline;
  CandidateResult winner;                   // the baseline when no change is faster and eligible
  std::vector<CandidateResult> candidates;  // every config, baseline first, in grid order

  double speedup() const {
    return baseline.throughput > 0 ? winner.throughput / baseline.throughput : 0;
  }
  std::vector<const CandidateResult*> rejected() const;
};

struct TuneResult {
  std::string stack;
  HostFingerprint fingerprint;
  std::uint64_t seed = 0;
  int repeats = 0;
  std::int64_t run_id = 0;  // in the tuning database; 0 without one
  std::vector<ProviderResult> providers;
  // Every provider's baseline ran clean.
  bool ok() const;
};

struct TuneOptions {
  std::optional<int> sample;  // records in {sample}; default: each provider's `records`
  int repeats = 3;            // timed runs per candidate, after one warm-up
  std::uint64_t seed = 0;     // orders the non-baseline candidates (a shuffle of the grid), so
                              // drift over a long sweep does not line up with one knob
  Store* store = nullptr;     // where results go; nullptr: nowhere
  std::string arguments;      // the command line as JSON, recorded with the run
  std::function<void(const std::string&)> log;  // one line per step; may be empty
  // Set (by a SIGINT handler, say, after kill_running_programs) to stop: the candidate in flight
  // is not recorded (its death was ours, not its own), the run is closed as "interrupted" and
  // tune_stack returns an error. nullptr: never interrupted.
  const std::atomic<bool>* interrupted = nullptr;
};

// The rank of two eligible candidates: higher median throughput, then fewer knobs changed from
// the defaults, then the label. Total and deterministic.
bool ranks_before(const CandidateResult& a, const CandidateResult& b);

// The Problem a provider is stored under: op "stack", keyed by the stack and provider names,
// a hash of its command and environment templates, its sample's content and its record count.
Problem provider_problem(const StackFile& stack, const Provider& provider, int records,
                         const std::string& sample_digest);

// Checks the options (sample within every provider's file, repeats >= 1) before anything runs.
Status check_tune_options(const StackFile& stack, const TuneOptions& options);

Result<TuneResult> tune_stack(const StackFile& stack, const HostFingerprint& host,
                              const TuneOptions& options);

}  // namespace attune::stack
