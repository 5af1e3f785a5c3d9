#include "search/surrogate.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <unordered_map>
#include <vector>

#include <Eigen/Dense>

#include "search/walk.h"

namespace attune::search {

std::optional<std::uint64_t> count_up_to(const Space& space, std::uint64_t limit) {
  std::uint64_t n = 0;
  for (auto e = space.enumerate(); e.next();)
    if (++n > limit) return std::nullopt;
  return n;
}

std::size_t surrogate_width(const Space& space) {
  std::size_t width = 0;
  for (const auto& k : space.knobs()) width += k.options.size() + 2;
  return width;
}

struct Surrogate::State {
  Space space;
  Rng rng;
  SurrogateOptions o;
  std::vector<Point> points;  // every legal config, in enumeration order (baseline first)
  std::unordered_map<Point, std::size_t, PointHasher> row;
  Eigen::MatrixXd features;  // one row per point
  Eigen::VectorXd penalty;   // the ridge penalty of each feature
  std::vector<bool> proposed;
  std::vector<bool> observed;
  std::vector<bool> lone;       // the only legal config holding one of its options
  std::size_t left = 0;         // points not yet proposed
  std::vector<std::size_t> ok;  // rows with a time, in observation order
  std::vector<double> log_us;   // parallel to ok
  std::size_t initial_left;
  std::vector<double> prior;        // predicted log time per point; empty: no prior
  std::size_t model_proposals = 0;  // proposals made by the model with a prior
  // SurrogateOptions::turn_floor: the turn (0 prior-led, 1 cold) of each pending model proposal,
  // each turn's most recent qualities, and every ok time so far (sorted) to judge them by.
  std::unordered_map<std::size_t, int> turn_of;
  std::deque<double> recent[2];
  std::vector<double> ok_sorted;

  State(const Space& sp, std::uint64_t seed, SurrogateOptions opts)
      : space(sp), rng(seed ^ 0x5a77ULL), o(opts), initial_left(opts.initial_samples) {
    for (auto e = space.enumerate(); auto p = e.next();) {
      row.emplace(*p, points.size());
      points.push_back(std::move(*p));
    }
    std::size_t width = surrogate_width(space);
    const std::size_t main_width = width;
    // The option pairs some legal config holds, each a column after the main features.
    std::unordered_map<std::uint64_t, std::size_t> pair_col;
    auto pair_key = [](std::size_t k, std::uint32_t a, std::size_t l, std::uint32_t b) {
      return (static_cast<std::uint64_t>(k) << 48) | (static_cast<std::uint64_t>(a) << 32) |
             (static_cast<std::uint64_t>(l) << 16) | b;
    };
    if (o.pairs > 0)
      for (const auto& p : points)
        for (std::size_t k = 0; k < space.depth(); ++k)
          for (std::size_t l = k + 1; l < space.depth(); ++l)
            if (pair_col.emplace(pair_key(k, p[k], l, p[l]), width).second) ++width;
    features = Eigen::MatrixXd::Zero(static_cast<Eigen::Index>(points.size()),
                                     static_cast<Eigen::Index>(width));
    penalty = Eigen::VectorXd::Constant(static_cast<Eigen::Index>(width), o.ridge);
    penalty.tail(static_cast<Eigen::Index>(width - main_width)).array() = o.ridge * o.pairs;
    for (std::size_t i = 0; i < points.size(); ++i) {
      std::size_t col = 0;
      for (std::size_t k = 0; k < space.depth(); ++k) {
        const std::size_t n = space.knobs()[k].options.size();
        const auto r = static_cast<Eigen::Index>(i);
        features(r, static_cast<Eigen::Index>(col + points[i][k])) = 1.0;
        // Options are usually ordered numbers: the position lets the model carry a trend to
        // options it has not seen.
        const double t = n > 1 ? static_cast<double>(points[i][k]) / static_cast<double>(n - 1) : 0;
        features(r, static_cast<Eigen::Index>(col + n)) = t;
        features(r, static_cast<Eigen::Index>(col + n + 1)) = t * t;
        col += n + 2;
      }
      if (o.pairs > 0)
        for (std::size_t k = 0; k < space.depth(); ++k)
          for (std::size_t l = k + 1; l < space.depth(); ++l)
            features(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(pair_col.at(pair_key(
                                                       k, points[i][k], l, points[i][l])))) = 1.0;
    }
    lone.assign(points.size(), false);
    for (std::size_t k = 0; k < space.depth(); ++k) {
      std::vector<std::size_t> holders(space.knobs()[k].options.size(), 0);
      for (const auto& p : points) ++holders[p[k]];
      if (points.size() > 1)
        for (std::size_t i = 0; i < points.size(); ++i)
          if (holders[points[i][k]] == 1) lone[i] = true;
    }
    proposed.assign(points.size(), false);
    observed.assign(points.size(), false);
    left = points.size();
    if (o.prior && o.prior_weight > 0 && !points.empty()) {
      prior = o.prior(points);
      for (double& v : prior) v *= o.prior_weight;
      bool usable = prior.size() == points.size();
      for (double v : prior) usable = usable && std::isfinite(v);
      if (usable)
        initial_left = 0;  // the prior's order replaces the random draws
      else
        prior.clear();
    }
  }

  std::optional<Point> take(std::size_t i) {
    proposed[i] = true;
    --left;
    return points[i];
  }

  // An unproposed config holding the most options no proposed config holds
  // (SurrogateOptions::cover_options), ties at random.
  std::optional<Point> covering_unproposed() {
    std::vector<std::vector<bool>> held;
    for (const auto& k : space.knobs()) held.emplace_back(k.options.size(), false);
    for (std::size_t i = 0; i < points.size(); ++i)
      if (proposed[i])
        for (std::size_t k = 0; k < space.depth(); ++k) held[k][points[i][k]] = true;
    std::vector<std::size_t> ties;
    std::size_t most = 0;
    for (std::size_t i = 0; i < points.size(); ++i) {
      if (proposed[i]) continue;
      std::size_t fresh = 0;
      for (std::size_t k = 0; k < space.depth(); ++k) fresh += held[k][points[i][k]] ? 0 : 1;
      if (ties.empty() || fresh > most) {
        ties.clear();
        most = fresh;
      }
      if (fresh == most) ties.push_back(i);
    }
    if (ties.empty()) return std::nullopt;
    return take(ties[rng.below(ties.size())]);
  }

  std::optional<Point> random_unproposed() {
    std::uint64_t pick = rng.below(left);
    for (std::size_t i = 0; i < points.size(); ++i)
      if (!proposed[i] && pick-- == 0) return take(i);
    return std::nullopt;
  }

  // Predicted log time of every point: ridge regression of centred log time (less the prior's
  // prediction, when `with_prior`) on the features of the configs with a time, plus that
  // prediction. Without the prior the fit is the cold one, capped at the best plus log_cap, and
  // without lone configs once skip_lone others are fitted (skip_lone_prior_led in a cold turn of
  // a search with a prior).
  Eigen::VectorXd predict(bool with_prior) const {
    std::vector<std::size_t> fit;  // indices into ok of the results fitted
    for (std::size_t r = 0; r < ok.size(); ++r)
      if (!lone[ok[r]]) fit.push_back(r);
    const std::size_t skip_after = prior.empty() ? o.skip_lone : o.skip_lone_prior_led;
    if (with_prior || skip_after == 0 || fit.size() < skip_after) {
      fit.resize(ok.size());
      for (std::size_t r = 0; r < ok.size(); ++r) fit[r] = r;
    }
    const auto m = static_cast<Eigen::Index>(fit.size());
    const Eigen::Index f = features.cols();
    Eigen::VectorXd predicted = Eigen::VectorXd::Zero(features.rows());
    if (m > 0) {
      Eigen::MatrixXd a(m, f);
      Eigen::VectorXd y(m);
      auto offset = [&](std::size_t i) { return with_prior ? prior[i] : 0.0; };
      double cap = INFINITY;
      if (!with_prior && o.log_cap > 0)
        cap = *std::min_element(log_us.begin(), log_us.end()) + o.log_cap;
      auto target = [&](std::size_t r) { return std::min(log_us[r], cap) - offset(ok[r]); };
      double mean = 0;
      for (std::size_t r : fit) mean += target(r);
      mean /= static_cast<double>(fit.size());
      for (Eigen::Index r = 0; r < m; ++r) {
        const std::size_t rr = fit[static_cast<std::size_t>(r)];
        a.row(r) = features.row(static_cast<Eigen::Index>(ok[rr]));
        y(r) = target(rr) - mean;
      }
      Eigen::MatrixXd gram = a.transpose() * a;
      gram.diagonal() += penalty;
      const auto solver = gram.ldlt();
      const Eigen::VectorXd w = solver.solve(a.transpose() * y);
      predicted = features * w;
      const double explore = prior.empty() ? o.explore : o.explore_prior_led;
      if (explore > 0 && m > 1) {
        // Posterior variance of each prediction, x' (A'A + P)^-1 x, times the results' spread.
        const Eigen::MatrixXd solved = solver.solve(features.transpose());
        const double spread = std::sqrt(y.squaredNorm() / static_cast<double>(m));
        for (Eigen::Index i = 0; i < features.rows(); ++i)
          predicted(i) -=
              explore * spread * std::sqrt(std::max(0.0, features.row(i).dot(solved.col(i))));
      }
    }
    if (with_prior)
      predicted +=
          Eigen::Map<const Eigen::VectorXd>(prior.data(), static_cast<Eigen::Index>(prior.size()));
    return predicted;
  }

  std::optional<Point> propose() {
    if (left == 0) return std::nullopt;
    // The baseline first: it anchors speedups.
    if (auto b = row.find(space.baseline()); b != row.end() && !proposed[b->second])
      return take(b->second);
    if (initial_left > 0) {
      --initial_left;
      return o.cover_options ? covering_unproposed() : random_unproposed();
    }
    if (ok.empty() && prior.empty()) return random_unproposed();
    // With a prior, every cold_every-th model proposal ignores it (SurrogateOptions::cold_every).
    bool with_prior = !prior.empty();
    if (with_prior && o.turn_floor > 0)
      with_prior = prior_led_turn();
    else if (with_prior && o.cold_every > 0 && ++model_proposals % o.cold_every == 0)
      with_prior = false;
    const Eigen::VectorXd predicted = predict(with_prior);
    // The fastest prediction; configs predicted alike (a knob the results do not tell apart)
    // are drawn among at random.
    std::vector<bool> allowed = unstuck();
    double best = INFINITY;
    for (std::size_t i = 0; i < points.size(); ++i)
      if (allowed[i]) best = std::min(best, predicted(static_cast<Eigen::Index>(i)));
    std::vector<std::size_t> ties;
    for (std::size_t i = 0; i < points.size(); ++i)
      if (allowed[i] && predicted(static_cast<Eigen::Index>(i)) <= best + 1e-9) ties.push_back(i);
    const std::size_t pick = ties[rng.below(ties.size())];
    if (!prior.empty() && o.turn_floor > 0) turn_of[pick] = with_prior ? 0 : 1;
    return take(pick);
  }

  // Whether the next model proposal of a search with a prior is the prior-led fit's
  // (SurrogateOptions::turn_floor). The prior's first pick comes before any cold turn.
  bool prior_led_turn() {
    if (recent[0].empty()) return true;
    auto mean = [](const std::deque<double>& v) {
      if (v.empty()) return 0.5;
      double sum = 0;
      for (double x : v) sum += x;
      return sum / static_cast<double>(v.size());
    };
    const double qp = mean(recent[0]), qc = mean(recent[1]);
    const double share = qp + qc > 0 ? qp / (qp + qc) : 0.5;
    return rng.real() < o.turn_floor + (1 - 2 * o.turn_floor) * share;
  }

  // The unproposed configs the model may propose next: all of them, or, when at least
  // cover_stuck results (lone configs aside) all hold one option of a knob that unproposed
  // configs hold other options of, those holding another option of such a knob.
  std::vector<bool> unstuck() const {
    std::vector<bool> allowed(points.size());
    for (std::size_t i = 0; i < points.size(); ++i) allowed[i] = !proposed[i];
    if (o.cover_stuck == 0) return allowed;
    std::vector<std::size_t> held;  // rows with a time, lone configs aside
    for (std::size_t r : ok)
      if (!lone[r]) held.push_back(r);
    if (held.size() < o.cover_stuck) return allowed;
    std::vector<bool> stuck(space.depth(), false);
    for (std::size_t k = 0; k < space.depth(); ++k) {
      stuck[k] = true;
      for (std::size_t r : held) stuck[k] = stuck[k] && points[r][k] == points[held[0]][k];
    }
    std::vector<bool> leaves(points.size(), false);  // holds another option of a stuck knob
    bool any = false;
    for (std::size_t i = 0; i < points.size(); ++i) {
      if (!allowed[i]) continue;
      for (std::size_t k = 0; k < space.depth(); ++k)
        if (stuck[k] && points[i][k] != points[held[0]][k]) leaves[i] = true;
      any = any || leaves[i];
    }
    return any ? leaves : allowed;
  }

  void observe(const Point& point, Verdict verdict, std::optional<double> time_us) {
    auto it = row.find(point);
    if (it == row.end()) return;  // not a legal config of this space
    if (!proposed[it->second]) {
      proposed[it->second] = true;
      --left;
    }
    if (observed[it->second]) return;
    observed[it->second] = true;
    const bool passed = verdict == Verdict::kOk && time_us && *time_us > 0;
    // Quality: the share of earlier ok results this one beats (1 for the first), 0 if it failed.
    double quality = 0;
    if (passed) {
      auto at = std::lower_bound(ok_sorted.begin(), ok_sorted.end(), *time_us);
      quality = ok_sorted.empty() ? 1.0
                                  : static_cast<double>(ok_sorted.end() - at) /
                                        static_cast<double>(ok_sorted.size());
      ok_sorted.insert(at, *time_us);
      ok.push_back(it->second);
      log_us.push_back(std::log(*time_us));
    }
    if (auto t = turn_of.find(it->second); t != turn_of.end()) {
      auto& r = recent[t->second];
      r.push_back(quality);
      if (r.size() > std::max<std::size_t>(1, o.turn_window)) r.pop_front();
      turn_of.erase(t);
    }
  }
};

const OptionList<SurrogateOptions>& surrogate_option_list() {
  static const OptionList<SurrogateOptions> list =
      OptionList<SurrogateOptions>()
          .add("initial_samples", &SurrogateOptions::initial_samples, at_least(0),
               "random configs after the baseline before the cost model is first fitted")
          .add("ridge", &SurrogateOptions::ridge, above(0),
               "ridge penalty of the cost model's fit (log time, centred)")
          .add("log_cap", &SurrogateOptions::log_cap, at_least(0),
               "the fit caps log time at the best so far plus this; 0: no cap")
          .add("prior_weight", &SurrogateOptions::prior_weight, at_least(0),
               "share of a prior's prediction the cost model starts from; 0: ignore the prior")
          .add("cold_every", &SurrogateOptions::cold_every, at_least(0),
               "with a prior, every this-many-th model proposal ignores it; 0: never")
          .add("cover_options", &SurrogateOptions::cover_options, between(0, 1),
               "1: the random draws after the baseline each hold the most options not yet proposed")
          .add("skip_lone", &SurrogateOptions::skip_lone, at_least(0),
               "a config alone in holding one of its options is left out of the fit once this "
               "many other results are; 0: never")
          .add("skip_lone_prior_led", &SurrogateOptions::skip_lone_prior_led, at_least(0),
               "skip_lone for the cold turns of a search with a prior; 0: never")
          .add("cover_stuck", &SurrogateOptions::cover_stuck, at_least(0),
               "once this many results all hold one option of a knob, the model proposes a "
               "config holding another; 0: never")
          .add("explore", &SurrogateOptions::explore, at_least(0),
               "each model proposal of a search without a prior is the lowest predicted log time "
               "less this many times the model's uncertainty of it; 0: the prediction alone")
          .add("explore_prior_led", &SurrogateOptions::explore_prior_led, at_least(0),
               "explore for a search with a prior")
          .add("turn_floor", &SurrogateOptions::turn_floor, between(0, 0.5),
               "with a prior, each model proposal's turn (prior-led or cold) is drawn by how good "
               "each turn's recent proposals were, neither below this share; 0: cold_every decides")
          .add("turn_window", &SurrogateOptions::turn_window, at_least(1),
               "turn_floor: each turn is judged on this many of its most recent results")
          .add("pairs", &SurrogateOptions::pairs, at_least(0),
               "the cost model also fits each pair of options of two knobs, at this many times "
               "the ridge penalty; 0: no pairs");
  return list;
}

Surrogate::Surrogate(const Space& space, std::uint64_t seed, SurrogateOptions options,
                     std::string name)
    : s_(std::make_unique<State>(space, seed, options)), name_(std::move(name)) {}
Surrogate::~Surrogate() = default;

std::optional<Point> Surrogate::propose() {
  return s_->propose();
}

void Surrogate::observe(const Point& point, Verdict verdict, std::optional<double> time_us) {
  s_->observe(point, verdict, time_us);
}

}  // namespace attune::search
