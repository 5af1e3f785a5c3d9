#include "tune/tuner.h"

#include <algorithm>
#include <deque>
#include <limits>
#include <map>
#include <set>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "core/hash.h"
#include "core/op.h"
#include "prior/prior.h"
#include "tune/regime_policy.h"

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
  info.search_key = search_key(options);
  // A run killed or interrupted is resumed by the next run of the same search: its rows are
  // answered from the store as the search proposes them again, so it is the same search.
  ATTUNE_ASSIGN(auto earlier, store_.runs());
  resume_root_ = 0;
  for (auto r = earlier.rbegin(); r != earlier.rend(); ++r) {
    // The search key covers the command too.
    if (r->device_key != info.device_key || r->search_key != info.search_key) continue;
    if (r->status == "interrupted") resume_root_ = r->resumes ? r->resumes : r->id;
    break;
  }
  info.resumes = resume_root_;
  if (resume_root_)
    spdlog::info("resuming the search of run {}, which was interrupted", resume_root_);
  ATTUNE_ASSIGN(run_id_, store_.begin_run(info));
  pending_states_.clear();

  TuneReport report;
  report.device = device_;
  report.run_id = run_id_;
  report.strategy = options.strategy;
  report.seed = options.seed;
  // Identical work is tuned once: problems are deduplicated by structural key.
  std::set<std::string> seen;
  std::vector<const Problem*> work;
  for (const Problem& p : problems)
    if (seen.insert(p.structural_key()).second) work.push_back(&p);
  const auto start = clock_.now();
  mark_ = start;
  charged_ = {};
  std::optional<std::chrono::steady_clock::time_point> run_deadline;
  if (options.time_limit_s)
    run_deadline = start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                               std::chrono::duration<double>(*options.time_limit_s));
  std::map<std::string, std::vector<std::string>> winners;  // per warm-start group, in run order
  for (std::size_t i = 0; i < work.size(); ++i) {
    const Problem& p = *work[i];
    const auto group = options.warm_start_groups.find(p.structural_key());
    if (group == options.warm_start_groups.end())
      warm_.clear();
    else
      warm_ = winners[group->second];
    const auto now = budget_now();
    if (interrupted() || (run_deadline && now >= *run_deadline)) {
      report.problems.push_back(not_started(p, interrupted() ? "interrupted" : "time_limit"));
      continue;
    }
    // An equal share of what is left: a problem that stops early leaves its time to the rest.
    if (run_deadline) deadline_ = now + (*run_deadline - now) / static_cast<long>(work.size() - i);
    const auto problem_start = clock_.now();
    auto r = tune_one(p, options, observer);
    // What the search queued to build ahead and never reached is no use to the next problem.
    if (backend_.prefetch_depth() > 0) backend_.drop_prepared();
    if (r) r->elapsed_s = std::chrono::duration<double>(clock_.now() - problem_start).count();
    if (!r) {
      warm_.clear();
      (void)store_.finish_run(run_id_, "failed");
      return r.error();
    }
    if (group != options.warm_start_groups.end() && r->best &&
        (!r->baseline || r->best->config != r->baseline->config)) {
      auto& list = winners[group->second];
      if (std::find(list.begin(), list.end(), r->best->config) == list.end())
        list.push_back(r->best->config);
    }
    report.problems.push_back(std::move(*r));
  }
  warm_.clear();
  deadline_.reset();
  report.interrupted = interrupted();
  // Search states are saved once the whole run is done: a rerun of an interrupted one replays
  // it from the rows rather than continuing trees that ran past where it stopped.
  if (!report.interrupted)
    for (const auto& [key, state] : pending_states_)
      ATTUNE_TRY(store_.put_search_nodes(device_.key(), key.first, key.second, state));
  report.interruption = interruption_;
  report.elapsed_s = std::chrono::duration<double>(clock_.now() - start).count();
  ATTUNE_TRY(store_.finish_run(run_id_, report.interrupted    ? "interrupted"
                                        : report.any_passed() ? "done"
                                                              : "failed"));
  return report;
}

namespace {

// measure()'s proposals: the listed configs, in order, then nothing.
class ListStrategy final : public Strategy {
 public:
  explicit ListStrategy(std::vector<Point> points) : points_(std::move(points)) {}
  std::string name() const override { return "list"; }
  std::optional<Point> propose() override {
    if (next_ >= points_.size()) return std::nullopt;
    return points_[next_++];
  }
  void observe(const Point&, Verdict, std::optional<double>) override {}

 private:
  std::vector<Point> points_;
  std::size_t next_ = 0;
};

}  // namespace

Result<bool> Tuner::in_space(const Problem& problem, const Config& config) const {
  ATTUNE_ASSIGN(Space space, backend_.space(problem));
  auto parsed = space.parse(config.text());
  return parsed.ok() && space.point(*parsed).ok();
}

Result<TuneReport> Tuner::measure(const std::vector<std::pair<Problem, std::vector<Config>>>& work,
                                  const TuneOptions& options, const TuneObserver& observer) {
  std::map<std::string, std::vector<Config>> lists;
  std::vector<Problem> problems;
  for (const auto& [problem, configs] : work) {
    ATTUNE_ASSIGN(Space space, backend_.space(problem));
    for (const Config& c : configs) {
      ATTUNE_ASSIGN(Config parsed, space.parse(c.text()));
      ATTUNE_TRY(space.point(parsed));
    }
    auto& list = lists[problem.structural_key()];
    if (list.empty()) problems.push_back(problem);
    list.insert(list.end(), configs.begin(), configs.end());
  }
  TuneOptions o;
  o.strategy = "list";
  o.seed = 0;
  o.patience = 0;  // never: the list is the whole search
  o.fresh_search = true;
  // Every listed config is measured in the deploy regime, whatever its ranking time.
  o.deploy_band = std::numeric_limits<double>::infinity();
  o.drift = options.drift;
  o.interrupted = options.interrupted;
  o.arguments = options.arguments;
  o.command = options.command;
  lists_ = &lists;
  auto report = run(problems, o, observer);
  lists_ = nullptr;
  return report;
}

ProblemReport Tuner::not_started(const Problem& problem, const std::string& why) const {
  ProblemReport r;
  r.problem = problem;
  r.backend = backend_.name();
  r.started = false;
  r.stopped_by = why;
  for (Verdict v : kAllVerdicts) r.verdicts[v] = 0;
  if (auto space = backend_.space(problem)) r.space_size = space->count();
  return r;
}

Status Tuner::check_pins(const Space& space, const std::map<std::string, std::string>& pins) {
  for (const auto& [name, value] : pins) {
    auto i = space.index_of(name);
    if (!i) return Error::invalid_argument("--pin names unknown knob '" + name + "'");
    const auto& opts = space.knobs()[*i].options;
    if (std::none_of(opts.begin(), opts.end(), [&](const Value& v) { return v.text() == value; }))
      return Error::invalid_argument("--pin " + name + "=" + value + ": '" + value +
                                     "' is not an option of " + name);
  }
  return Status::success();
}

Error Tuner::interruption(const Problem& problem, const Config& config) const {
  return Error::internal(
      fmt::format("interrupted while running {} {}; what was measured before is in the database",
                  problem.name(), config.text()));
}

Result<Outcome> Tuner::evaluate(const Problem& problem, const Config& config, Regime regime,
                                bool* replayed, std::int64_t* row_id, bool* held) {
  *row_id = 0;
  if (held) *held = false;
  const std::string hash = config.hash_hex();
  const ClaimKey key{device_.key(), problem.structural_key(), backend_.name(), regime, hash};
  // Concurrent tuners of one problem split the work: a config is claimed before it is measured,
  // and one another live run holds is answered from the store once that run has recorded it.
  while (true) {
    ATTUNE_ASSIGN(auto stored,
                  store_.find(key.device_key, key.problem_key, key.backend, regime, hash));
    if (stored) {
      *replayed = true;
      // Charged what it cost when measured, in place of the time since the last row; never
      // less than that time, which a drift back-off or another run's claim may have taken.
      const auto now = clock_.now();
      const auto cost = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          std::chrono::duration<double>(stored->cost_s));
      if (cost > now - mark_) charged_ += cost - (now - mark_);
      mark_ = now;
      return stored->outcome;
    }
    ATTUNE_ASSIGN(ClaimResult claim, store_.claim(key, run_id_));
    if (claim == ClaimResult::kOurs) break;
    if (claim == ClaimResult::kMeasured) continue;
    if (held) {
      *held = true;
      return Outcome{};
    }
    if (interrupted()) return interruption(problem, config);
    clock_.sleep_for(std::chrono::milliseconds(20));
  }
  *replayed = false;
  Outcome o;
  if (auto why = backend_.can_implement(problem, config)) {
    o.verdict = Verdict::kUnsupported;  // refused before any build: no worker involved
    o.message = *why;
  } else {
    if (!interrupted()) o = runner_.run(problem, config, regime);
    if (interrupted()) return interruption(problem, config);
    // Not the candidate's outcome: the backend lost its reference (Backend::reference_lost).
    if (backend_.baseline_is_reference() && backend_.reference_lost(problem)) {
      ATTUNE_TRY(store_.release(key, run_id_));
      return o;
    }
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
  const auto now = clock_.now();
  row.cost_s = std::chrono::duration<double>(now - mark_).count();
  mark_ = now;
  ATTUNE_ASSIGN(*row_id, store_.record(row));
  ATTUNE_TRY(store_.release(key, run_id_));
  return o;
}

Result<std::unique_ptr<Strategy>> Tuner::make_strategy_for(const Problem& problem,
                                                           const Space& space,
                                                           const TuneOptions& options,
                                                           std::optional<prior::Prior>& prior) {
  if (lists_) {
    std::vector<Point> points;
    auto it = lists_->find(problem.structural_key());
    if (it != lists_->end())
      for (const Config& c : it->second) {
        ATTUNE_ASSIGN(Config parsed, space.parse(c.text()));
        ATTUNE_ASSIGN(Point p, space.point(parsed));
        points.push_back(std::move(p));
      }
    return std::unique_ptr<Strategy>(std::make_unique<ListStrategy>(std::move(points)));
  }
  StrategyOptions so;
  so.seed = options.seed;
  so.shard_index = options.shard_index;
  so.shard_count = options.shard_count;
  so.settings = options.strategy_options;
  ATTUNE_ASSIGN(StrategyInfo info, strategy_info(options.strategy));
  // A strategy that takes a prior is steered by the newest usable one in the store (refit
  // between runs with `attune prior fit`: refitting inside one problem's search did not pay on
  // the recorded spaces, see bench/results/search_replay-*.md).
  StrategyContext context;
  if (info.takes_prior) {
    ATTUNE_ASSIGN(auto record, store_.latest_prior("default"));
    if (record) {
      prior::PriorOptions po;
      po.first_refit = 0;
      auto loaded = prior::Prior::load({record->model, record->reservoir, record->rows,
                                        record->calibration, record->quarantined},
                                       po);
      if (loaded)
        prior.emplace(std::move(*loaded));
      else
        spdlog::warn("ignoring the stored prior: {}", loaded.error().message());
    }
    if (prior && prior->usable()) {
      const prior::Prior* p = &*prior;
      const prior::Context pc = prior::make_context(problem, device_);
      context.prior = p->scorer(space, pc);
      context.prior_generation = [p] { return p->generation(); };
      context.predict = p->predictor(space, pc);
    }
  }
  return make_strategy(options.strategy, space, so, context);
}

Result<bool> Tuner::load_state(Strategy& strategy, const Problem& problem) {
  ATTUNE_ASSIGN(auto rows,
                store_.search_nodes(device_.key(), problem.structural_key(), strategy.name()));
  if (rows.empty()) return false;
  std::vector<StateNode> nodes;
  for (auto& n : rows)
    nodes.push_back({std::move(n.path), n.visits, n.best_us, std::move(n.payload)});
  Status st = strategy.load_state(nodes);
  if (!st.ok()) {
    spdlog::warn("starting a fresh {} search: {}", strategy.name(), st.error().message());
    return false;
  }
  return true;
}

void Tuner::save_state(const Strategy& strategy, const Problem& problem) {
  std::vector<SearchNode> rows;
  for (auto& n : strategy.save_state())
    rows.push_back({std::move(n.path), n.visits, n.best_us, std::move(n.payload)});
  if (!rows.empty()) pending_states_[{problem.structural_key(), strategy.name()}] = std::move(rows);
}

std::string Tuner::search_key(const TuneOptions& o) {
  nlohmann::json j = {{"command", o.command},
                      {"strategy", o.strategy},
                      {"seed", o.seed},
                      {"options", o.strategy_options},
                      {"patience", o.patience},
                      {"max_candidates", o.max_candidates ? *o.max_candidates : -1},
                      {"shard", {o.shard_index, o.shard_count}},
                      {"deploy_band", o.deploy_band},
                      {"pins", o.pins}};
  // Only when set: the keys of searches that continue stay what they were, so a run interrupted
  // before --fresh-search existed is still resumed.
  if (o.fresh_search) j["fresh_search"] = true;
  return hex64(fnv1a64(j.dump()));
}

// The clock the drift back-off waits on. A wait ends at the problem's deadline (its share of
// --time-limit), and with an interrupt flag (TuneOptions::interrupted) it is cut into slices of at
// most 100 ms and ends once the flag is set: the back-off doubles up to a minute, and neither
// Ctrl-C nor a deadline must wait it out.
class StoppableClock final : public platform::Clock {
 public:
  StoppableClock(platform::Clock& clock, const std::atomic<bool>* stop,
                 const std::optional<std::chrono::steady_clock::time_point>& deadline)
      : clock_(clock), stop_(stop), deadline_(deadline) {}
  std::chrono::steady_clock::time_point now() const override { return clock_.now(); }
  void sleep_for(std::chrono::duration<double> d) override {
    if (deadline_) d = std::min<std::chrono::duration<double>>(d, *deadline_ - clock_.now());
    if (!stop_) {
      if (d.count() > 0) clock_.sleep_for(d);
      return;
    }
    // Slices until an end time, so that the lateness of each wake-up does not add up.
    const auto end =
        clock_.now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(d);
    const std::chrono::duration<double> slice(0.1);
    for (auto now = clock_.now(); now < end && !stop_->load(); now = clock_.now())
      clock_.sleep_for(std::min<std::chrono::duration<double>>(end - now, slice));
  }

 private:
  platform::Clock& clock_;
  const std::atomic<bool>* stop_;
  const std::optional<std::chrono::steady_clock::time_point>& deadline_;
};

// One problem's search: the baseline, then what the store already holds, then the strategy's
// proposals, each measured in the regimes the policy asks for, counted for patience and
// --max-candidates, and checked by the drift guard; then the report.
class Tuner::ProblemSearch {
 public:
  // Why a deploy row was discarded by retime_best().
  static constexpr std::string_view kRetimedReason = "re-timed after the search";

  ProblemSearch(Tuner& tuner, const Problem& problem, const Space& space,
                const TuneOptions& options, const TuneObserver& observer, Strategy& strategy,
                bool continued, RegimePolicy regimes)
      : t_(tuner),
        problem_(problem),
        space_(space),
        options_(options),
        observer_(observer),
        strategy_(strategy),
        continued_(continued),
        regimes_(regimes),
        anchor_(space.config(space.baseline())),
        clock_(tuner.clock_, tuner.interrupted_, tuner.deadline_),
        guard_(
            options.drift, [this] { return read_anchor(); }, clock_,
            [this] { return t_.interrupted() || t_.time_up(); }) {
    rep_.problem = problem;
    rep_.backend = t_.backend_.name();
    rep_.space_size = space.count();
    rep_.continued_state = continued;
    for (Verdict v : kAllVerdicts) rep_.verdicts[v] = 0;
  }

  Status run() {
    // The baseline is measured first whatever the strategy or shard: the speedup is against it.
    // A strategy continuing an earlier run has already seen it. The store learns which config it
    // is: a tuned table's rows must beat it (src/table/export.h).
    ATTUNE_TRY(
        t_.store_.put_baseline({t_.device_.key(), problem_.structural_key(), t_.backend_.name(),
                                anchor_.text(), anchor_.hash_hex(), ""}));
    prepare_first();
    ATTUNE_TRY(visit(space_.baseline(), true, continued_));
    // A backend whose baseline is the reference (a whole program: no independent reference)
    // can check nothing else when the baseline fails.
    if (t_.backend_.baseline_is_reference() && results_.front().verdict != Verdict::kOk) {
      rep_.stopped_by = "baseline_failed";
      return Status::success();
    }
    if (!options_.fresh_search) ATTUNE_TRY(visit_stored());
    ATTUNE_TRY(visit_warm());
    ATTUNE_TRY(visit_seeds());
    ATTUNE_TRY(search());
    // Candidates measured since the last clean anchor are checked before the run ends, unless
    // the time is up: the limit is kept to within one candidate.
    if (guard_.pending() && !reference_lost() && stop_.empty()) {
      if (t_.time_up())
        spdlog::warn(
            "{}: the time limit came before the last anchor check; the last {} "
            "candidates are not checked for drift",
            problem_.name(), guard_.pending_count());
      else
        ATTUNE_TRY(check_anchor());
    }
    if (stop_.empty() && !reference_lost()) ATTUNE_TRY(retime_best());
    return Status::success();
  }

  // The search was unwound by an interrupt: the report says so.
  void interrupted() { rep_.stopped_by = "interrupted"; }

  ProblemReport report() {
    if (!results_.empty() && !dropped_.count(0)) rep_.baseline = results_.front();
    rep_.backoff_s = guard_.waited_s();
    rep_.anchor_readings = static_cast<int>(guard_.readings().size());
    rep_.anchor_levels = guard_.levels();
    for (std::size_t i = 0; i < results_.size(); ++i) {
      if (dropped_.count(i)) continue;  // its measurement drifted and was not taken again
      const CandidateResult& c = results_[i];
      rep_.results.push_back(c);
      ++rep_.evaluated;
      ++(c.replayed ? rep_.replayed : rep_.measured);
      ++rep_.verdicts[c.verdict];
      if (c.verdict != Verdict::kOk) rep_.rejected.push_back(c);
      if (c.verdict == Verdict::kOk && c.deploy_us && (!rep_.best || ranks_before(c, *rep_.best))) {
        rep_.best = c;
        rep_.best_at = static_cast<std::int64_t>(i) + 1;
      }
    }
    if (rep_.best && rep_.baseline && rep_.baseline->deploy_us && *rep_.best->deploy_us > 0)
      rep_.speedup = *rep_.baseline->deploy_us / *rep_.best->deploy_us;
    return rep_;
  }

 private:
  // What this device already measured for this problem comes first, answered from the store: a
  // run continues from what is known, and an identical rerun measures nothing. Not with
  // --fresh-search, whose strategy proposes from the start (the store answers what it holds).
  // A config timed again after a search (retime_best) comes where its first time did, as the
  // search that measured it saw it, with the newer time.
  Status visit_stored() {
    MeasurementQuery q;
    q.problem = problem_.structural_key();
    q.device_key = t_.device_.key();
    q.backend = t_.backend_.name();
    q.regime = regimes_.ranking();
    q.include_discarded = true;
    ATTUNE_ASSIGN(auto rows, t_.store_.measurements(q));
    std::set<std::int64_t> runs;
    for (const auto& row : rows) {
      if (!row.discarded.empty() && row.discarded != kRetimedReason) continue;
      // Resuming: what the interrupted search measured is replayed as it is proposed again.
      if (t_.resume_root_ && row.run_id >= t_.resume_root_) continue;
      auto cfg = space_.parse(row.config);
      if (!cfg) continue;  // the space changed since: not a candidate any more
      ATTUNE_ASSIGN(Point p, space_.point(*cfg));
      if (done_.count(p) || !pinned(p)) continue;
      if (budget_spent() || t_.time_up() || !stop_.empty()) break;
      ATTUNE_TRY(visit(p, false, true));
      if (reference_lost()) break;
      ++rep_.stored_first;
      runs.insert(row.run_id);
    }
    rep_.stored_runs.assign(runs.begin(), runs.end());
    return Status::success();
  }

  // Configs visited before the strategy proposes, each a candidate here when it is a legal config
  // of this problem's space that the run has not visited; counted in `*visited`. Past its time a
  // problem still measures the first of them if nothing but its baseline is measured: a search
  // that ends on its baseline alone leaves nothing a table can hold, and on a cold compile cache
  // a short share can go on the baseline's build alone (an 8 x 512 layer tuned in 25 s on a fresh
  // H100: the attention's share ended after its split baseline, the flash kernel 5x faster was
  // never timed, and the layer ran at 0.67x max-autotune instead of 1.14x).
  Status visit_first(const std::vector<std::string>& texts, std::int64_t* visited) {
    for (const std::string& text : texts) {
      auto cfg = space_.parse(text);
      if (!cfg.ok()) continue;
      auto p = space_.point(*cfg);
      if (!p.ok() || done_.count(*p) || !pinned(*p)) continue;
      if (budget_spent() || !stop_.empty() || t_.interrupted()) break;
      if (out_of_time() && results_.size() > 1) break;
      ATTUNE_TRY(visit(*p, false));
      if (reference_lost()) break;
      ++*visited;
    }
    return Status::success();
  }

  // A warm start: the winners of this problem's group that the run tuned before it.
  Status visit_warm() { return visit_first(t_.warm_, &rep_.warm_first); }

  // The op's first guesses at this problem (first_guesses), with the run's pins applied. Not
  // under grid, which walks the space in its order (and whose shards are disjoint).
  Status visit_seeds() {
    if (options_.strategy == "grid") return Status::success();
    return visit_first(seed_texts(), &rep_.seeded_first);
  }
  std::vector<std::string> seed_texts() const {
    std::vector<std::string> texts;
    for (const Config& c : first_guesses(problem_, space_, options_.pins))
      texts.push_back(c.text());
    return texts;
  }

  // Hands the builds of the configs visited before the strategy proposes (the warm start, the
  // first guesses) to the backend before the baseline is measured, so they compile side by side
  // while the GPU times the baseline instead of one after another as each is visited.
  void prepare_first() {
    Backend& backend = t_.backend_;
    if (backend.prefetch_depth() <= 0) return;
    std::vector<std::string> texts = t_.warm_;
    if (options_.strategy != "grid")
      for (std::string& text : seed_texts()) texts.push_back(std::move(text));
    for (const std::string& text : texts) {
      auto cfg = space_.parse(text);
      if (!cfg.ok()) continue;
      auto p = space_.point(*cfg);
      if (p.ok() && pinned(*p)) backend.prepare(problem_, *cfg);
    }
  }

  Status search() {
    rep_.stopped_by = "exhausted";
    std::deque<Point> ahead;
    while (true) {
      ATTUNE_TRY(collect_held(false));
      if (!stop_.empty()) {
        rep_.stopped_by = stop_;
        break;
      }
      if (reference_lost()) {
        rep_.stopped_by = "baseline_failed";
        break;
      }
      if (out_of_time()) {
        rep_.stopped_by = "time_limit";
        break;
      }
      if (budget_spent()) {
        rep_.stopped_by = "max_candidates";
        break;
      }
      if (options_.patience > 0 && since_best_ >= options_.patience) {
        rep_.stopped_by = "patience";
        break;
      }
      // Keep up to prefetch_depth proposals queued and handed to the backend, so their builds
      // run ahead of the GPU.
      Backend& backend = t_.backend_;
      while (static_cast<int>(ahead.size()) < std::max(1, backend.prefetch_depth())) {
        auto next = strategy_.propose();
        if (!next) break;
        if (done_.count(*next) || !pinned(*next) || held_.count(*next) ||
            std::find(ahead.begin(), ahead.end(), *next) != ahead.end())
          continue;
        if (backend.prefetch_depth() > 0) backend.prepare(problem_, space_.config(*next));
        ahead.push_back(std::move(*next));
      }
      if (ahead.empty()) break;
      Point point = std::move(ahead.front());
      ahead.pop_front();
      if (done_.count(point)) continue;
      bool held = false;
      ATTUNE_TRY(visit(point, false, false, &held));
      if (held) held_.insert(point);
    }
    // What another tuner is measuring for this search is waited for: its result is this run's too.
    if (stop_.empty() && !t_.time_up() && !reference_lost()) ATTUNE_TRY(collect_held(true));
    return Status::success();
  }

  // Takes into the run the held points (measured by another live tuner of this problem) whose
  // results have landed in the store, or measures those whose claim was given up. block: until
  // none is left (or the run is stopped).
  Status collect_held(bool block) {
    while (!held_.empty()) {
      for (auto it = held_.begin(); it != held_.end();) {
        bool held = false;
        ATTUNE_TRY(visit(*it, false, false, &held));
        it = held ? std::next(it) : held_.erase(it);
      }
      if (!block || held_.empty() || t_.time_up()) break;
      if (t_.interrupted()) return t_.interruption(problem_, anchor_);
      clock_.sleep_for(std::chrono::milliseconds(50));
    }
    return Status::success();
  }

  // Measures (or replays) a point, takes it into the run and hands what it wrote to the guard.
  // known: its result came from the store's list, which a continuing strategy has seen. held:
  // when given, a point another live tuner has claimed is left to it (*held set, nothing taken)
  // instead of waited for.
  Status visit(const Point& point, bool is_baseline, bool known = false, bool* held = nullptr) {
    std::vector<std::int64_t> rows;
    const auto before = t_.budget_now();
    ATTUNE_ASSIGN(CandidateResult c, measure(point, is_baseline, &rows, held));
    if (held && *held) return Status::success();
    costs_.push_back(std::chrono::duration<double>(t_.budget_now() - before).count());
    if (reference_lost()) return Status::success();  // not this candidate's result: not kept
    account(point, c, known);
    // Past the time limit the check is left to the end of the problem, which skips it too.
    if (!rows.empty() && guard_.add(point, std::move(rows)) && !t_.time_up())
      ATTUNE_TRY(check_anchor());
    return Status::success();
  }

  // The ranking regime, then deploy when the policy asks. rows receives the rows written now.
  Result<CandidateResult> measure(const Point& point, bool is_baseline,
                                  std::vector<std::int64_t>* rows, bool* held = nullptr) {
    const Config config = space_.config(point);
    CandidateResult c;
    c.config = config.text();
    std::int64_t id = 0;
    ATTUNE_ASSIGN(Outcome first,
                  t_.evaluate(problem_, config, regimes_.ranking(), &c.replayed, &id, held));
    if (held && *held) return c;
    if (id) rows->push_back(id);
    c.verdict = first.verdict;
    c.message = first.message;
    if (first.verdict != Verdict::kOk || !first.measurement) return c;
    const double ranking_us = first.measurement->median_us;
    (regimes_.ranking() == Regime::kRank ? c.rank_us : c.deploy_us) = ranking_us;
    if (regimes_.ranking() == Regime::kDeploy) {
      c.deploy_noise = first.measurement->noise;
      c.deploy_check = first.check;
      c.deploy_parts_us = first.measurement->parts_us;
      c.deploy_parts_floor_us = first.measurement->parts_floor_us;
    }
    if (!regimes_.deploys(is_baseline, ranking_us, best_)) return c;
    bool replayed = false;
    const auto before = t_.budget_now();
    ATTUNE_ASSIGN(Outcome dep, t_.evaluate(problem_, config, Regime::kDeploy, &replayed, &id));
    deploy_costs_.push_back(std::chrono::duration<double>(t_.budget_now() - before).count());
    if (id) rows->push_back(id);
    c.replayed = c.replayed && replayed;
    // Passing warm but failing in the production path is a failure.
    take_deploy(c, dep, "deploy regime: ");
    return c;
  }

  // A deploy-regime outcome into the candidate's result: its time, noise, check and parts, or,
  // failing, the candidate fails with the outcome's message after `why`.
  static void take_deploy(CandidateResult& c, const Outcome& o, const std::string& why) {
    if (o.verdict == Verdict::kOk && o.measurement) {
      c.deploy_us = o.measurement->median_us;
      c.deploy_noise = o.measurement->noise;
      c.deploy_check = o.check;
      c.deploy_parts_us = o.measurement->parts_us;
      c.deploy_parts_floor_us = o.measurement->parts_floor_us;
      return;
    }
    c.verdict = o.verdict;
    c.message = why + o.message;
    c.deploy_us.reset();
    c.rank_us.reset();
  }

  // Takes a result into the run: the strategy learns it, patience counts it. A point measured
  // again after drift replaces its entry.
  void account(const Point& point, const CandidateResult& c, bool known) {
    auto [it, fresh] = result_of_.emplace(point, results_.size());
    if (fresh) {
      results_.push_back(c);
      if (c.verdict != Verdict::kUnsupported) ++counted_;
    } else {
      results_[it->second] = c;
      dropped_.erase(it->second);
    }
    const std::optional<double> t = regimes_.ranking_us(c.rank_us, c.deploy_us);
    bool new_best = false;
    if (c.verdict == Verdict::kOk && t) {
      if (!best_ || *t < *best_) {
        best_ = t;
        since_best_ = 0;
        new_best = true;
      } else if (fresh) {
        ++since_best_;
      }
    }
    if (!(known && continued_)) strategy_.observe(point, c.verdict, t);
    done_.insert(point);
    if (observer_) {
      const auto count = static_cast<std::int64_t>(results_.size());
      observer_(TuneEvent{problem_, count, rep_.space_size, c, new_best,
                          static_cast<std::int64_t>(it->second) + 1,
                          c.verdict == Verdict::kOk ? t : std::nullopt, best_});
    }
  }

  // TuneOptions::retime_best: the configs with the best deploy times are timed again, their first
  // deploy rows discarded as re-timed, until the best retime_best are all re-timed (a config whose
  // new time drops out of them lets the next one in). Configs re-timed by an earlier run (a
  // discarded row of that reason) are not timed again, so an identical re-run measures nothing.
  Status retime_best() {
    if (options_.retime_best <= 0) return Status::success();
    const std::string device = t_.device_.key(), key = problem_.structural_key(),
                      backend = t_.backend_.name();
    MeasurementQuery q;
    q.problem = key;
    q.device_key = device;
    q.backend = backend;
    q.regime = Regime::kDeploy;
    q.include_discarded = true;
    ATTUNE_ASSIGN(auto rows, t_.store_.measurements(q));
    std::set<std::string> retimed;  // config hashes
    for (const auto& r : rows)
      if (r.discarded == kRetimedReason) retimed.insert(r.config_hash);
    std::map<std::string, Point> point_of;
    for (const auto& [point, i] : result_of_) point_of.emplace(results_[i].config, point);
    // Each config is timed again at most once a run, so this ends.
    for (bool again = true; again;) {
      again = false;
      std::vector<std::size_t> order;
      for (std::size_t i = 0; i < results_.size(); ++i)
        if (!dropped_.count(i) && results_[i].verdict == Verdict::kOk && results_[i].deploy_us)
          order.push_back(i);
      std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        return ranks_before(results_[a], results_[b]);
      });
      if (order.size() > static_cast<std::size_t>(options_.retime_best))
        order.resize(static_cast<std::size_t>(options_.retime_best));
      for (std::size_t i : order) {
        CandidateResult& c = results_[i];
        const Config config = space_.config(point_of.at(c.config));
        if (!retimed.insert(config.hash_hex()).second) continue;
        if (t_.time_up() || t_.interrupted()) return Status::success();
        ATTUNE_ASSIGN(auto first,
                      t_.store_.find(device, key, backend, Regime::kDeploy, config.hash_hex()));
        if (!first) continue;  // nothing stored to replace (another run discarded it)
        ATTUNE_TRY(t_.store_.discard({first->id}, std::string(kRetimedReason)));
        bool replayed = false;
        std::int64_t id = 0;
        ATTUNE_ASSIGN(Outcome o, t_.evaluate(problem_, config, Regime::kDeploy, &replayed, &id));
        if (reference_lost()) return Status::success();
        const double first_us = *c.deploy_us;
        // Passing once and failing when timed again is a failure: slow-but-correct wins.
        take_deploy(c, o, "deploy regime, timed again: ");
        rep_.retimed.push_back({c.config, first_us, c.deploy_us.value_or(0)});
        spdlog::info("{}: timed again {}: {:.3f} us, first {:.3f}", problem_.name(), c.config,
                     c.deploy_us.value_or(0), first_us);
        again = true;
      }
    }
    return Status::success();
  }

  // The anchor: the baseline config, run fresh in the ranking regime.
  std::optional<double> read_anchor() {
    if (t_.interrupted()) return std::nullopt;
    Outcome o = t_.runner_.run(problem_, anchor_, regimes_.ranking());
    if (o.verdict != Verdict::kOk || !o.measurement) return std::nullopt;
    return o.measurement->median_us;
  }

  // On drift: what was measured since the last clean anchor is discarded (before the back-off,
  // so a run stopped while waiting leaves no drifted row to answer from), and measured again.
  // Past the guard's bound on back-off the problem is unstable and its search ends; past the
  // time limit it ends too. Either way the discarded candidates are dropped from the report.
  Status check_anchor() {
    measure::AnchorCheck check = guard_.check();
    if (t_.interrupted()) return t_.interruption(problem_, anchor_);
    if (check.result == measure::AnchorCheck::Result::kUnreadable)
      spdlog::warn("the anchor config failed to run; drift is not checked for these candidates");
    if (check.result == measure::AnchorCheck::Result::kClean ||
        check.result == measure::AnchorCheck::Result::kUnreadable) {
      note_levels();
      return Status::success();
    }
    ++rep_.drift_events;
    const std::string why =
        fmt::format("the anchor {} moved {:+.1f}% ({:.2f} -> {:.2f} us) while this was measured",
                    anchor_.text(), 100 * check.drift(), check.reference_us, check.reading_us);
    spdlog::warn("{}; discarding {} candidates{}", why, check.redo.size(),
                 check.result == measure::AnchorCheck::Result::kDrifted ? " and backing off" : "");
    std::vector<std::int64_t> ids;
    for (const auto& c : check.redo) ids.insert(ids.end(), c.rows.begin(), c.rows.end());
    ATTUNE_TRY(t_.store_.discard(ids, why));
    rep_.discarded += static_cast<std::int64_t>(ids.size());
    if (check.result == measure::AnchorCheck::Result::kUnstable)
      return give_up(check.redo, fmt::format("the anchor drifted {} times, past the bound of {} "
                                             "back-off rounds per problem",
                                             rep_.drift_events, options_.drift.max_rounds));
    measure::Settling settled = guard_.settle();
    if (t_.interrupted()) return t_.interruption(problem_, anchor_);
    if (settled.unstable)
      return give_up(
          check.redo,
          fmt::format("the anchor did not settle within the bound of {:.0f} s and {} "
                      "rounds of back-off per problem ({:.1f} s waited, {} drift events)",
                      options_.drift.max_wait_s, options_.drift.max_rounds, guard_.waited_s(),
                      rep_.drift_events));
    if (t_.time_up()) {
      // Out of time: only the baseline, which every speedup is against, is measured again.
      stop_ = "time_limit";
      auto rest = std::stable_partition(check.redo.begin(), check.redo.end(), [&](const auto& c) {
        return c.point == space_.baseline();
      });
      drop({std::make_move_iterator(rest), std::make_move_iterator(check.redo.end())});
      check.redo.erase(rest, check.redo.end());
    }
    if (settled.new_reference_us)
      spdlog::warn(
          "the anchor did not come back within {:.0f}%; measuring against its new level {:.2f} us",
          100 * options_.drift.recover_bound, *settled.new_reference_us);
    note_levels();
    for (auto& c : check.redo) {
      std::vector<std::int64_t> rows;
      ATTUNE_ASSIGN(CandidateResult r, measure(c.point, c.point == space_.baseline(), &rows));
      account(c.point, r, false);
      // Checked at the next anchor, with the candidates after them.
      (void)guard_.add(std::move(c.point), std::move(rows));
    }
    return Status::success();
  }

  // The device would not settle: the problem is unstable, its drifted candidates dropped.
  Status give_up(const std::vector<measure::Pending>& redo, const std::string& why) {
    spdlog::warn("{}: unstable: {}; its search ends here", problem_.name(), why);
    rep_.unstable = why;
    stop_ = "unstable";
    drop(redo);
    return Status::success();
  }

  void drop(const std::vector<measure::Pending>& redo) {
    for (const auto& c : redo)
      if (auto it = result_of_.find(c.point); it != result_of_.end()) dropped_.insert(it->second);
  }

  // Says once that the anchor has two levels.
  void note_levels() {
    if (!guard_.levels() || levels_noted_) return;
    levels_noted_ = true;
    const auto& l = *guard_.levels();
    spdlog::warn(
        "{}: the anchor {} has two levels, {:.2f} us ({} readings) and {:.2f} us ({}); drift is "
        "checked against both",
        problem_.name(), anchor_.text(), l.low_us, l.low_readings, l.high_us, l.high_readings);
  }

  bool pinned(const Point& p) const {
    for (const auto& [name, value] : options_.pins) {
      const std::size_t k = *space_.index_of(name);
      if (space_.knobs()[k].options[p[k]].text() != value) return false;
    }
    return true;
  }

  // The tie rule: equal times go to fewer knobs changed from the baseline, then the config text.
  bool ranks_before(const CandidateResult& a, const CandidateResult& b) const {
    if (*a.deploy_us != *b.deploy_us) return *a.deploy_us < *b.deploy_us;
    const int ca = changed_knobs(a.config), cb = changed_knobs(b.config);
    if (ca != cb) return ca < cb;
    return a.config < b.config;
  }

  int changed_knobs(const std::string& config) const {
    const Point base = space_.baseline();
    auto cfg = space_.parse(config);
    if (!cfg) return static_cast<int>(base.size());
    auto p = space_.point(*cfg);
    if (!p) return static_cast<int>(base.size());
    int n = 0;
    for (std::size_t i = 0; i < p->size(); ++i) n += (*p)[i] != base[i];
    return n;
  }

  // The backend's reference (its baseline's output) failed to come back in this run: nothing of
  // the problem can be checked any more (Backend::reference_lost).
  bool reference_lost() const {
    return t_.backend_.baseline_is_reference() && t_.backend_.reference_lost(problem_);
  }

  bool budget_spent() const {
    return options_.max_candidates && counted_ >= *options_.max_candidates;
  }

  // Past the problem's share of --time-limit, or so near it that the next candidate is not
  // expected to finish within it: the median of what this problem's candidates cost so far (a
  // replay counting what it cost when measured, so an identical re-run stops where the first run
  // did). Without it each search may run one candidate past its share; over a layer's 14 problems
  // an H100 8 x 512 tune's searches went 3.1 s past their 23.75 s
  // (bench/results/layer-h100-2026-12-06b.md). The search also leaves time for retime_best()'s
  // deploy timings, at the median a deploy timing has cost so far.
  bool out_of_time() const {
    if (t_.time_up()) return true;
    if (!t_.deadline_ || costs_.empty()) return false;
    auto median = [](std::vector<double> c) {
      if (c.empty()) return 0.0;
      std::nth_element(c.begin(), c.begin() + static_cast<std::ptrdiff_t>(c.size() / 2), c.end());
      return c[c.size() / 2];
    };
    const double reserve = std::max(0, options_.retime_best) * median(deploy_costs_);
    const auto next = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(median(costs_) + reserve));
    return t_.budget_now() + next > *t_.deadline_;
  }

  Tuner& t_;
  const Problem& problem_;
  const Space& space_;
  const TuneOptions& options_;
  const TuneObserver& observer_;
  Strategy& strategy_;
  const bool continued_;  // the strategy continues an earlier run's state
  const RegimePolicy regimes_;
  const Config anchor_;
  StoppableClock clock_;  // what the guard's back-off waits on
  measure::DriftGuard guard_;
  ProblemReport rep_;
  std::optional<double> best_;  // best ranking time so far
  std::set<Point> done_;
  int since_best_ = 0;
  // Every candidate of this run in visit order; the report's counts are taken from here.
  std::vector<CandidateResult> results_;
  std::map<Point, std::size_t> result_of_;
  std::set<std::size_t> dropped_;     // results_ discarded for drift and not measured again
  std::set<Point> held_;              // proposals another live tuner of the problem is measuring
  std::vector<double> costs_;         // each visit's cost in the time limit's seconds
  std::vector<double> deploy_costs_;  // each deploy timing's, within those
  std::string stop_;                  // set to end the search: unstable or time_limit
  bool levels_noted_ = false;
  // What --max-candidates counts: a refusal before any build (a variant cuBLASLt does not
  // support) costs no build and no GPU time, and on the H200 half of a gemm run's proposals were
  // such refusals, leaving half the budget for candidates that could win.
  std::int64_t counted_ = 0;
};

Result<ProblemReport> Tuner::tune_one(const Problem& problem, const TuneOptions& options,
                                      const TuneObserver& observer) {
  ATTUNE_ASSIGN(Space space, backend_.space(problem));
  ATTUNE_TRY(check_pins(space, options.pins));
  ATTUNE_TRY(store_.put_problem(problem));
  ATTUNE_ASSIGN(RegimePolicy regimes, RegimePolicy::make(backend_.regimes(), options.deploy_band));
  std::optional<prior::Prior> prior;  // declared first: the strategy may hold on to it
  ATTUNE_ASSIGN(std::unique_ptr<Strategy> strategy,
                make_strategy_for(problem, space, options, prior));
  bool continued = false;
  if (!options.fresh_search) {
    ATTUNE_ASSIGN(continued, load_state(*strategy, problem));
  }
  ProblemSearch search(*this, problem, space, options, observer, *strategy, continued, regimes);
  if (Status st = search.run(); !st.ok()) {
    if (!interrupted()) return st.error();
    interruption_ = st.error().message();
    // Not saved: a rerun replays this search from the store rather than continuing a tree that
    // stopped in the middle of a step.
    search.interrupted();
    return search.report();
  }
  save_state(*strategy, problem);
  return search.report();
}

}  // namespace attune
