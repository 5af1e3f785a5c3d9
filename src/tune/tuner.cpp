#include "tune/tuner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <thread>

#include <fmt/format.h>
#include <deque>
#include <set>

#include <spdlog/spdlog.h>

#include "prior/prior.h"
#include "search/mcts.h"
#include "search/strategy.h"

namespace attune {

bool TuneReport::any_passed() const {
  for (const auto& p : problems)
    if (p.best) return true;
  return false;
}

Result<TuneReport> Tuner::run(const std::vector<Problem>& problems, const TuneOptions& options,
                              const TuneObserver& observer) {
  ATTUNE_ASSIGN(device_, backend_.fingerprint());
  ATTUNE_TRY(store_.put_device(device_));
  RunInfo info;
  info.command = options.command;
  interrupted_ = options.interrupted;
  info.arguments = options.arguments;
  info.strategy = options.strategy;
  info.seed = options.seed;
  info.version = ATTUNE_VERSION;
  info.device_key = device_.key();
  ATTUNE_ASSIGN(run_id_, store_.begin_run(info));

  TuneReport report;
  report.device = device_;
  report.run_id = run_id_;
  report.strategy = options.strategy;
  report.seed = options.seed;
  // Identical work is tuned once: problems are deduplicated by structural key.
  std::set<std::string> seen;
  for (const Problem& p : problems) {
    if (!seen.insert(p.structural_key()).second) continue;
    auto r = tune_one(p, options, observer);
    if (!r) {
      (void)store_.finish_run(run_id_, interrupted_ && interrupted_->load() ? "interrupted" : "failed");
      return r.error();
    }
    report.problems.push_back(std::move(*r));
  }
  ATTUNE_TRY(store_.finish_run(run_id_, report.any_passed() ? "done" : "failed"));
  return report;
}

Status Tuner::check_pins(const Space& space, const std::map<std::string, std::string>& pins) {
  for (const auto& [name, value] : pins) {
    auto i = space.index_of(name);
    if (!i) return Error::invalid_argument("--pin names unknown knob '" + name + "'");
    const auto& opts = space.knobs()[*i].options;
    if (std::none_of(opts.begin(), opts.end(), [&](const Value& v) { return v.text() == value; }))
      return Error::invalid_argument("--pin " + name + "=" + value + ": '" + value + "' is not an option of " + name);
  }
  return Status::success();
}

Result<Outcome> Tuner::evaluate(const Problem& problem, const Config& config, Regime regime,
                                bool* replayed, std::int64_t* row_id) {
  *row_id = 0;
  const std::string hash = config.hash_hex();
  ATTUNE_ASSIGN(auto stored, store_.find(device_.key(), problem.structural_key(), backend_.name(), regime, hash));
  if (stored) {
    *replayed = true;
    return stored->outcome;
  }
  *replayed = false;
  Outcome o;
  if (auto why = backend_.can_implement(problem, config)) {
    o.verdict = Verdict::kUnsupported;  // refused before any build: no worker involved
    o.message = *why;
  } else {
    if (!(interrupted_ && interrupted_->load())) o = runner_.run(problem, config, regime);
    if (interrupted_ && interrupted_->load())
      return Error::internal(fmt::format("interrupted while running {} {}; what was measured before is in the database",
                                         problem.name(), config.text()));
  }
  MeasurementRow row;
  row.run_id = run_id_;
  row.device_key = device_.key();
  row.problem_key = problem.structural_key();
  row.backend = backend_.name();
  row.config = config.text();
  row.config_hash = hash;
  row.regime = regime;
  row.outcome = o;
  ATTUNE_ASSIGN(*row_id, store_.record(row));
  return o;
}

Result<ProblemReport> Tuner::tune_one(const Problem& problem, const TuneOptions& options,
                                      const TuneObserver& observer) {
  ATTUNE_ASSIGN(Space space, backend_.space(problem));
  ATTUNE_TRY(check_pins(space, options.pins));
  ATTUNE_TRY(store_.put_problem(problem));
  auto pinned = [&](const Point& p) {
    for (const auto& [name, value] : options.pins)
      if (space.knobs()[*space.index_of(name)].options[p[*space.index_of(name)]].text() != value) return false;
    return true;
  };
  StrategyOptions so;
  so.seed = options.seed;
  so.shard_index = options.shard_index;
  so.shard_count = options.shard_count;
  // mcts is steered by the newest usable prior in the store (refit between runs with `attune
  // prior fit`: refitting inside one problem's search did not pay on the recorded spaces, see
  // bench/results/search_replay-*.md) and continues the search tree this device left for this
  // problem.
  std::unique_ptr<Strategy> strategy;
  search::Mcts* mcts = nullptr;
  std::optional<prior::Prior> prior;
  bool tree_imported = false;
  if (options.strategy == "mcts") {
    ATTUNE_ASSIGN(auto record, store_.latest_prior("default"));
    if (record) {
      prior::PriorOptions po;
      po.first_refit = 0;
      auto loaded = prior::Prior::load({record->model, record->reservoir, record->rows, record->calibration,
                                        record->quarantined}, po);
      if (loaded) prior.emplace(std::move(*loaded));
      else spdlog::warn("ignoring the stored prior: {}", loaded.error().message());
    }
    search::MctsOptions mo;
    const prior::Context context = prior::make_context(problem, device_);
    if (prior && prior->usable()) {
      mo.prior = prior->scorer(space, context);
      mo.prior_generation = [&prior] { return prior->generation(); };
    }
    auto m = std::make_unique<search::Mcts>(space, so, mo);
    mcts = m.get();
    ATTUNE_ASSIGN(auto nodes, store_.search_nodes(device_.key(), problem.structural_key(), "mcts"));
    if (!nodes.empty()) {
      std::vector<search::TreeNode> tree;
      for (const auto& n : nodes) tree.push_back({n.path, n.visits, n.best_us, n.payload});
      Status st = m->import_nodes(tree);
      if (st.ok()) tree_imported = true;
      else spdlog::warn("starting a fresh search tree: {}", st.error().message());
    }
    strategy = std::move(m);
  } else {
    ATTUNE_ASSIGN(strategy, make_strategy(options.strategy, space, so));
  }

  ProblemReport rep;
  rep.problem = problem;
  rep.backend = backend_.name();
  rep.space_size = space.count();
  for (Verdict v : kAllVerdicts) rep.verdicts[v] = 0;

  std::optional<double> best_rank;
  std::set<Point> done;
  int since_best = 0;
  // Every candidate of this run in visit order; a candidate measured again after drift replaces
  // its entry. The report's counts are taken from here at the end.
  std::vector<CandidateResult> results;
  std::map<Point, std::size_t> result_of;
  // What --max-candidates counts: a refusal before any build (a variant cuBLASLt does not
  // support) costs no build and no GPU time, and on the H200 half of a gemm run's proposals were
  // such refusals, leaving half the budget for candidates that could win.
  std::int64_t counted = 0;

  // Measures (or replays) one point: rank regime, then deploy when it is within the band of the
  // best so far (or deploy alone, for a backend that measures only there). ids receives the rows
  // written now.
  const std::vector<Regime> regimes = backend_.regimes();
  const bool deploy_only = regimes.size() == 1 && regimes.front() == Regime::kDeploy;
  const Regime first_regime = regimes.front();
  auto measure = [&](const Point& point, bool is_baseline, std::vector<std::int64_t>* ids) -> Result<CandidateResult> {
    const Config config = space.config(point);
    CandidateResult c;
    c.config = config.text();
    bool rank_replayed = false;
    std::int64_t id = 0;
    if (deploy_only) {
      // Measured once, in deploy: that time ranks it and counts for patience.
      ATTUNE_ASSIGN(Outcome dep, evaluate(problem, config, Regime::kDeploy, &rank_replayed, &id));
      if (id) ids->push_back(id);
      c.verdict = dep.verdict;
      c.message = dep.message;
      if (dep.verdict == Verdict::kOk && dep.measurement) c.rank_us = c.deploy_us = dep.measurement->median_us;
      c.replayed = rank_replayed;
      return c;
    }
    ATTUNE_ASSIGN(Outcome rank, evaluate(problem, config, Regime::kRank, &rank_replayed, &id));
    if (id) ids->push_back(id);
    c.verdict = rank.verdict;
    c.message = rank.message;
    bool all_replayed = rank_replayed;
    if (rank.verdict == Verdict::kOk && rank.measurement) {
      c.rank_us = rank.measurement->median_us;
      const bool in_band = !best_rank || *c.rank_us <= *best_rank * (1 + options.deploy_band);
      if (is_baseline || in_band) {
        bool dep_replayed = false;
        ATTUNE_ASSIGN(Outcome dep, evaluate(problem, config, Regime::kDeploy, &dep_replayed, &id));
        if (id) ids->push_back(id);
        all_replayed = all_replayed && dep_replayed;
        if (dep.verdict == Verdict::kOk && dep.measurement) {
          c.deploy_us = dep.measurement->median_us;
        } else {
          // Passing warm but failing in the production path is a failure.
          c.verdict = dep.verdict;
          c.message = "deploy regime: " + dep.message;
          c.rank_us.reset();
        }
      }
    }
    c.replayed = all_replayed;
    return c;
  };

  // Takes a result into the run: the strategy learns it, patience counts it.
  auto account = [&](const Point& point, const CandidateResult& c, bool known) {
    auto [it, fresh] = result_of.emplace(point, results.size());
    if (fresh) {
      results.push_back(c);
      if (c.verdict != Verdict::kUnsupported) ++counted;
    } else {
      results[it->second] = c;
    }
    bool new_best = false;
    if (c.verdict == Verdict::kOk && c.rank_us) {
      if (!best_rank || *c.rank_us < *best_rank) {
        best_rank = c.rank_us;
        since_best = 0;
        new_best = true;
      } else if (fresh) {
        ++since_best;
      }
    }
    if (!(known && tree_imported)) strategy->observe(point, c.verdict, c.rank_us);
    done.insert(point);
    if (observer) observer(TuneEvent{problem, static_cast<std::int64_t>(results.size()), rep.space_size, c, new_best});
  };

  // The anchor: the baseline config, re-measured fresh in the rank regime.
  const Config anchor = space.config(space.baseline());
  std::optional<double> anchor_ref;
  std::vector<std::pair<Point, std::vector<std::int64_t>>> since_anchor;
  auto anchor_time = [&]() -> std::optional<double> {
    Outcome o = runner_.run(problem, anchor, first_regime);
    if (o.verdict != Verdict::kOk || !o.measurement) return std::nullopt;
    return o.measurement->median_us;
  };
  // The median of three fresh readings: on the H200 one reading of a ~8 us cuBLASLt anchor ranged
  // over -30%..+78% of the next (clock ramps after compile-bound pauses), so a single reading
  // sent the tuner into minute-long back-offs for nothing.
  auto anchor_reading = [&](std::optional<double> first = std::nullopt) -> std::optional<double> {
    std::vector<double> v;
    if (first) v.push_back(*first);
    while (v.size() < 3) {
      auto t = anchor_time();
      if (!t) return std::nullopt;
      v.push_back(*t);
    }
    std::sort(v.begin(), v.end());
    return v[1];
  };
  auto check_anchor = [&]() -> Status {
    auto t = anchor_time();
    if (!t) {
      spdlog::warn("the anchor config failed to run; drift is not checked for these candidates");
      since_anchor.clear();
      return Status::success();
    }
    // One reading within the bound is enough; one outside it is confirmed by two more.
    if (std::fabs(*t / *anchor_ref - 1) > options.drift_bound) t = anchor_reading(t);
    const double drift = t ? *t / *anchor_ref - 1 : 0;
    if (!t || std::fabs(drift) <= options.drift_bound) {
      since_anchor.clear();
      return Status::success();
    }
    ++rep.drift_events;
    const std::string why = fmt::format("the anchor {} moved {:+.1f}% ({:.2f} -> {:.2f} us) while this was measured",
                                        anchor.text(), 100 * drift, *anchor_ref, *t);
    spdlog::warn("{}; discarding {} candidates and backing off", why, since_anchor.size());
    std::vector<std::int64_t> ids;
    for (const auto& [p, row_ids] : since_anchor) ids.insert(ids.end(), row_ids.begin(), row_ids.end());
    ATTUNE_TRY(store_.discard(ids, why));
    rep.discarded += static_cast<std::int64_t>(ids.size());
    double wait = options.backoff_s;
    bool recovered = false;
    for (int i = 0; i < options.max_backoffs && !recovered; ++i) {
      std::this_thread::sleep_for(std::chrono::duration<double>(wait));
      wait *= 2;
      t = anchor_reading();
      recovered = t && std::fabs(*t / *anchor_ref - 1) <= options.recover_bound;
    }
    if (!recovered && t) {
      spdlog::warn("the anchor did not come back within {:.0f}%; measuring against its new level {:.2f} us",
                   100 * options.recover_bound, *t);
      anchor_ref = t;
    }
    auto redo = std::move(since_anchor);
    since_anchor.clear();
    for (const auto& [p, row_ids] : redo) {
      std::vector<std::int64_t> fresh_ids;
      ATTUNE_ASSIGN(CandidateResult c, measure(p, p == space.baseline(), &fresh_ids));
      account(p, c, false);
      since_anchor.emplace_back(p, std::move(fresh_ids));
    }
    return Status::success();
  };

  auto visit = [&](const Point& point, bool is_baseline, bool known = false) -> Result<CandidateResult> {
    std::vector<std::int64_t> ids;
    ATTUNE_ASSIGN(CandidateResult c, measure(point, is_baseline, &ids));
    account(point, c, known);
    if (options.anchor_every > 0 && !ids.empty()) {
      if (!anchor_ref) anchor_ref = anchor_reading();
      if (anchor_ref) {
        since_anchor.emplace_back(point, std::move(ids));
        if (static_cast<int>(since_anchor.size()) >= options.anchor_every) ATTUNE_TRY(check_anchor());
      }
    }
    return c;
  };

  // The baseline is measured first whatever the strategy or shard: the speedup is against it.
  // A search tree imported from an earlier run has already seen the baseline. The store learns
  // which config it is: a tuned table's rows must beat it (src/table/export.h).
  ATTUNE_TRY(store_.put_baseline({device_.key(), problem.structural_key(), backend_.name(), anchor.text(),
                                  anchor.hash_hex(), ""}));
  ATTUNE_ASSIGN(CandidateResult baseline_result, visit(space.baseline(), true, tree_imported));
  const bool baseline_failed = backend_.baseline_is_reference() && baseline_result.verdict != Verdict::kOk;
  // What this device already measured for this problem comes first, answered from the store:
  // a run continues from what is known, and an identical rerun measures nothing.
  if (!baseline_failed) {
    MeasurementQuery q;
    q.problem = problem.structural_key();
    q.device_key = device_.key();
    q.backend = backend_.name();
    q.regime = first_regime;
    ATTUNE_ASSIGN(auto rows, store_.measurements(q));
    for (const auto& row : rows) {
      auto cfg = space.parse(row.config);
      if (!cfg) continue;  // the space changed since: not a candidate any more
      ATTUNE_ASSIGN(Point p, space.point(*cfg));
      if (done.count(p) || !pinned(p)) continue;
      if (options.max_candidates && counted >= *options.max_candidates) break;
      ATTUNE_TRY(visit(p, false, true));
    }
  }
  rep.stopped_by = baseline_failed ? "baseline_failed" : "exhausted";
  std::deque<Point> ahead;
  while (!baseline_failed) {
    if (options.max_candidates && counted >= *options.max_candidates) {
      rep.stopped_by = "max_candidates";
      break;
    }
    if (options.patience > 0 && since_best >= options.patience) {
      rep.stopped_by = "patience";
      break;
    }
    // Keep up to prefetch_depth proposals queued and handed to the backend, so their builds
    // run ahead of the GPU.
    while (static_cast<int>(ahead.size()) < std::max(1, backend_.prefetch_depth())) {
      auto next = strategy->propose();
      if (!next) break;
      if (done.count(*next) || !pinned(*next) || std::find(ahead.begin(), ahead.end(), *next) != ahead.end()) continue;
      if (backend_.prefetch_depth() > 0) backend_.prepare(problem, space.config(*next));
      ahead.push_back(std::move(*next));
    }
    if (ahead.empty()) break;
    Point point = std::move(ahead.front());
    ahead.pop_front();
    if (done.count(point)) continue;
    ATTUNE_TRY(visit(point, false));
  }
  // Candidates measured since the last clean anchor are checked before the run ends.
  if (!since_anchor.empty() && anchor_ref) ATTUNE_TRY(check_anchor());

  // The tie rule: equal times go to fewer knobs changed from the baseline, then the config text.
  const Point base_point = space.baseline();
  auto changed = [&](const CandidateResult& c) {
    auto cfg = space.parse(c.config);
    if (!cfg) return static_cast<int>(space.depth());
    auto p = space.point(*cfg);
    if (!p) return static_cast<int>(space.depth());
    int n = 0;
    for (std::size_t i = 0; i < p->size(); ++i) n += (*p)[i] != base_point[i];
    return n;
  };
  auto ranks_before = [&](const CandidateResult& a, const CandidateResult& b) {
    if (*a.deploy_us != *b.deploy_us) return *a.deploy_us < *b.deploy_us;
    if (changed(a) != changed(b)) return changed(a) < changed(b);
    return a.config < b.config;
  };
  rep.baseline = results.front();
  for (const CandidateResult& c : results) {
    ++rep.evaluated;
    ++(c.replayed ? rep.replayed : rep.measured);
    ++rep.verdicts[c.verdict];
    if (c.verdict != Verdict::kOk) rep.rejected.push_back(c);
    if (c.verdict == Verdict::kOk && c.deploy_us && (!rep.best || ranks_before(c, *rep.best))) rep.best = c;
  }
  if (mcts) {
    std::vector<SearchNode> nodes;
    for (auto& n : mcts->export_nodes()) nodes.push_back({std::move(n.path), n.visits, n.best_us, std::move(n.payload)});
    ATTUNE_TRY(store_.put_search_nodes(device_.key(), problem.structural_key(), "mcts", nodes));
  }
  if (rep.best && rep.baseline && rep.baseline->deploy_us && *rep.best->deploy_us > 0)
    rep.speedup = *rep.baseline->deploy_us / *rep.best->deploy_us;
  return rep;
}

}  // namespace attune
