// `attune ab`: runs two whole commands alternately, ref, cand, ref, ..., ref (every cand run
// bracketed by ref runs), each in a fresh `/bin/sh -c CMD` process, and compares them (compare.h).
// Keeps no state: safe from any thread; the runs themselves are sequential.
#pragma once

#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "ab/compare.h"
#include "core/error.h"

namespace attune::ab {

struct AbOptions {
  std::string ref;   // a shell command line, run as /bin/sh -c REF
  std::string cand;  // likewise
  int rounds = 10;   // cand runs measured; ref runs one more (first and last)
  int warmup = 1;    // rounds of one ref and one cand run each, run first and discarded
  // "" measures each process's wall time (spawn to exit, seconds). Otherwise the value the command
  // prints on stdout as NAME=<number> or NAME: <number> (find_metric), in its own units.
  std::string metric;
  Better better = Better::kLower;
  double timeout_s = 600;  // per run; past it the run's process group is killed and the A/B fails
  const std::atomic<bool>* interrupted = nullptr;  // set to stop before the next run
  std::function<void(const std::string&)> log;     // one line per run; may be empty
};

// The options' own errors (invalid_argument, naming the flag): an empty command, rounds < 1,
// warmup < 0, a timeout that is not positive, a metric name holding '=', ':' or blanks.
Status check_options(const AbOptions& options);

// The value of the last occurrence in `out` of NAME=<number> or NAME: <number>: NAME not preceded
// by a letter, digit or '_' (so "t" does not match "at=3"), blanks allowed after the separator,
// the number as strtod reads a decimal (sign, fraction, exponent; "inf" and "nan" too, which the
// caller refuses); text after the number, such as a unit, is ignored. An occurrence with no number
// after it does not count. nullopt when there is none.
std::optional<double> find_metric(std::string_view out, std::string_view name);

enum class Arm { kRef, kCand };
std::string_view to_string(Arm a);  // "ref", "cand"

struct AbRun {
  Arm arm = Arm::kRef;
  bool warmup = false;
  int index = 0;     // 1-based among this arm's runs of its phase (warm-up or measured)
  int of = 0;        // how many runs of this arm the phase has
  double value = 0;  // the metric, or wall_s
  double wall_s = 0;
  std::string name() const;  // "cand run 3/10", "warm-up ref run 1/1"
};

// A run that ended the A/B: it failed to start, exited non-zero, was killed by a signal, timed
// out, printed no metric (or a non-finite one), or was interrupted.
struct RunFailure {
  AbRun run;
  std::string detail;  // one line: "exited with code 2; stderr: '...'"
};

struct AbReport {
  AbOptions options;
  std::vector<AbRun> runs;  // every run that completed, in the order run (warm-up included)
  std::optional<RunFailure> failure;  // set: the runs stopped there and there is no comparison
  std::optional<Comparison> comparison;
};

// Runs the A/B. The Result is an error only for failures of attune itself (pipes, poll), bad
// options (invalid_argument), or runs that cannot be compared (non-positive medians).
Result<AbReport> run_ab(const AbOptions& options);

// The human report (several lines) and the --json report of a completed A/B.
std::string format_report(const AbReport& report);
nlohmann::json report_json(const AbReport& report);
// The one line saying which run failed and why.
std::string format_failure(const RunFailure& failure);

}  // namespace attune::ab
