// Prior: a cost model predicting log latency from features of a (possibly partial) config and of
// its problem and device, trained with XGBoost (C API) on a bounded reservoir of measured rows.
// A partial config leaves its undecided knobs missing, and the model is trained on the recorded
// prefixes of every row (target: the best time seen below that prefix), so it scores forks of the
// mcts tree directly. A prior that fails its calibration check (Spearman rank correlation on
// held-back rows) is quarantined and scores uniformly, as a cold prior does. A Prior object is
// used from one thread at a time; it is move-only (it owns the model handle).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/device.h"
#include "core/error.h"
#include "core/problem.h"
#include "core/rank.h"
#include "core/space.h"
#include "core/verdict.h"

namespace attune::prior {

// Numeric features of what is computed and where: the problem's numeric attributes (a size
// "4096x4096" becomes two features) and the device's SM count, memory and L2 when known.
struct Context {
  std::string key;  // groups rows of one (problem, device): "structural key|device key"
  std::vector<std::pair<std::string, double>> features;
};
Context make_context(const Problem& problem, const DeviceFingerprint& device);

// One measured candidate.
struct Row {
  std::string context;                                // Context::key
  std::vector<std::pair<std::string, double>> knobs;  // in Space order: knob name, numeric value
  std::vector<std::pair<std::string, double>> context_features;
  bool ok = true;
  double log_us = 0;  // log(time in us) when ok
};
// A knob value as a feature: the number itself, or a stable hash in [0, 1) for a word (so a
// row built from a stored config text and one built from a Space agree).
double feature_value(const Value& v);
double knob_value(const Space& space, std::size_t knob, std::uint32_t option);
Row make_row(const Space& space, const Point& point, const Context& context, Verdict verdict,
             std::optional<double> time_us);
// The same from a config as the store keeps it (knobs in the config's order).
Row make_row(const Config& config, const Context& context, Verdict verdict,
             std::optional<double> time_us);

struct PriorOptions {
  std::size_t reservoir = 4096;  // training rows kept (reservoir sampling beyond that)
  std::uint64_t seed = 0;
  double holdout = 0.2;          // share of rows held back for the calibration check
  double min_calibration = 0.3;  // Spearman below this quarantines the model
  std::size_t min_rows = 24;     // fewer rows: stay cold
  int trees = 50;
  int max_depth = 6;
  double learning_rate = 0.2;
  double temperature = 0.15;  // child score = exp(-(predicted - best predicted) / T), log units
  // Online refits: after this many new rows, then doubling (0: never refit by itself).
  std::size_t first_refit = 32;
  // predictor() predicts only for a space whose knobs the reservoir holds rows of from at least
  // this many other problems: from one other shape, a small space's ranking was anti-correlated
  // with its times (silu_mul, Spearman -0.39 and -0.51) and cost 34 evaluations against 6; from 4
  // to 7 it helped on the whole (bench/results/search_replay-2026-12-04b.md).
  std::size_t min_problems_to_predict = 2;
};

// What the store keeps (Store::put_prior's PriorRecord carries these fields).
struct Checkpoint {
  std::string model;      // XGBoost model (JSON); "" for a cold prior
  std::string reservoir;  // JSON: schema, rows, counters
  std::int64_t rows = 0;
  double calibration = 0;
  bool quarantined = false;
};

class Prior {
 public:
  explicit Prior(PriorOptions options = {});
  ~Prior();
  Prior(Prior&&) noexcept;
  Prior& operator=(Prior&&) noexcept;
  Prior(const Prior&) = delete;
  Prior& operator=(const Prior&) = delete;

  // Adds a row to the reservoir; with an online schedule, refits when it is due.
  void add(Row row);
  std::size_t rows() const;
  // Trains on the reservoir less the held-back rows, then checks calibration. A failure to
  // train is an error; a poor calibration is not (the prior is quarantined instead).
  Status fit();

  bool trained() const;  // a model exists (quarantined or not)
  bool quarantined() const;
  bool usable() const { return trained() && !quarantined(); }
  double calibration() const;
  // Changes on every fit: mcts drops cached scores when it does.
  std::uint64_t generation() const;

  // Predicted log latency of each partial point (a prefix of the Space's knobs); nullopt when no
  // model is trained.
  std::optional<std::vector<double>> predict(const Space& space, const std::vector<Point>& prefixes,
                                             const Context& context) const;
  // Scores for the options of knob prefix.size() (mcts's ChildScores): uniform unless usable().
  std::vector<double> child_scores(const Space& space, const Point& prefix,
                                   const std::vector<std::uint32_t>& options,
                                   const Context& context) const;

  // child_scores bound to a space and context, in the shape of search::ChildScores (mcts's
  // MctsOptions::prior), so the layers meet without depending on each other. The Prior must
  // outlive the function (it holds a pointer to it; moving the Prior keeps it valid).
  std::function<std::vector<double>(const Point&, const std::vector<std::uint32_t>&)> scorer(
      const Space& space, const Context& context) const;
  // Predicted log latency of full points of `space`, bound like scorer() (the shape of
  // StrategyContext::predict): empty when the prior is not usable() or holds rows of this space's
  // knobs from fewer than min_problems_to_predict other problems, so a strategy that ranks
  // configs by it falls back to its own means.
  std::function<std::vector<double>(const std::vector<Point>&)> predictor(
      const Space& space, const Context& context) const;

  // Distinct problems (contexts) other than `context` with rows in the reservoir whose knobs are
  // exactly `space`'s, by name and order.
  std::size_t problems_like(const Space& space, const Context& context) const;

  Result<Checkpoint> save() const;
  // A damaged checkpoint is a corrupt error and yields nothing.
  static Result<Prior> load(const Checkpoint& checkpoint, PriorOptions options = {});

  struct State;  // the implementation's; declared public only so its helpers can name it

 private:
  std::unique_ptr<State> s_;
};

// Spearman rank correlation (core/rank.h), named here for the prior's callers.
using attune::spearman;

}  // namespace attune::prior
