// The orchestrator: runs a Strategy over Problems through a Backend and writes every result to
// the Store as soon as it is known. A config already measured for this device, problem, backend
// and regime is answered from the Store with no worker call, so an identical rerun measures
// nothing and reports the same result. One thread at a time.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/runner.h"
#include "measure/drift.h"
#include "platform/clock.h"
#include "search/strategy.h"
#include "store/store.h"

namespace attune::prior {
class Prior;
}

namespace attune {

struct TuneOptions {
  // mcts_repair: over seeds 0..19 on 13 brute-forced spaces it met issue 15's targets on 9 of the
  // 12 with Kernel Tuner rows, mcts on 8; no space needed more than 4 more evaluations than mcts
  // (bench/results/search_replay-2026-12-01b.md).
  std::string strategy = "mcts_repair";
  std::uint64_t seed = 0;
  int patience = 50;  // stop after this many ok candidates without a new best; 0: never
  // Cap on candidates evaluated per problem; refusals before any build (verdict unsupported) are
  // not counted, as they cost neither a build nor GPU time.
  std::optional<std::int64_t> max_candidates;
  std::uint32_t shard_index = 0;
  std::uint32_t shard_count = 1;
  // Re-measure in the deploy regime (the objective) a candidate whose rank-regime time is within
  // this fraction of the best so far. Small GEMMs' cold-cache cost swamps their warm differences:
  // on the H200, 8 of 45 decode shapes had their deploy-fastest cuBLASLt algorithm 13-17% slower
  // warm, and searched deploy winners were up to 35% slower warm than the warm best.
  double deploy_band = 0.5;
  // Knob values every searched config must have (the baseline is measured regardless): narrows
  // a search to part of the space, e.g. kernel=cublaslt.
  std::map<std::string, std::string> pins;
  std::string arguments = "[]";  // the command line, recorded with the run
  std::string command = "tune";  // the command, recorded with the run ("stack tune")
  // Set (by a SIGINT handler, after killing the programs in flight) to stop: the candidate in
  // flight is not recorded (its death was ours, not its own), the run is closed as
  // "interrupted" and run() returns the report of what was done, the problem in flight and
  // those not started stopped_by "interrupted". nullptr: never interrupted.
  const std::atomic<bool>* interrupted = nullptr;
  // --time-limit: the run stops at the first candidate boundary past it and reports what it did
  // (Kernel Tuner's time_limit). The time is shared among the problems: each is given an equal
  // part of what is left when it starts, so time one leaves unused goes to those after it.
  std::optional<double> time_limit_s;
  // --strategy-option NAME=VALUE: the strategy's documented options (strategy_info()).
  StrategySettings strategy_options;
  // --fresh-search: a new search, as if none had run before. Neither the strategy's stored state
  // nor the stored results are taken in first; a config it proposes that the store holds is still
  // answered from it. Its state is saved at the end like any run's. false (default): continue.
  bool fresh_search = false;
  // Warm starts (attune sweep): a problem listed here by structural key evaluates first, right
  // after its baseline, the winners of the problems of its group (the value) that this run tuned
  // before it, in that order; its strategy learns them as it learns its own proposals, and they
  // count as candidates. Problems not listed start cold.
  std::map<std::string, std::string> warm_start_groups;
  // Drift: the baseline config is the anchor, re-read (in the ranking regime, never from the
  // store) after every anchor_every newly measured candidates; see measure/drift.h. When it moved
  // by more than drift_bound, the candidates measured since the last clean anchor are discarded
  // in the store and measured again after the back-off.
  measure::DriftPolicy drift;
  // After the search, the configs with the best deploy times are timed again in the deploy
  // regime and keep the new times (their first rows discarded, "re-timed"), until the best
  // retime_best are all re-timed; a re-run finds them re-timed and measures nothing. 0 (default):
  // off. It was written for a winner's curse (the best of many near-equal noisy timings reading
  // low), which an H100 run did not show: over a 1 x 128 layer's tune the 21 re-timings moved by
  // -9.7% to +5.1%, median 0.0%, and the ~2 us RMSNorm rows still verified 6-9% slower than
  // recorded (bench/results/retime-h100-2026-12-07.md): that gap lies between the tuner's timing
  // and attune verify's, not in the choice.
  int retime_best = 0;
};

// One evaluated candidate as the report shows it.
struct CandidateResult {
  std::string config;
  Verdict verdict = Verdict::kOk;
  std::optional<double> rank_us;    // rank-regime median
  std::optional<double> deploy_us;  // deploy-regime median (what tables use)
  std::string message;
  bool replayed = false;  // answered from the store
  // The deploy-regime measurement's relative standard error of the median, and its correctness
  // gate finding (what a table row records); set with deploy_us.
  std::optional<double> deploy_noise;
  std::optional<ErrorCheck> deploy_check;
  // A chain's steps in its graph and the graph's floor (Measurement::parts_us, parts_floor_us).
  std::vector<double> deploy_parts_us;
  double deploy_parts_floor_us = 0;
};

struct ProblemReport {
  Problem problem;
  std::string backend;
  std::optional<CandidateResult> baseline;
  // Fastest ok candidate in the deploy regime; on equal times, the one with fewer knobs changed
  // from the baseline, then the lower config text, so the winner does not depend on visit order.
  std::optional<CandidateResult> best;
  double speedup = 0;        // baseline deploy time / best deploy time; 0: not known
  std::int64_t best_at = 0;  // the evaluation (1 = the baseline) that found the best; 0: none
  // What the search went on from (TuneOptions::fresh_search turns both off): the strategy's state
  // an earlier run saved (mcts's tree), and the results stored for this device and problem, taken
  // into the run before the strategy proposed anything (counted in evaluated and replayed). A
  // second run with another seed evaluates those first and may have nothing left to propose.
  bool continued_state = false;
  std::int64_t stored_first = 0;
  std::vector<std::int64_t> stored_runs;  // the runs that measured those results, ascending
  // Its group's earlier winners evaluated after the baseline (TuneOptions::warm_start_groups).
  std::int64_t warm_first = 0;
  // Its op's first guesses evaluated after those (OpSignature::seed_configs).
  std::int64_t seeded_first = 0;
  bool continued() const { return continued_state || stored_first > 0; }
  std::int64_t evaluated = 0;
  std::int64_t measured = 0;
  std::int64_t replayed = 0;
  // The configs this run timed again after the search (TuneOptions::retime_best), in that order:
  // the deploy time the search had recorded and the new one, which replaces it.
  struct Retimed {
    std::string config;
    double first_us = 0, again_us = 0;
  };
  std::vector<Retimed> retimed;
  std::map<Verdict, std::int64_t> verdicts;
  std::vector<CandidateResult> rejected;  // every candidate that did not pass, with its reason
  // Every candidate of the problem in visit order, passing or not, less those discarded for drift
  // and not measured again.
  std::vector<CandidateResult> results;
  // exhausted, patience, max_candidates, time_limit, interrupted, unstable (the drift guard's
  // bound on back-off was spent: the device did not settle), baseline_failed (a backend whose
  // baseline is the reference: nothing else could be checked)
  std::string stopped_by;
  bool started = true;         // false: the time limit or an interrupt came before this problem
  int drift_events = 0;        // anchor checks that found the device drifted
  std::int64_t discarded = 0;  // measurements discarded because of drift
  double backoff_s = 0;        // seconds waited for the device to settle
  int anchor_readings = 0;     // times the anchor config was run to check for drift
  // The anchor's two levels when its readings fell in two clusters (measure::anchor_levels):
  // drift was then checked against both.
  std::optional<measure::AnchorLevels> anchor_levels;
  std::string unstable;  // stopped_by "unstable": why, in words
  std::uint64_t space_size = 0;
  double elapsed_s = 0;  // wall time of this problem's search, by the tuner's clock
};

struct TuneReport {
  DeviceFingerprint device;
  std::int64_t run_id = 0;
  std::string strategy;
  std::uint64_t seed = 0;
  std::vector<ProblemReport> problems;
  bool interrupted = false;  // stopped by TuneOptions::interrupted
  std::string interruption;  // what was in flight then, in words
  double elapsed_s = 0;      // wall time of the run, by the tuner's clock
  // Whether any problem found a passing candidate.
  bool any_passed() const;
};

// Called once per evaluated candidate (after its result is stored), and again for a candidate
// measured again after drift.
struct TuneEvent {
  const Problem& problem;
  std::int64_t index;  // candidates evaluated so far for this problem
  std::uint64_t space_size;
  const CandidateResult& result;
  bool new_best;
  // The candidate's place in visit order (1 = the baseline), as ProblemReport::best_at counts;
  // index, except for a candidate measured again after drift.
  std::int64_t evaluation;
  std::optional<double> ranking_us;  // the time the search ranks by; nullopt when not ok
  std::optional<double> best_us;     // the best ranking time so far; nullopt until one passes
};
using TuneObserver = std::function<void(const TuneEvent&)>;

class Tuner {
 public:
  // clock: what the drift back-off waits on.
  Tuner(Store& store, Backend& backend, CandidateRunner& runner,
        platform::Clock& clock = platform::system_clock())
      : store_(store), backend_(backend), runner_(runner), clock_(clock) {}

  Result<TuneReport> run(const std::vector<Problem>& problems, const TuneOptions& options,
                         const TuneObserver& observer = {});

  // Seconds the last run() counted against its time limit beyond its wall time: replays are
  // charged what they cost when measured, so an identical re-run with the same --time-limit
  // reaches the point where the first stopped, and measures nothing new.
  double charged_s() const { return std::chrono::duration<double>(charged_).count(); }

  // Each problem with exactly the configs listed for it, not a strategy's proposals: the baseline
  // first, then each config in order, measured in the ranking and then the deploy regime down
  // run()'s path (answered from the store when known, else measured and stored; the drift
  // guard's anchor checks, back-off and stopped_by "unstable"). From `options` it takes the
  // drift policy, the interrupt flag and what the run records (arguments, command); there is no
  // search to bound, so no strategy, patience, budget, pins or time limit. Each report's
  // `results` holds every listed config's outcome (a problem listed twice gets both lists). A
  // config that is not in its problem's space is an invalid_argument before anything runs.
  // attune sweep measures every candidate of a bucket at each point of it with this.
  Result<TuneReport> measure(const std::vector<std::pair<Problem, std::vector<Config>>>& work,
                             const TuneOptions& options, const TuneObserver& observer = {});

  // Whether `config` is in `problem`'s space on this tuner's backend: a config legal at one point
  // of a grid can break a constraint at another (attention_decode: splits that leave a split
  // without a KV tile), and attune sweep measures a candidate only where it is legal.
  Result<bool> in_space(const Problem& problem, const Config& config) const;

  // Checks pins against the problem's space: known knobs, values among their options.
  static Status check_pins(const Space& space, const std::map<std::string, std::string>& pins);

 private:
  class ProblemSearch;

  Result<ProblemReport> tune_one(const Problem& problem, const TuneOptions& options,
                                 const TuneObserver& observer);
  // The report of a problem the run stopped before (why: time_limit or interrupted).
  ProblemReport not_started(const Problem& problem, const std::string& why) const;
  // The strategy for one problem; one that takes a prior is steered by `prior`, loaded here from
  // the store (it must outlive the strategy).
  Result<std::unique_ptr<Strategy>> make_strategy_for(const Problem& problem, const Space& space,
                                                      const TuneOptions& options,
                                                      std::optional<prior::Prior>& prior);
  // Loads what the strategy saved for this device and problem; whether it continues from it.
  Result<bool> load_state(Strategy& strategy, const Problem& problem);
  // Keeps the strategy's state, written when the whole run is done (pending_states_).
  void save_state(const Strategy& strategy, const Problem& problem);
  // A hash of the options that decide the search: runs with the same one are the same search.
  static std::string search_key(const TuneOptions& options);
  // The outcome of config in regime: from the store when known, else claimed, run and stored
  // (not stored when the backend lost its reference meanwhile). row_id: the stored row when it
  // was measured now, else 0. A config another live run has claimed is waited for, or, with
  // `held`, left to it: *held is set and the outcome is empty.
  Result<Outcome> evaluate(const Problem& problem, const Config& config, Regime regime,
                           bool* replayed, std::int64_t* row_id, bool* held = nullptr);
  // Whether the run was asked to stop (TuneOptions::interrupted), and the error that unwinds a
  // problem's search to its report.
  bool interrupted() const { return interrupted_ && interrupted_->load(); }
  Error interruption(const Problem& problem, const Config& config) const;
  // The run's time as the limit counts it: the clock, plus what replays were charged beyond
  // what answering them took (a replay costs what its row cost when it was measured).
  std::chrono::steady_clock::time_point budget_now() const { return clock_.now() + charged_; }
  // Whether the problem in flight is past its share of the time limit.
  bool time_up() const { return deadline_ && budget_now() >= *deadline_; }

  Store& store_;
  Backend& backend_;
  CandidateRunner& runner_;
  platform::Clock& clock_;
  DeviceFingerprint device_;
  std::int64_t run_id_ = 0;
  const std::atomic<bool>* interrupted_ = nullptr;
  std::optional<std::chrono::steady_clock::time_point> deadline_;  // the problem in flight's
  // The time limit's accounting: a measured row costs the tuner's time since the last row (mark_);
  // a replayed row of known cost moves charged_ by its cost less the time since the mark.
  std::chrono::steady_clock::time_point mark_;
  std::chrono::steady_clock::duration charged_{};
  std::string interruption_;
  std::int64_t resume_root_ = 0;  // the first run of the interrupted search this one resumes
  std::map<std::pair<std::string, std::string>, std::vector<SearchNode>> pending_states_;
  // Set by measure(): the configs to evaluate per problem (by structural key) instead of a
  // strategy's proposals.
  const std::map<std::string, std::vector<Config>>* lists_ = nullptr;
  // Set by run(): the winners of the warm-start group of the problem in flight, tuned before it.
  std::vector<std::string> warm_;
};

}  // namespace attune
