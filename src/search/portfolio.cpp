#include "search/portfolio.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <deque>
#include <limits>
#include <unordered_map>

#include "search/genetic.h"
#include "search/walk.h"

namespace attune::search {
namespace {

constexpr int kMcts = 0;
constexpr int kGenetic = 1;

class Portfolio final : public Strategy {
 public:
  Portfolio(const Space& space, const StrategyOptions& options, const PortfolioOptions& o,
            MctsOptions mcts)
      : space_(space), rng_(options.seed ^ 0x9f07a11dULL), o_(o) {
    arms_[kMcts] = std::make_unique<Mcts>(space, options, std::move(mcts));
    GeneticOptions g;
    g.population = std::max<std::size_t>(2, o_.population);
    // Its own stream: the two arms' draws must not depend on how proposals interleave.
    StrategyOptions go = options;
    go.seed = options.seed ^ 0x51f15eedULL;
    arms_[kGenetic] = make_genetic(space, go, g);
  }

  std::string name() const override { return "portfolio"; }

  std::optional<Point> propose() override {
    const int first = choose();
    for (int arm : {first, 1 - first}) {
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
      auto& recent = recent_[static_cast<std::size_t>(it->second)];
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
  int choose() {
    if (exhausted_[kGenetic]) return kMcts;
    if (exhausted_[kMcts]) return kGenetic;
    // The baseline, mcts's initial samples and its first descents: mcts alone, and on until it
    // goes `stall` evaluations without a new best.
    if (!continued_ && observed_ + arm_of_.size() <= o_.warmup) return kMcts;
    if (!genetic_started_) {
      if (since_best_ < o_.stall) return kMcts;
      genetic_started_ = true;
    }
    const double qm = mean(recent_[kMcts]), qg = mean(recent_[kGenetic]);
    const double share = qm + qg > 0 ? qm / (qm + qg) : 0.5;
    const double p_mcts = o_.floor + (1 - 2 * o_.floor) * share;
    return rng_.real() < p_mcts ? kMcts : kGenetic;
  }

  // A point from one arm that no arm has proposed yet. An arm offering a point pending from the
  // other is asked again: it will observe that point's result when it comes.
  std::optional<Point> from(int arm) {
    if (exhausted_[static_cast<std::size_t>(arm)]) return std::nullopt;
    for (int tries = 0; tries < 8; ++tries) {
      auto p = arms_[static_cast<std::size_t>(arm)]->propose();
      if (!p) {
        exhausted_[static_cast<std::size_t>(arm)] = true;
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
  std::array<std::unique_ptr<Strategy>, 2> arms_;
  std::array<bool, 2> exhausted_{false, false};
  std::array<std::deque<double>, 2> recent_;
  std::unordered_map<Point, int, PointHasher> arm_of_;  // pending proposals -> their arm
  PointSet proposed_;
  std::vector<double> ok_times_;  // sorted
  std::size_t observed_ = 0;
  std::size_t since_best_ = 0;  // evaluations since the last new best
  bool genetic_started_ = false;
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
               "the genetic arm's population");
  return list;
}

std::unique_ptr<Strategy> make_portfolio(const Space& space, const StrategyOptions& options,
                                         const PortfolioOptions& portfolio, MctsOptions mcts) {
  return std::make_unique<Portfolio>(space, options, portfolio, std::move(mcts));
}

}  // namespace attune::search
