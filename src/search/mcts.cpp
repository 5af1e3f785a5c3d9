#include "search/mcts.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "core/rank.h"
#include "search/portfolio.h"
#include "search/surrogate.h"
#include "search/walk.h"

namespace attune::search {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();

struct Node {
  std::int64_t visits = 0;
  std::int64_t failures = 0;
  double best_us = kInf;
  // Sum over the ok results below of time^-value_power (a failure adds 0): the mean value below,
  // relative to the best overall, is best_us^power * value_sum / visits.
  double value_sum = 0;
  bool closed = false;  // no unproposed legal point below (explored, or a dead end)
  bool have_options = false;
  std::vector<std::uint32_t> options;  // legal options of the next knob
  std::uint64_t prior_generation = ~0ULL;
  std::vector<double> prior;  // normalised, parallel to options
};
}  // namespace

struct Mcts::State {
  Space space;
  Rng rng;
  MctsOptions o;
  std::unordered_map<Point, Node, PointHasher> nodes;
  PointSet proposed;
  double best_us = kInf;
  std::optional<Point> incumbent;
  std::size_t initial_left;  // initial samples still to draw
  Point baseline;
  // repair_swaps: the repaired swap point per (fork depth, option) for the current incumbent.
  std::unordered_map<std::uint64_t, std::optional<Point>> repaired;

  // prior_check: the first ok results and their log times, until the prior is checked on them.
  std::vector<Point> check_points;
  std::vector<double> check_log_us;
  bool prior_checked = false;

  // After `prior_check` ok results, a prior whose predictions of them rank them worse than
  // prior_min_agreement is dropped: the tree goes on cold. A prior that predicts nothing (too
  // few problems behind it) is kept.
  void check_prior(const Point& point, Verdict verdict, std::optional<double> time_us) {
    if (prior_checked || o.prior_check == 0 || !o.prior || !o.predict) return;
    if (verdict != Verdict::kOk || !time_us || *time_us <= 0) return;
    check_points.push_back(point);
    check_log_us.push_back(std::log(*time_us));
    if (check_points.size() < o.prior_check) return;
    prior_checked = true;
    const auto predicted = o.predict(check_points);
    bool usable = predicted.size() == check_points.size();
    for (double v : predicted) usable = usable && std::isfinite(v);
    if (usable && spearman(predicted, check_log_us) < o.prior_min_agreement) {
      o.prior = nullptr;
      // Every fork's cached scores are stale.
      o.prior_generation = [] { return std::uint64_t{0x0d20bbed}; };
    }
    check_points = {};
    check_log_us = {};
  }

  State(const Space& sp, std::uint64_t seed, MctsOptions opts)
      : space(sp),
        rng(seed ^ 0x3c75ULL),
        o(std::move(opts)),
        initial_left(o.initial_samples),
        baseline(sp.baseline()) {}

  // How many knobs two points differ in.
  static std::size_t changed(const Point& a, const Point& b) {
    std::size_t n = 0;
    for (std::size_t k = 0; k < a.size(); ++k) n += a[k] != b[k];
    return n;
  }

  // The incumbent with knob `depth` set to `option` and the knobs after it completed legally,
  // keeping the incumbent's options where they fit, else the baseline's, else the first legal
  // one: the config of the sibling's subtree nearest the incumbent (nullopt for a dead end).
  // Deterministic for an incumbent (no draws from rng); proposed or not.
  const std::optional<Point>& repaired_swap(std::size_t depth, std::uint32_t option) {
    const std::uint64_t key = (static_cast<std::uint64_t>(depth) << 32) | option;
    auto it = repaired.find(key);
    if (it != repaired.end()) return it->second;
    Point prefix(incumbent->begin(), incumbent->begin() + static_cast<std::ptrdiff_t>(depth));
    prefix.push_back(option);
    OptionOrder near = [this](const Point& p, std::vector<std::uint32_t>& opts) {
      std::sort(opts.begin(), opts.end());
      for (std::uint32_t first : {baseline[p.size()], (*incumbent)[p.size()]}) {
        auto f = std::find(opts.begin(), opts.end(), first);
        if (f != opts.end()) std::rotate(opts.begin(), f, f + 1);
      }
    };
    static const PointSet kNone;
    return repaired.emplace(key, random_completion(space, prefix, rng, kNone, near)).first->second;
  }

  Node& node(const Point& prefix) {
    Node& n = nodes[prefix];
    if (!n.have_options) {
      n.have_options = true;
      if (prefix.size() < space.depth()) n.options = space.legal_options(prefix);
    }
    return n;
  }

  const std::vector<double>& prior(const Point& prefix, Node& n) {
    std::uint64_t gen = o.prior_generation ? o.prior_generation() : 0;
    if (n.prior_generation == gen && n.prior.size() == n.options.size()) return n.prior;
    n.prior_generation = gen;
    std::vector<double> s;
    if (o.prior) s = o.prior(prefix, n.options);
    double sum = 0;
    bool usable = s.size() == n.options.size();
    for (double x : s) {
      if (!(x >= 0) || !std::isfinite(x)) usable = false;
      sum += x;
    }
    if (!usable || !(sum > 0)) {
      n.prior.assign(n.options.size(), n.options.empty() ? 0.0 : 1.0 / n.options.size());
    } else {
      n.prior.resize(s.size());
      for (std::size_t i = 0; i < s.size(); ++i) n.prior[i] = s[i] / sum;
    }
    return n.prior;
  }

  // Options in an order drawn by prior weight (a uniform shuffle when cold).
  void order_by_prior(const Point& prefix, std::vector<std::uint32_t>& opts) {
    Node& n = node(prefix);
    const auto& pr = prior(prefix, n);
    std::vector<std::pair<double, std::uint32_t>> keyed;
    keyed.reserve(opts.size());
    for (std::uint32_t opt : opts) {
      auto it = std::find(n.options.begin(), n.options.end(), opt);
      double w = it == n.options.end() ? 0.0 : pr[static_cast<std::size_t>(it - n.options.begin())];
      // Weighted sampling without replacement: key = u^(1/w) (Efraimidis-Spirakis), as log.
      double u = std::max(rng.real(), 1e-300);
      double key = w > 0 ? std::log(u) / w : -kInf;
      keyed.emplace_back(key, opt);
    }
    std::sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first > b.first : a.second < b.second;
    });
    opts.clear();
    for (auto& k : keyed) opts.push_back(k.second);
  }

  // Options in rollout order: the incumbent's first (sometimes), then drawn by prior weight.
  void order(const Point& prefix, std::vector<std::uint32_t>& opts) {
    order_by_prior(prefix, opts);
    if (!incumbent) return;
    // Options are usually ordered numbers, and neighbouring values perform alike: keep the
    // incumbent's option, else try a neighbour of it, else the order drawn above.
    std::uint32_t inc = (*incumbent)[prefix.size()];
    double u = rng.real();
    std::optional<std::uint32_t> first;
    if (u < o.incumbent_bias) {
      first = inc;
    } else if (u < o.incumbent_bias + (1 - o.incumbent_bias) * o.neighbour_bias) {
      first = rng.below(2) ? inc + 1 : (inc ? inc - 1 : inc + 1);
    }
    if (first) {
      auto it = std::find(opts.begin(), opts.end(), *first);
      if (it != opts.end()) std::rotate(opts.begin(), it, it + 1);
    }
  }

  std::optional<Point> rollout(const Point& prefix) {
    // The incumbent with this fork's choice swapped in: a one-knob move from the best config,
    // which is what finds a needle one knob away from the runner-up.
    if (incumbent && rng.real() < o.incumbent_tail) {
      Point p = prefix;
      p.insert(p.end(), incumbent->begin() + static_cast<std::ptrdiff_t>(prefix.size()),
               incumbent->end());
      if (!proposed.count(p) && legal(space, p)) return p;
    }
    OptionOrder ord = [this](const Point& p, std::vector<std::uint32_t>& opts) { order(p, opts); };
    return random_completion(space, prefix, rng, proposed, ord);
  }

  void close(const Point& prefix) { node(prefix).closed = true; }

  // A point drawn fork by fork from the root by prior weight, ignoring the incumbent.
  std::optional<Point> initial_sample() {
    OptionOrder ord = [this](const Point& p, std::vector<std::uint32_t>& opts) {
      order_by_prior(p, opts);
    };
    return random_completion(space, {}, rng, proposed, ord);
  }

  std::optional<Point> propose() {
    const std::size_t depth = space.depth();
    // Each pass either returns a point or closes at least one node, so this ends.
    while (true) {
      Point prefix;
      Node* n = &node(prefix);
      if (n->closed) return std::nullopt;
      while (true) {
        if (prefix.size() == depth) {  // a proposed leaf: closed by observe, or pending
          close(prefix);
          break;
        }
        const auto& pr = prior(prefix, *n);
        double sqrt_n = std::sqrt(static_cast<double>(n->visits) + 1.0);
        // The prior relative to uniform, so the bonus means the same at a 2-way and a 31-way
        // fork: with a cold prior every untried sibling is equally (and fairly) attractive.
        const double width = static_cast<double>(n->options.size());
        // On the incumbent's path, a sibling's "swap point" (the incumbent with this fork's
        // choice changed) is a fresh, one-knob move from the best config. A sibling tried long
        // ago, before the incumbent got good, would otherwise keep its stale value forever:
        // measured on pnpoly (2080 Ti), 7 of 20 seeds stalled at 0.975 of the optimum with the
        // winning one-knob move never tried. While its swap point is unproposed, a tried
        // sibling is scored like an untried one and the swap point is what gets proposed.
        const bool on_incumbent_path =
            incumbent && std::equal(prefix.begin(), prefix.end(), incumbent->begin());
        // An untried child is worth, in expectation, what one result below its parent was.
        const double first_play = std::isfinite(best_us) && n->visits > 0
                                      ? o.first_play * std::pow(best_us, o.value_power) *
                                            n->value_sum / static_cast<double>(n->visits)
                                      : 0.0;
        double best_score = -kInf;
        std::size_t pick = n->options.size();
        bool pick_untried = false;
        std::optional<Point> pick_swap;
        for (std::size_t i = 0; i < n->options.size(); ++i) {
          Point c = prefix;
          c.push_back(n->options[i]);
          auto it = nodes.find(c);
          bool tried = it != nodes.end() && it->second.visits > 0;
          if (it != nodes.end() && it->second.closed) continue;
          if (c.size() == depth && proposed.count(c)) continue;  // pending result
          std::optional<Point> swap;
          if (tried && on_incumbent_path && n->options[i] != (*incumbent)[prefix.size()]) {
            Point sp = *incumbent;
            sp[prefix.size()] = n->options[i];
            if (legal(space, sp)) {
              if (!proposed.count(sp)) swap = std::move(sp);
            } else if (o.repair_swaps > 0) {
              // A structural knob (gemm's `kernel`) frees other knobs under each option, so the
              // plain swap is illegal and the sibling's tried subtree would keep its stale value.
              const auto& r = repaired_swap(prefix.size(), n->options[i]);
              if (r && !proposed.count(*r) && changed(sp, *r) >= o.repair_swaps) swap = *r;
            }
          }
          double score;
          if (!tried || swap) {
            score = first_play + o.exploration * pr[i] * width * sqrt_n;
          } else {
            const Node& cn = it->second;
            double q = std::isfinite(cn.best_us) && std::isfinite(best_us)
                           ? std::pow(best_us / cn.best_us, o.value_power)
                           : 0.0;
            score =
                q + o.exploration * pr[i] * width * sqrt_n / (1.0 + static_cast<double>(cn.visits));
          }
          // A tiny seeded jitter breaks ties (an uniform prior's untried siblings) at random
          // instead of always by option order.
          score += 1e-9 * rng.real();
          if (score > best_score) {
            best_score = score;
            pick = i;
            pick_untried = !tried;
            pick_swap = std::move(swap);
          }
        }
        if (pick == n->options.size()) {  // every child closed (or a dead end)
          close(prefix);
          break;
        }
        if (pick_swap) {
          proposed.insert(*pick_swap);
          return pick_swap;
        }
        prefix.push_back(n->options[pick]);
        if (pick_untried) {
          auto p = rollout(prefix);
          if (!p) {
            close(prefix);  // a dead end or fully proposed subtree
            break;
          }
          proposed.insert(*p);
          return p;
        }
        n = &node(prefix);
      }
    }
  }

  void backup(const Point& point, Verdict verdict, std::optional<double> time_us) {
    bool ok = verdict == Verdict::kOk && time_us && *time_us > 0;
    Point prefix;
    for (std::size_t d = 0; d <= point.size(); ++d) {
      Node& n = node(prefix);
      ++n.visits;
      if (ok) {
        n.best_us = std::min(n.best_us, *time_us);
        n.value_sum += std::pow(*time_us, -o.value_power);
      } else {
        ++n.failures;
      }
      if (d < point.size()) prefix.push_back(point[d]);
    }
    node(point).closed = true;
    if (ok && *time_us < best_us) {
      best_us = *time_us;
      incumbent = point;
      repaired.clear();
    }
  }
};

namespace {
// mcts's option list for O, MctsOptions or a variant of it with other defaults.
template <typename O>
OptionList<O> build_mcts_option_list() {
  return OptionList<O>()
      .template add<double>("exploration", &MctsOptions::exploration, at_least(0),
                            "weight of the prior-weighted exploration bonus")
      .template add<double>("value_power", &MctsOptions::value_power, above(0),
                            "value = (best overall / best below)^power; higher sharpens near-ties")
      .template add<double>("incumbent_bias", &MctsOptions::incumbent_bias, between(0, 1),
                            "rollout: chance to keep the incumbent's option at each fork")
      .template add<double>("incumbent_tail", &MctsOptions::incumbent_tail, between(0, 1),
                            "rollout: chance to complete a config with the incumbent's options")
      .template add<double>("neighbour_bias", &MctsOptions::neighbour_bias, between(0, 1),
                            "rollout, otherwise: chance to take an option next to the incumbent's")
      .template add<std::size_t>(
          "initial_samples", &MctsOptions::initial_samples, at_least(0),
          "points drawn by the prior after the baseline, before the first descent")
      .template add<double>(
          "first_play", &MctsOptions::first_play, at_least(0),
          "an untried child's value, as a fraction of the mean value below its parent")
      .template add<std::size_t>("repair_swaps", &MctsOptions::repair_swaps, at_least(0),
                                 "an illegal swap point is completed legally and tried when that "
                                 "changes at least this many more knobs; 0: never")
      .template add<std::size_t>("prior_check", &MctsOptions::prior_check, at_least(0),
                                 "ok results after which a prior that does not rank them is "
                                 "dropped; 0: never")
      .template add<std::size_t>("prior_check_given", &MctsOptions::prior_check_given,
                                 between(0, 1),
                                 "1: the prior check counts results of points the tree did not "
                                 "propose (first guesses, a warm start); 0: only its own")
      .template add<double>("prior_min_agreement", &MctsOptions::prior_min_agreement,
                            between(-1, 1),
                            "the least Spearman correlation of a prior's predictions with the "
                            "first results that keeps it")
      .template add<std::size_t>("small_space", &MctsOptions::small_space, at_least(0),
                                 "a space of at most this many configs is searched by the "
                                 "surrogate's cost model instead; 0: never")
      .template add<std::size_t>("tiny_space", &MctsOptions::tiny_space, at_least(0),
                                 "a small space of at most this many configs gets "
                                 "tiny_space_samples random configs before the cost model, not "
                                 "1; 0: never")
      .template add<std::size_t>("tiny_space_samples", &MctsOptions::tiny_space_samples,
                                 at_least(0),
                                 "random configs a tiny space gets before the cost model")
      .template add<std::size_t>("tiny_space_cover_stuck", &MctsOptions::tiny_space_cover_stuck,
                                 at_least(0),
                                 "a tiny space's cost model proposes a config holding another "
                                 "option of a knob once this many results all hold one; 0: never")
      .template add<std::size_t>("small_space_cover", &MctsOptions::small_space_cover, at_least(0),
                                 "a small space of at most this many configs draws its first "
                                 "configs covering options not yet proposed; 0: never")
      .template add<std::size_t>("small_space_skip_lone", &MctsOptions::small_space_skip_lone,
                                 at_least(0),
                                 "a small space's cost model leaves out of its fit a config "
                                 "alone in holding one of its options once this many other "
                                 "results are fitted; 0: never")
      .template add<std::size_t>("small_space_skip_lone_prior_led",
                                 &MctsOptions::small_space_skip_lone_prior_led, at_least(0),
                                 "small_space_skip_lone for the cold turns of a search with a "
                                 "prior; 0: never")
      .template add<double>("small_space_log_cap", &MctsOptions::small_space_log_cap, at_least(0),
                            "a small space's cost model caps log time at the best so far plus "
                            "this; 0: no cap")
      .template add<std::size_t>("small_space_cold_every", &MctsOptions::small_space_cold_every,
                                 at_least(0),
                                 "with a prior, every this-many-th proposal of a small space's "
                                 "cost model ignores the prior; 0: never")
      .template add<double>("small_space_pairs", &MctsOptions::small_space_pairs, at_least(0),
                            "a small space's cost model also fits option pairs, at this many "
                            "times the ridge penalty; 0: no pairs")
      .template add<double>("small_space_explore", &MctsOptions::small_space_explore, at_least(0),
                            "a small space's cost model proposes by its prediction less this "
                            "many times its uncertainty, without a prior; 0: the prediction "
                            "alone")
      .template add<double>("small_space_explore_prior_led",
                            &MctsOptions::small_space_explore_prior_led, at_least(0),
                            "small_space_explore for a search with a prior")
      .template add<double>("small_space_turn_floor", &MctsOptions::small_space_turn_floor,
                            between(0, 0.5),
                            "with a prior, a small space's model proposals are prior-led or cold "
                            "by how good each kind's recent proposals were, neither below this "
                            "share; 0: small_space_cold_every decides")
      .template add<std::size_t>("large_space_portfolio", &MctsOptions::large_space_portfolio,
                                 between(0, 1),
                                 "1: a space larger than small_space is searched by a portfolio "
                                 "of the tree and a genetic algorithm; 0: the tree alone")
      .template add<double>("large_space_floor", &MctsOptions::large_space_floor, between(0, 0.5),
                            "large_space_portfolio: each arm's least share of the proposals")
      .template add<std::size_t>("large_space_stall", &MctsOptions::large_space_stall, at_least(0),
                                 "large_space_portfolio: the genetic arm starts once this many "
                                 "evaluations in a row found no new best")
      .template add<std::size_t>("large_space_model", &MctsOptions::large_space_model,
                                 between(0, 1),
                                 "large_space_portfolio: 1: a cost model joins the genetic arm "
                                 "at the stall as a third arm (spaces of at most 100000 "
                                 "configs)");
}
}  // namespace

const OptionList<MctsOptions>& mcts_option_list() {
  static const OptionList<MctsOptions> list = build_mcts_option_list<MctsOptions>();
  return list;
}

const OptionList<MctsRepairOptions>& mcts_repair_option_list() {
  static const OptionList<MctsRepairOptions> list = build_mcts_option_list<MctsRepairOptions>();
  return list;
}

Mcts::Mcts(const Space& space, const StrategyOptions& options, MctsOptions mcts, std::string name)
    : name_(std::move(name)) {
  if (mcts.small_space > 0 && count_up_to(space, mcts.small_space)) {
    SurrogateOptions so;
    if (mcts.tiny_space > 0 && count_up_to(space, mcts.tiny_space)) {
      so.initial_samples = mcts.tiny_space_samples;
      so.cover_stuck = mcts.tiny_space_cover_stuck;
    }
    so.cover_options = mcts.small_space_cover > 0 && count_up_to(space, mcts.small_space_cover);
    so.skip_lone = mcts.small_space_skip_lone;
    so.skip_lone_prior_led = mcts.small_space_skip_lone_prior_led;
    so.log_cap = mcts.small_space_log_cap;
    so.cold_every = mcts.small_space_cold_every;
    so.pairs = mcts.small_space_pairs;
    so.explore = mcts.small_space_explore;
    so.explore_prior_led = mcts.small_space_explore_prior_led;
    so.turn_floor = mcts.small_space_turn_floor;
    so.prior = std::move(mcts.predict);
    small_ = std::make_unique<Surrogate>(space, options.seed, so, name_);
  } else if (mcts.large_space_portfolio) {
    mcts.large_space_portfolio = 0;  // the portfolio's tree arm is the tree alone
    PortfolioOptions po;
    po.floor = mcts.large_space_floor;
    po.stall = mcts.large_space_stall;
    po.model = mcts.large_space_model;
    large_ = make_portfolio(space, options, po, std::move(mcts));
  } else {
    s_ = std::make_unique<State>(space, options.seed, std::move(mcts));
  }
}
Mcts::~Mcts() = default;

std::vector<TreeNode> Mcts::save_state() const {
  return export_nodes();
}

Status Mcts::load_state(const std::vector<StateNode>& nodes) {
  return import_nodes(nodes);
}

std::optional<Point> Mcts::propose() {
  if (small_) return small_->propose();
  if (large_) return large_->propose();
  // The baseline first: it anchors speedups and is the rollout's first incumbent.
  if (s_->nodes.empty() || s_->node({}).visits == 0) {
    Point base = s_->space.baseline();
    if (!s_->proposed.count(base)) {
      s_->proposed.insert(base);
      return base;
    }
  }
  if (s_->initial_left > 0) {
    --s_->initial_left;
    if (auto p = s_->initial_sample()) {
      s_->proposed.insert(*p);
      return p;
    }
  }
  return s_->propose();
}

void Mcts::observe(const Point& point, Verdict verdict, std::optional<double> time_us) {
  if (small_) return small_->observe(point, verdict, time_us);
  if (large_) return large_->observe(point, verdict, time_us);
  if (point.size() != s_->space.depth()) return;
  const bool given = !s_->proposed.count(point) && point != s_->space.baseline();
  s_->proposed.insert(point);
  s_->backup(point, verdict, time_us);
  if (!given || s_->o.prior_check_given) s_->check_prior(point, verdict, time_us);
}

namespace {
std::string prefix_text(const Space& space, const Point& prefix) {
  std::string t;
  for (std::size_t k = 0; k < prefix.size(); ++k) {
    if (k) t += ',';
    t += space.knobs()[k].name + "=" + space.knobs()[k].options[prefix[k]].text();
  }
  return t;
}
}  // namespace

std::vector<TreeNode> Mcts::export_nodes() const {
  if (large_) return large_->save_state();  // the portfolio's tree arm
  if (!s_) return {};                       // a small space keeps no tree
  std::vector<std::pair<Point, const Node*>> rows;
  for (const auto& [p, n] : s_->nodes)
    if (n.visits > 0 || n.closed) rows.emplace_back(p, &n);
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return a.first.size() != b.first.size() ? a.first.size() < b.first.size() : a.first < b.first;
  });
  std::vector<TreeNode> out;
  out.reserve(rows.size());
  for (const auto& [p, n] : rows) {
    TreeNode t;
    t.path = prefix_text(s_->space, p);
    t.visits = n->visits;
    t.best_us = std::isfinite(n->best_us) ? n->best_us : 0.0;
    t.payload = nlohmann::json{{"failures", n->failures},
                               {"closed", n->closed},
                               {"value_sum", n->value_sum},
                               {"value_power", s_->o.value_power}}
                    .dump();
    out.push_back(std::move(t));
  }
  return out;
}

Status Mcts::import_nodes(const std::vector<TreeNode>& rows) {
  if (large_) return large_->load_state(rows);  // the portfolio's tree arm
  // A small space keeps no tree: an earlier run's results reach its surrogate as the store
  // answers them.
  if (!s_) return Status::success();
  const Space& space = s_->space;
  std::vector<std::pair<Point, Node>> parsed;
  for (const auto& r : rows) {
    Point p;
    std::size_t start = 0;
    const std::string& t = r.path;
    while (start < t.size()) {
      std::size_t comma = t.find(',', start);
      std::string part =
          t.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      std::size_t eq = part.find('=');
      std::size_t k = p.size();
      if (eq == std::string::npos || k >= space.depth() ||
          part.substr(0, eq) != space.knobs()[k].name)
        return Error::invalid_argument("search node '" + t + "' does not match the space's knobs");
      std::string value = part.substr(eq + 1);
      const auto& opts = space.knobs()[k].options;
      auto it =
          std::find_if(opts.begin(), opts.end(), [&](const Value& v) { return v.text() == value; });
      if (it == opts.end())
        return Error::invalid_argument("search node '" + t + "': knob '" + space.knobs()[k].name +
                                       "' has no option '" + value + "'");
      p.push_back(static_cast<std::uint32_t>(it - opts.begin()));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    if (!space.prefix_legal(p))
      return Error::invalid_argument("search node '" + t + "' is not a legal prefix of the space");
    Node n;
    n.visits = r.visits;
    n.best_us = r.best_us > 0 ? r.best_us : kInf;
    auto j = nlohmann::json::parse(r.payload.empty() ? "{}" : r.payload, nullptr, false);
    if (j.is_discarded() || !j.is_object())
      return Error::invalid_argument("search node '" + t + "' has a payload that is not JSON");
    n.failures = j.value("failures", std::int64_t{0});
    n.closed = j.value("closed", false);
    // Nodes from before value sums were kept, or from another value power, start at 0 (their
    // untried children are then attractive by the bonus alone).
    if (j.value("value_power", 0.0) == s_->o.value_power) n.value_sum = j.value("value_sum", 0.0);
    parsed.emplace_back(std::move(p), std::move(n));
  }
  for (auto& [p, n] : parsed) {
    // A tree continued from an earlier run already holds its initial samples (or as many
    // results as it has: the root counts every evaluation below it, the baseline included).
    if (p.empty()) {
      auto drawn = static_cast<std::size_t>(std::max<std::int64_t>(0, n.visits - 1));
      s_->initial_left -= std::min(s_->initial_left, drawn);
    }
    Node& dst = s_->node(p);
    dst.visits = n.visits;
    dst.failures = n.failures;
    dst.best_us = n.best_us;
    dst.closed = n.closed;
    dst.value_sum = n.value_sum;
    if (p.size() == space.depth()) {
      s_->proposed.insert(p);
      dst.closed = true;
      if (n.best_us < s_->best_us) {
        s_->best_us = n.best_us;
        s_->incumbent = p;
      }
    }
  }
  s_->repaired.clear();  // made for another incumbent
  return Status::success();
}

}  // namespace attune::search
