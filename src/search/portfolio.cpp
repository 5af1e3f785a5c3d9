#include "search/portfolio.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <unordered_map>

#include "search/genetic.h"
#include "search/surrogate.h"
#include "search/walk.h"

namespace attune::search {
namespace {

constexpr std::size_t kMcts = 0;  // arms_: the tree, the genetic algorithm, then the model if on

class Portfolio final : public Strategy {
 public:
  Portfolio(const Space& space, const StrategyOptions& options, const PortfolioOptions& o,
            MctsOptions mcts)
      : space_(space), rng_(options.seed ^ 0x9f07a11dULL), o_(o) {
    arms_.push_back(std::make_unique<Mcts>(space, options, std::move(mcts)));
    GeneticOptions g;
    g.population = std::max<std::size_t>(2, o_.population);
    // Its own stream: the two arms' draws must not depend on how proposals interleave.
    StrategyOptions go = options;
    go.seed = options.seed ^ 0x51f15eedULL;
    arms_.push_back(make_genetic(space, go, g));
    // The model holds a row of features per config: at most 2^22 doubles (32 MiB) in all,
    // whatever model_limit says.
    const std::size_t most = std::min(
        o_.model_limit, (std::size_t{1} << 22) / std::max<std::size_t>(1, surrogate_width(space)));
    if (o_.model > 0 && count_up_to(space, most)) {
      // Cold: the tree already follows a prior where there is one; a model led by it too was
      // slower on the convolution spaces (the prior ranks a pocket of fast configs last).
      SurrogateOptions so;
      so.initial_samples = 0;  // the tree's initial samples are its first results
      so.log_cap = o_.model_log_cap;
      arms_.push_back(std::make_unique<Surrogate>(space, options.seed ^ 0x3d0de1ULL, so, "model"));
    }
    exhausted_.assign(arms_.size(), false);
    recent_.resize(arms_.size());
  }

  std::string name() const override { return "portfolio"; }

  std::optional<Point> propose() override {
    const std::size_t first = choose();
    for (std::size_t k = 0; k < arms_.size(); ++k) {
      const std::size_t arm = (first + k) % arms_.size();
      if (auto p = from(arm)) {
        proposed_.insert(*p);
        arm_of_[*p] = arm;
        return p;
      }
    }
    // Both arms only offered points already pending: anything not yet proposed.
    auto p = random_completion(space_, {}, rng_, proposed_);
    if (p) proposed_.insert(*p);
    return p;
  }

  void observe(const Point& point, Verdict verdict, std::optional<double> time_us) override {
    proposed_.insert(point);
    const bool ok = verdict == Verdict::kOk && time_us && *time_us > 0;
    // Quality of the result: the share of earlier passing results it beats (1 for a new best),
    // 0 for a failure. Dense where "found a new best" is rare, and scale-free.
    double quality = 0;
    if (ok) {
      auto at = std::lower_bound(ok_times_.begin(), ok_times_.end(), *time_us);
      const auto slower = static_cast<double>(ok_times_.end() - at);
      quality = ok_times_.empty() ? 1.0 : slower / static_cast<double>(ok_times_.size());
      since_best_ = at == ok_times_.begin() ? 0 : since_best_ + 1;
      ok_times_.insert(at, *time_us);
    } else {
      ++since_best_;
    }
    if (auto it = arm_of_.find(point); it != arm_of_.end()) {
      auto& recent = recent_[it->second];
      recent.push_back(quality);
      if (recent.size() > o_.window) recent.pop_front();
      arm_of_.erase(it);
    }
    ++observed_;
    for (auto& arm : arms_) arm->observe(point, verdict, time_us);
  }

  // The tree is what a later run continues; the genetic arm starts afresh from what it observes.
  std::vector<StateNode> save_state() const override { return arms_[kMcts]->save_state(); }
  Status load_state(const std::vector<StateNode>& nodes) override {
    if (Status st = arms_[kMcts]->load_state(nodes); !st.ok()) return st;
    continued_ = !nodes.empty();
    return Status::success();
  }

 private:
  // The arm for the next proposal.
  std::size_t choose() {
    std::vector<std::size_t> live;
    for (std::size_t a = 0; a < arms_.size(); ++a)
      if (!exhausted_[a]) live.push_back(a);
    if (live.empty()) return kMcts;  // propose() falls back to any point not yet proposed
    if (live.size() == 1) return live[0];
    if (!exhausted_[kMcts]) {
      // The baseline, mcts's initial samples and its first descents: mcts alone, and on until it
      // goes `stall` evaluations without a new best.
      if (!continued_ && observed_ + arm_of_.size() <= o_.warmup) return kMcts;
      if (!others_started_) {
        if (since_best_ < o_.stall) return kMcts;
        others_started_ = true;
      }
    }
    // Probability matching: each live arm's share of the proposals follows its mean quality,
    // none below the floor.
    double total = 0;
    for (std::size_t a : live) total += mean(recent_[a]);
    const auto n = static_cast<double>(live.size());
    double r = rng_.real();
    for (std::size_t a : live) {
      const double share = total > 0 ? mean(recent_[a]) / total : 1 / n;
      const double p = o_.floor + (1 - n * o_.floor) * share;
      if (r < p) return a;
      r -= p;
    }
    return live.back();
  }

  // A point from one arm that no arm has proposed yet. An arm offering a point pending from the
  // other is asked again: it will observe that point's result when it comes.
  std::optional<Point> from(std::size_t arm) {
    if (exhausted_[arm]) return std::nullopt;
    for (int tries = 0; tries < 8; ++tries) {
      auto p = arms_[arm]->propose();
      if (!p) {
        exhausted_[arm] = true;
        return std::nullopt;
      }
      if (!proposed_.count(*p)) return p;
    }
    return std::nullopt;
  }

  static double mean(const std::deque<double>& v) {
    if (v.empty()) return 0.5;
    double s = 0;
    for (double x : v) s += x;
    return s / static_cast<double>(v.size());
  }

  Space space_;
  Rng rng_;
  PortfolioOptions o_;
  std::vector<std::unique_ptr<Strategy>> arms_;
  std::vector<bool> exhausted_;
  std::vector<std::deque<double>> recent_;
  std::unordered_map<Point, std::size_t, PointHasher> arm_of_;  // pending proposals -> their arm
  PointSet proposed_;
  std::vector<double> ok_times_;  // sorted
  std::size_t observed_ = 0;
  std::size_t since_best_ = 0;   // evaluations since the last new best
  bool others_started_ = false;  // the genetic arm (and the model) have joined
  bool continued_ = false;
};

}  // namespace

const OptionList<PortfolioOptions>& portfolio_option_list() {
  static const OptionList<PortfolioOptions> list =
      OptionList<PortfolioOptions>()
          .add("floor", &PortfolioOptions::floor, between(0, 0.5),
               "each arm's least share of the proposals")
          .add("window", &PortfolioOptions::window, at_least(1),
               "an arm is judged on this many of its most recent results")
          .add("warmup", &PortfolioOptions::warmup, at_least(0),
               "evaluations after the baseline that mcts makes alone")
          .add("stall", &PortfolioOptions::stall, at_least(0),
               "the genetic arm starts once this many evaluations in a row found no new best")
          .add("population", &PortfolioOptions::population, at_least(2),
               "the genetic arm's population")
          .add("model", &PortfolioOptions::model, between(0, 1),
               "1: a cost model joins the two arms at the stall (spaces of at most model_limit "
               "configs)")
          .add("model_limit", &PortfolioOptions::model_limit, at_least(1),
               "model: the largest space it searches")
          .add("model_log_cap", &PortfolioOptions::model_log_cap, at_least(0),
               "model: the fit caps log time at the best so far plus this; 0: no cap");
  return list;
}

std::unique_ptr<Strategy> make_portfolio(const Space& space, const StrategyOptions& options,
                                         const PortfolioOptions& portfolio, MctsOptions mcts) {
  return std::make_unique<Portfolio>(space, options, portfolio, std::move(mcts));
}

}  // namespace attune::search
