// bench/search_replay: how many evaluations each search strategy needs on recorded, brute-forced
// spaces (Kernel Tuner caches) to come within 1% and 2% of the space's optimum, and what fraction
// of the optimum it holds after 50, 100, 200 and 500 evaluations, over many seeds. CPU only.
// Single-threaded; prints a Markdown table and, with --out, writes it with the exact command.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <sys/utsname.h>
#include <unistd.h>

#include "backends/replay/kernel_tuner_cache.h"
#include "core/op.h"
#include "prior/prior.h"
#include "search/harness.h"
#include "search/mcts.h"
#include "search/portfolio.h"
#include "search/strategy.h"
#include "search/walk.h"

namespace fs = std::filesystem;
using namespace attune;

namespace {

struct Args {
  std::string datasets = std::string(ATTUNE_SOURCE_DIR) + "/../shared/datasets/kernel-tuner-caches";
  std::vector<std::string> strategies = {"random", "annealing", "genetic", "mcts", "mcts+prior"};
  int seeds = 20;
  int first_seed = 0;
  std::size_t budget = 1000;
  std::string out;
  std::string traces;  // CSV of every evaluation of the main table's and --prior-from-others' runs
  std::string only;    // substring filter on file names
  // Substring filter on the spaces searched; the others that --only loads still train the priors
  // of --prior-from-others, so a tuning space can be searched with its prior while held-out
  // spaces of the same kernel are not searched at all.
  std::string search_only;
  bool transfer = true;
  // An op's first guesses after the baseline, as `attune tune` evaluates them (first_points).
  bool first_guesses = true;
  bool prior_from_others = false;  // leave-one-out priors per kernel (run_prior_from_others)
  bool verbose = false;
  search::MctsOptions mcts;
  std::string kernel_tuner_csv;    // results of bench/kernel_tuner_side_by_side.py to merge in
  bool with_kernel_tuner = false;  // run Kernel Tuner's strategies (venv + PyPI) in this run
  std::map<std::string, std::string> settings;  // --set STRATEGY.OPTION=VALUE
};

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, sep);)
    if (!item.empty()) out.push_back(item);
  return out;
}

struct Row {
  std::string space, strategy;
  std::vector<double> to1, to2;                 // evaluations per seed; +inf: not reached
  std::map<int, std::vector<double>> fraction;  // budget -> optimum/best per seed
  std::size_t configs = 0;
};

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}
double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? NAN : s / static_cast<double>(v.size());
}
std::string evals_text(double m, std::size_t budget) {
  if (!std::isfinite(m)) return "not reached (>" + std::to_string(budget) + ")";
  char b[32];
  std::snprintf(b, sizeof b, "%.0f", m);
  return b;
}

const int kCheckpoints[] = {50, 100, 200, 500};

void add_trace(Row& row, const search::Trace& t, double optimum) {
  auto e1 = search::evaluations_to_within(t, optimum, 0.01);
  auto e2 = search::evaluations_to_within(t, optimum, 0.02);
  row.to1.push_back(e1 ? static_cast<double>(*e1) : INFINITY);
  row.to2.push_back(e2 ? static_cast<double>(*e2) : INFINITY);
  for (int c : kCheckpoints) {
    std::size_t i = std::min<std::size_t>(static_cast<std::size_t>(c), t.best_us.size());
    double best = i ? t.best_us[i - 1] : INFINITY;
    row.fraction[c].push_back(std::isfinite(best) ? optimum / best : 0.0);
  }
}

// One run's evaluations as rows of the --traces CSV.
void write_trace(std::ostream& out, const std::string& space_name, const std::string& strategy,
                 int seed, const replay::RecordedSpace& space, const search::Trace& t) {
  for (std::size_t i = 0; i < t.proposed.size(); ++i) {
    const replay::RecordedResult* r = space.find(t.proposed[i]);
    out << space_name << "," << strategy << "," << seed << "," << i + 1 << ",\""
        << space.space.config(t.proposed[i]).text() << "\","
        << (r ? std::string(to_string(r->verdict)) : std::string("unsupported")) << ","
        << (r && r->verdict == Verdict::kOk ? r->time_us : 0.0) << "," << t.best_us[i] << "\n";
  }
}

std::string table(const std::vector<Row>& rows, std::size_t budget) {
  std::ostringstream o;
  o << "| space | configs | strategy | median evals to 1% | median evals to 2% | reached 2% | "
       "optimum frac @50 | @100 | @200 | @500 |\n";
  o << "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
  for (const auto& r : rows) {
    std::size_t reached = 0;
    for (double x : r.to2) reached += std::isfinite(x);
    char frac[160];
    std::snprintf(frac, sizeof frac, "%.3f | %.3f | %.3f | %.3f", mean(r.fraction.at(50)),
                  mean(r.fraction.at(100)), mean(r.fraction.at(200)), mean(r.fraction.at(500)));
    o << "| " << r.space << " | " << r.configs << " | " << r.strategy << " | "
      << evals_text(median(r.to1), budget) << " | " << evals_text(median(r.to2), budget) << " | "
      << reached << "/" << r.to2.size() << " | " << frac << " |\n";
  }
  return o.str();
}

search::Evaluate evaluator(const replay::RecordedSpace& rs) {
  return [&rs](const Point& p) {
    const replay::RecordedResult* r = rs.find(p);
    if (!r) return search::Evaluation{Verdict::kUnsupported, std::nullopt};
    if (r->verdict != Verdict::kOk) return search::Evaluation{r->verdict, std::nullopt};
    return search::Evaluation{Verdict::kOk, r->time_us};
  };
}

// mcts steered by a prior that learns from this search's own results (refit on the prior's
// doubling schedule), optionally starting from a prior trained elsewhere: what the orchestrator
// does with the store's prior.
class SteeredMcts final : public Strategy {
 public:
  SteeredMcts(const Space& space, std::uint64_t seed, search::MctsOptions o, prior::Prior p,
              prior::Context ctx, bool online)
      : space_(space),
        prior_(std::make_unique<prior::Prior>(std::move(p))),
        ctx_(std::move(ctx)),
        online_(online) {
    o.prior = prior_->scorer(space_, ctx_);
    const prior::Prior* pr = prior_.get();
    o.prior_generation = [pr] { return pr->generation(); };
    mcts_ = std::make_unique<search::Mcts>(space_, StrategyOptions{seed}, std::move(o));
  }
  std::string name() const override { return "mcts+prior"; }
  std::optional<Point> propose() override { return mcts_->propose(); }
  void observe(const Point& p, Verdict v, std::optional<double> t) override {
    mcts_->observe(p, v, t);
    if (online_) prior_->add(prior::make_row(space_, p, ctx_, v, t));
  }

 private:
  Space space_;
  std::unique_ptr<prior::Prior> prior_;
  prior::Context ctx_;
  bool online_;
  std::unique_ptr<search::Mcts> mcts_;
};

prior::Context context_of(const replay::RecordedSpace& rs) {
  return prior::make_context(rs.problem(), rs.device());
}

// What `attune tune` evaluates right after the baseline of a space attune recorded from one of
// its ops: the op's first guesses at that problem (first_guesses), under every strategy but grid.
// None for a space recorded elsewhere, or with --no-first-guesses.
std::vector<Point> first_points(const replay::RecordedSpace& rs, const std::string& strategy,
                                const Args& a) {
  std::vector<Point> out;
  if (!a.first_guesses || strategy == "grid" || rs.attune_problem.empty()) return out;
  auto spec = Problem::parse(rs.attune_problem);
  const OpSignature* op = spec.ok() ? find_op(spec->op()) : nullptr;
  if (!op) return out;
  auto problem = op->resolve(*spec);
  if (!problem.ok()) return out;
  for (const Config& c : first_guesses(*problem, rs.space))
    if (auto p = rs.space.point(c); p.ok()) out.push_back(std::move(p).value());
  return out;
}

std::unique_ptr<Strategy> make(const std::string& name, const Space& space, std::uint64_t seed,
                               const Args& a, const replay::RecordedSpace* rs = nullptr) {
  if (name == "mcts") return std::make_unique<search::Mcts>(space, StrategyOptions{seed}, a.mcts);
  if (name == "mcts+prior" && rs) {
    prior::PriorOptions po;
    po.seed = seed;
    return std::make_unique<SteeredMcts>(space, seed, a.mcts, prior::Prior(po), context_of(*rs),
                                         true);
  }
  StrategyOptions so{seed};
  for (const auto& [key, value] : a.settings)
    if (key.starts_with(name + ".")) so.settings[key.substr(name.size() + 1)] = value;
  if (name == "portfolio") {  // with the --mcts-* options for its tree
    search::PortfolioOptions po;
    if (auto st = search::portfolio_option_list().apply(name, so.settings, po); !st.ok()) {
      std::cerr << "search_replay: " << st.error().message() << "\n";
      std::exit(2);
    }
    return search::make_portfolio(space, so, po, a.mcts);
  }
  auto s = make_strategy(name, space, so);
  if (!s) {
    std::cerr << "search_replay: " << s.error().message() << "\n";
    std::exit(2);
  }
  return std::move(s).value();
}

std::string stem(const fs::path& p) {
  std::string s = p.filename().string();
  for (const char* ext : {".json.gz", ".json"})
    if (s.size() > std::strlen(ext) && s.ends_with(ext))
      return s.substr(0, s.size() - std::strlen(ext));
  return s;
}

// Warm start across devices: a prior trained on one device's recorded space of a kernel steers
// mcts on the same kernel's space from another device, against a cold mcts.
Row run_variant(const std::string& label, const std::string& variant,
                const replay::RecordedSpace& dst, const prior::Checkpoint* source, bool online,
                const Args& a) {
  Row row{label, variant, {}, {}, {}, dst.points.size()};
  double optimum = *dst.optimum_us();
  const std::vector<Point> first = first_points(dst, "mcts", a);
  for (int seed = a.first_seed; seed < a.first_seed + a.seeds; ++seed) {
    std::unique_ptr<Strategy> s;
    prior::PriorOptions po;
    po.seed = static_cast<std::uint64_t>(seed);
    if (!online) po.first_refit = 0;
    if (source) {
      auto p = prior::Prior::load(*source, po);
      if (!p) {
        std::cerr << "search_replay: " << p.error().message() << "\n";
        std::exit(1);
      }
      s = std::make_unique<SteeredMcts>(dst.space, static_cast<std::uint64_t>(seed), a.mcts,
                                        std::move(p).value(), context_of(dst), online);
    } else {
      s = make("mcts", dst.space, static_cast<std::uint64_t>(seed), a);
    }
    auto run_start = std::chrono::steady_clock::now();
    auto t = search::run_strategy(*s, dst.space, evaluator(dst), a.budget, first);
    if (!t) {
      std::cerr << "search_replay: " << t.error().message() << "\n";
      std::exit(1);
    }
    if (a.verbose)
      std::cerr
          << variant << " seed " << seed << ": "
          << std::chrono::duration<double>(std::chrono::steady_clock::now() - run_start).count()
          << " s\n";
    add_trace(row, *t, optimum);
  }
  std::cerr << label << " " << variant << ": median to 2% " << evals_text(median(row.to2), a.budget)
            << "\n";
  return row;
}

// Every recorded config of `space` as prior rows (what importing or brute-forcing it leaves in the
// store), through the prior's bounded reservoir.
void add_space(prior::Prior& p, const replay::RecordedSpace& space) {
  const prior::Context ctx = context_of(space);
  for (std::size_t i = 0; i < space.points.size(); ++i) {
    const auto& r = space.results[i];
    p.add(prior::make_row(
        space.space, space.points[i], ctx, r.verdict,
        r.verdict == Verdict::kOk ? std::optional<double>(r.time_us) : std::nullopt));
  }
}

// Does the prior rank the space's configs? Spearman of its predictions against the recorded times
// of every passing config (0 when it predicts nothing).
double rank_agreement(const prior::Prior& p, const replay::RecordedSpace& space) {
  std::vector<Point> pts;
  std::vector<double> actual;
  for (std::size_t i = 0; i < space.points.size(); ++i)
    if (space.results[i].verdict == Verdict::kOk) {
      pts.push_back(space.points[i]);
      actual.push_back(std::log(space.results[i].time_us));
    }
  auto pred = p.predict(space.space, pts, context_of(space));
  return pred ? prior::spearman(*pred, actual) : 0.0;
}

std::string run_transfer(const std::map<std::string, replay::RecordedSpace>& spaces,
                         const Args& a) {
  std::vector<Row> rows;
  std::ostringstream notes;
  for (const auto& [src_name, src] : spaces) {
    // The source prior: every recorded config of the source space.
    prior::PriorOptions po;
    po.first_refit = 0;
    prior::Prior p(po);
    add_space(p, src);
    auto fit_start = std::chrono::steady_clock::now();
    auto st = p.fit();
    std::cerr << "prior fit on " << src_name << ": "
              << std::chrono::duration<double>(std::chrono::steady_clock::now() - fit_start).count()
              << " s\n";
    auto ck = p.save();
    if (!st.ok() || !ck) {
      std::cerr << "search_replay: training the prior on " << src_name << " failed\n";
      std::exit(1);
    }
    for (const auto& [dst_name, dst] : spaces) {
      if (dst_name == src_name || dst.kernel_name != src.kernel_name) continue;
      const double rho = rank_agreement(p, dst);
      char line[256];
      std::snprintf(line, sizeof line,
                    "- prior from %s (%zu rows, calibration %.3f%s): rank correlation with %s's "
                    "times %.3f\n",
                    src_name.c_str(), p.rows(), p.calibration(),
                    p.quarantined() ? ", quarantined" : "", dst_name.c_str(), rho);
      notes << line;
      std::string label = dst_name + " <- " + src_name;
      rows.push_back(run_variant(label, "mcts (cold)", dst, nullptr, false, a));
      rows.push_back(run_variant(label, "mcts + source prior", dst, &*ck, false, a));
      rows.push_back(run_variant(label, "mcts + source prior, online refits", dst, &*ck, true, a));
    }
  }
  if (rows.empty()) return "";
  return "\n## Warm start across devices\n\n" + notes.str() + "\n" + table(rows, a.budget);
}

// Whether the space of this name is searched (Args::search_only).
bool searched(const Args& a, const std::string& name) {
  return a.search_only.empty() || name.find(a.search_only) != std::string::npos;
}

// What a user's store gives a search after tuning other shapes of the same op on this device:
// for each space, a prior fitted on every config of every OTHER recorded space with the same
// kernel_name (leave one out), handed to each strategy of --strategies that takes a prior through
// the StrategyContext the tuner fills from the store's prior (scores of forks and predictions of
// full configs). No refits during the search, as in the tuner.
std::string run_prior_from_others(const std::map<std::string, replay::RecordedSpace>& spaces,
                                  const std::vector<Row>& cold, const Args& a,
                                  std::ofstream& traces) {
  std::vector<Row> rows;
  std::ostringstream notes, summary;
  summary << "| space | configs | strategy | other spaces | prior's rank correlation with the "
             "space | median evals to 2%, cold | with the prior | reached 2% with the prior |\n"
          << "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |\n";
  for (const auto& [dst_name, dst] : spaces) {
    if (!searched(a, dst_name)) continue;
    prior::PriorOptions po;
    po.first_refit = 0;
    prior::Prior p(po);
    std::size_t sources = 0;
    for (const auto& [src_name, src] : spaces) {
      if (src_name == dst_name || src.kernel_name != dst.kernel_name) continue;
      ++sources;
      add_space(p, src);
    }
    if (sources == 0) continue;
    if (auto st = p.fit(); !st.ok()) {
      std::cerr << "search_replay: training the prior for " << dst_name
                << " failed: " << st.error().message() << "\n";
      std::exit(1);
    }
    const double rho = rank_agreement(p, dst);
    const prior::Context dst_ctx = context_of(dst);
    char line[320];
    std::snprintf(line, sizeof line,
                  "- %s: prior from %zu other spaces of %s (%zu rows, calibration %.3f%s); rank "
                  "correlation of its predictions with this space's times %.3f\n",
                  dst_name.c_str(), sources, dst.kernel_name.c_str(), p.rows(), p.calibration(),
                  p.quarantined() ? ", quarantined: not used" : "", rho);
    notes << line;
    StrategyContext context;
    if (p.usable()) {
      const prior::Prior* pr = &p;
      context.prior = p.scorer(dst.space, dst_ctx);
      context.prior_generation = [pr] { return pr->generation(); };
      context.predict = p.predictor(dst.space, dst_ctx);
    }
    const double optimum = *dst.optimum_us();
    for (const auto& name : a.strategies) {
      auto info = strategy_info(name);
      if (!info || !info->takes_prior) continue;
      Row row{dst_name, name + " + prior from others", {}, {}, {}, dst.points.size()};
      const std::vector<Point> first = first_points(dst, name, a);
      for (int seed = a.first_seed; seed < a.first_seed + a.seeds; ++seed) {
        StrategyOptions so{static_cast<std::uint64_t>(seed)};
        for (const auto& [key, value] : a.settings)
          if (key.starts_with(name + ".")) so.settings[key.substr(name.size() + 1)] = value;
        auto s = make_strategy(name, dst.space, so, context);
        if (!s) {
          std::cerr << "search_replay: " << s.error().message() << "\n";
          std::exit(2);
        }
        auto t = search::run_strategy(**s, dst.space, evaluator(dst), a.budget, first);
        if (!t) {
          std::cerr << "search_replay: " << dst_name << ": " << t.error().message() << "\n";
          std::exit(1);
        }
        add_trace(row, *t, optimum);
        if (traces.is_open()) write_trace(traces, dst_name, row.strategy, seed, dst, *t);
      }
      std::cerr << dst_name << " " << row.strategy << ": median to 2% "
                << evals_text(median(row.to2), a.budget) << "\n";
      std::string cold_text = "(not run)";
      for (const auto& c : cold)
        if (c.space == dst_name && c.strategy == name)
          cold_text = evals_text(median(c.to2), a.budget);
      std::size_t reached = 0;
      for (double x : row.to2) reached += std::isfinite(x);
      char rho_text[32];
      std::snprintf(rho_text, sizeof rho_text, "%.3f", rho);
      summary << "| " << dst_name << " | " << dst.points.size() << " | " << name << " | " << sources
              << " | " << rho_text << (p.usable() ? "" : " (quarantined)") << " | " << cold_text
              << " | " << evals_text(median(row.to2), a.budget) << " | " << reached << "/"
              << row.to2.size() << " |\n";
      rows.push_back(std::move(row));
    }
  }
  if (rows.empty()) return "";
  return "\n## A prior from the other spaces of the same kernel (leave one out)\n\n" + notes.str() +
         "\n" + summary.str() + "\n" + table(rows, a.budget);
}

// The search's own cost: wall time of propose + observe per evaluation, on a CLBlast-style GEMM
// space (67,536 legal configs, more than the 18k of issue 15's target) whose times are a
// deterministic hash, so only the strategy's bookkeeping is timed. Mean, 99th percentile and the
// slowest over 1000 evaluations.
std::string overhead_table(const Args& a) {
  std::vector<Knob> knobs;
  auto knob = [&](const char* name, std::vector<std::int64_t> opts) {
    std::vector<Value> v(opts.begin(), opts.end());
    knobs.push_back({name, std::move(v)});
  };
  knob("MWG", {16, 32, 64, 128});
  knob("NWG", {16, 32, 64, 128});
  knob("KWG", {16, 32});
  knob("MDIMC", {8, 16, 32});
  knob("NDIMC", {8, 16, 32});
  knob("MDIMA", {8, 16, 32});
  knob("NDIMB", {8, 16, 32});
  knob("VWM", {1, 2, 4, 8});
  knob("VWN", {1, 2, 4, 8});
  knob("STRM", {0, 1});
  knob("SA", {0, 1});
  knob("SB", {0, 1});
  std::vector<Constraint> cs = {
      {"MWG % (MDIMC * VWM) == 0",
       {"MWG", "MDIMC", "VWM"},
       [](const Assignment& x) { return x.i("MWG") % (x.i("MDIMC") * x.i("VWM")) == 0; }},
      {"NWG % (NDIMC * VWN) == 0",
       {"NWG", "NDIMC", "VWN"},
       [](const Assignment& x) { return x.i("NWG") % (x.i("NDIMC") * x.i("VWN")) == 0; }},
      {"MWG % (MDIMA * VWM) == 0",
       {"MWG", "MDIMA", "VWM"},
       [](const Assignment& x) { return x.i("MWG") % (x.i("MDIMA") * x.i("VWM")) == 0; }},
      {"NWG % (NDIMB * VWN) == 0",
       {"NWG", "NDIMB", "VWN"},
       [](const Assignment& x) { return x.i("NWG") % (x.i("NDIMB") * x.i("VWN")) == 0; }},
      {"KWG % ((MDIMC * NDIMC) / MDIMA) == 0",
       {"KWG", "MDIMC", "NDIMC", "MDIMA"},
       [](const Assignment& x) {
         return x.i("KWG") % ((x.i("MDIMC") * x.i("NDIMC")) / x.i("MDIMA")) == 0;
       }},
  };
  auto space = Space::make(std::move(knobs), std::move(cs));
  if (!space) {
    std::cerr << "search_replay: " << space.error().message() << "\n";
    std::exit(1);
  }
  std::ostringstream o;
  o << "\n## Search overhead\n\nWall time of the strategy's propose + observe per evaluation, "
       "on a CLBlast-style GEMM space of "
    << space->count()
    << " legal configs with hashed times (only the search is timed), 1000 evaluations, seeds "
    << a.first_seed << ".." << a.first_seed + 2 << ":\n\n"
    << "| strategy | mean ms/evaluation | p99 ms | slowest ms |\n| --- | ---: | ---: | ---: |\n";
  for (const auto& name : a.strategies) {
    if (name == "mcts+prior") continue;  // its cost is the prior's refits, timed elsewhere
    std::vector<double> ms;
    for (int seed = a.first_seed; seed < a.first_seed + 3; ++seed) {
      auto s = make(name, *space, static_cast<std::uint64_t>(seed), a);
      for (int i = 0; i < 1000; ++i) {
        auto t0 = std::chrono::steady_clock::now();
        auto p = s->propose();
        if (!p) break;
        std::uint64_t h = search::PointHasher{}(*p) * 0x9e3779b97f4a7c15ULL;
        double t = 10.0 + static_cast<double>(h >> 40) / static_cast<double>(1ULL << 24);
        s->observe(*p, Verdict::kOk, t);
        ms.push_back(
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                .count());
      }
    }
    std::vector<double> sorted = ms;
    std::sort(sorted.begin(), sorted.end());
    char line[200];
    std::snprintf(line, sizeof line, "| %s | %.3f | %.3f | %.3f |\n", name.c_str(), mean(ms),
                  sorted.empty() ? 0.0 : sorted[sorted.size() * 99 / 100],
                  sorted.empty() ? 0.0 : sorted.back());
    o << line;
  }
  return o.str();
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  std::string command;
  for (int i = 0; i < argc; ++i) command += (i ? " " : "") + std::string(argv[i]);
  for (int i = 1; i < argc; ++i) {
    std::string f = argv[i];
    auto val = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << "search_replay: " << f << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (f == "--datasets")
      a.datasets = val();
    else if (f == "--strategies")
      a.strategies = split(val(), ',');
    else if (f == "--seeds")
      a.seeds = std::stoi(val());
    else if (f == "--first-seed")
      a.first_seed = std::stoi(val());
    else if (f == "--budget")
      a.budget = std::stoul(val());
    else if (f == "--out")
      a.out = val();
    else if (f == "--traces")
      a.traces = val();
    else if (f == "--only")
      a.only = val();
    else if (f == "--search-only")
      a.search_only = val();
    else if (f == "--no-transfer")
      a.transfer = false;
    else if (f == "--no-first-guesses")
      a.first_guesses = false;
    else if (f == "--prior-from-others")
      a.prior_from_others = true;
    else if (f == "-v")
      a.verbose = true;
    else if (f == "--mcts-exploration")
      a.mcts.exploration = std::stod(val());
    else if (f == "--mcts-power")
      a.mcts.value_power = std::stod(val());
    else if (f == "--mcts-incumbent")
      a.mcts.incumbent_bias = std::stod(val());
    else if (f == "--mcts-neighbour")
      a.mcts.neighbour_bias = std::stod(val());
    else if (f == "--mcts-tail")
      a.mcts.incumbent_tail = std::stod(val());
    else if (f == "--mcts-initial")
      a.mcts.initial_samples = std::stoul(val());
    else if (f == "--mcts-first-play")
      a.mcts.first_play = std::stod(val());
    else if (f == "--mcts-repair")
      a.mcts.repair_swaps = std::stoul(val());
    else if (f == "--kernel-tuner-csv")
      a.kernel_tuner_csv = val();
    else if (f == "--set") {
      std::string kv = val();
      auto eq = kv.find('=');
      if (eq == std::string::npos) {
        std::cerr << "search_replay: --set takes STRATEGY.OPTION=VALUE\n";
        return 2;
      }
      a.settings[kv.substr(0, eq)] = kv.substr(eq + 1);
    } else if (f == "--with-kernel-tuner")
      a.with_kernel_tuner = true;
    else {
      std::cerr
          << "search_replay: unknown flag '" << f
          << "' (flags: --datasets DIR[,DIR] --strategies a,b --seeds N --budget N --out FILE "
             "--traces FILE --only SUBSTR --search-only SUBSTR --no-transfer --no-first-guesses "
             "--prior-from-others "
             "--with-kernel-tuner "
             "--set S.OPT=V "
             "--kernel-tuner-csv FILE --mcts-exploration X "
             "--mcts-power X --mcts-incumbent X --mcts-neighbour X --mcts-tail X "
             "--mcts-initial N --mcts-first-play X --mcts-repair N)\n";
      return 2;
    }
  }

  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& dir : split(a.datasets, ',')) {
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      std::string n = e.path().filename().string();
      if ((n.ends_with(".json") || n.ends_with(".json.gz")) &&
          (a.only.empty() || n.find(a.only) != std::string::npos))
        files.push_back(e.path());
    }
    // Each folder is checked: a later one that reads fine would clear the error of this one.
    if (ec) {
      std::cerr << "search_replay: cannot read '" << dir << "': " << ec.message() << "\n";
      return 2;
    }
  }
  if (files.empty()) {
    std::cerr << "search_replay: no cache files in '" << a.datasets << "'\n";
    return 2;
  }
  std::sort(files.begin(), files.end());

  std::ofstream traces;
  if (!a.traces.empty()) {
    traces.open(a.traces);
    if (!traces) {
      std::cerr << "search_replay: cannot write '" << a.traces << "'\n";
      return 2;
    }
    traces << "space,strategy,seed,evaluation,config,verdict,time_us,best_us\n";
  }

  auto t0 = std::chrono::steady_clock::now();
  std::vector<Row> rows;
  std::map<std::string, replay::RecordedSpace> spaces;
  for (const auto& f : files) {
    auto rs = replay::load_kernel_tuner_cache(f.string());
    if (!rs) {
      std::cerr << "search_replay: " << rs.error().message() << "\n";
      return 2;
    }
    std::string name = stem(f);
    const replay::RecordedSpace& space = spaces.emplace(name, std::move(rs).value()).first->second;
    if (!searched(a, name)) continue;
    double optimum = *space.optimum_us();
    for (const auto& strategy : a.strategies) {
      Row row{name, strategy, {}, {}, {}, space.points.size()};
      const std::vector<Point> first = first_points(space, strategy, a);
      for (int seed = a.first_seed; seed < a.first_seed + a.seeds; ++seed) {
        auto s = make(strategy, space.space, static_cast<std::uint64_t>(seed), a, &space);
        auto t = search::run_strategy(*s, space.space, evaluator(space), a.budget, first);
        if (!t) {
          std::cerr << "search_replay: " << name << ": " << t.error().message() << "\n";
          return 1;
        }
        add_trace(row, *t, optimum);
        if (traces.is_open()) write_trace(traces, name, strategy, seed, space, *t);
        if (a.verbose) {
          std::size_t b = 0;
          for (std::size_t i = 0; i < t->proposed.size(); ++i)
            if (t->best_us[i] < t->best_us[b]) b = i;
          std::cerr << name << " " << strategy << " seed " << seed << ": to 2% " << row.to2.back()
                    << ", best " << optimum / t->best_us.back() << " at "
                    << space.space.config(t->proposed[b]).text() << "\n";
        }
      }
      std::cerr << name << " " << strategy << ": median to 2% "
                << evals_text(median(row.to2), a.budget) << "\n";
      rows.push_back(std::move(row));
    }
  }
  std::string transfer_text;
  if (a.transfer) transfer_text = run_transfer(spaces, a);
  if (a.prior_from_others) transfer_text += run_prior_from_others(spaces, rows, a, traces);
  const std::string overhead_text = overhead_table(a);
  if (a.with_kernel_tuner) {
    // Same caches, seeds and budget, in Kernel Tuner's simulation mode.
    std::string out =
        (fs::temp_directory_path() / ("attune-kt-" + std::to_string(getpid()) + ".md")).string();
    std::string cmd =
        "'" + std::string(ATTUNE_SOURCE_DIR) + "/bench/kernel_tuner_side_by_side.sh' --datasets '" +
        a.datasets + "' --seeds " + std::to_string(a.seeds) + " --first-seed " +
        std::to_string(a.first_seed) + " --budget " + std::to_string(a.budget) +
        (a.only.empty() ? "" : " --only '" + a.only + "'") + " --out '" + out + "' >/dev/null";
    std::cerr << "running Kernel Tuner: " << cmd << "\n";
    if (std::system(cmd.c_str()) != 0) {
      std::cerr << "search_replay: the Kernel Tuner side-by-side failed (see above)\n";
      return 1;
    }
    a.kernel_tuner_csv = out;
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  std::ostringstream report;
  char date[64];
  std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  utsname u{};
  uname(&u);
  report << "# search_replay\n\n"
         << "- date: " << date << "\n"
         << "- machine: " << u.nodename << " (" << u.sysname << " " << u.release << " " << u.machine
         << ", " << sysconf(_SC_NPROCESSORS_ONLN) << " cores), CPU only\n"
         << "- command: `" << command << "`\n"
         << "- seeds: " << a.seeds << " (" << a.first_seed << ".." << a.first_seed + a.seeds - 1
         << "), budget " << a.budget << " evaluations; a failed config costs one evaluation\n"
         << "- first guesses: "
         << (a.first_guesses ? "an op's, right after the baseline, on a space attune recorded from "
                               "it (every strategy but grid), as attune tune evaluates them"
                             : "none (--no-first-guesses)")
         << "\n"
         << "- mcts options: exploration " << a.mcts.exploration << ", value power "
         << a.mcts.value_power << ", incumbent bias " << a.mcts.incumbent_bias
         << ", neighbour bias " << a.mcts.neighbour_bias << ", incumbent tail "
         << a.mcts.incumbent_tail << ", initial samples " << a.mcts.initial_samples
         << ", first play " << a.mcts.first_play << ", repair swaps " << a.mcts.repair_swaps
         << ", small space " << a.mcts.small_space << "\n"
         << "- wall time: " << static_cast<int>(secs) << " s\n\n"
         << "'optimum frac @N' is the mean over seeds of optimum time / best time found after N "
            "evaluations (1.000 = the optimum).\n\n"
         << table(rows, a.budget);
  if (!a.kernel_tuner_csv.empty()) {
    std::ifstream in(a.kernel_tuner_csv);
    report << "\n## Kernel Tuner (same caches, simulation mode)\n\n";
    std::string line;
    while (std::getline(in, line)) report << line << "\n";
  }
  report << overhead_text << transfer_text;
  std::cout << report.str();
  if (!a.out.empty()) {
    std::ofstream out(a.out);
    out << report.str();
    if (!out) {
      std::cerr << "search_replay: cannot write '" << a.out << "'\n";
      return 2;
    }
  }
  return 0;
}
