#include "search/annealing.h"

#include <cmath>
#include <limits>

#include "search/walk.h"

namespace attune::search {
namespace {

class Annealing final : public Strategy {
 public:
  Annealing(const Space& space, const StrategyOptions& o, const AnnealingOptions& a)
      : space_(space), rng_(o.seed ^ 0xa11ea1ULL), a_(a), temperature_(a.start_temperature) {}

  std::string name() const override { return "annealing"; }

  std::optional<Point> propose() override {
    std::optional<Point> p;
    if (!started_) {
      started_ = true;
      p = space_.baseline();
      if (visited_.count(*p)) p.reset();
    }
    if (!p && current_) p = random_neighbour(space_, *current_, rng_, visited_, a_.max_step);
    if (!p && current_) p = random_neighbour(space_, *current_, rng_, visited_, 0, 64);
    if (!p) p = random_completion(space_, {}, rng_, visited_);
    if (p) visited_.insert(*p);
    return p;
  }

  void observe(const Point& point, Verdict verdict, std::optional<double> time_us) override {
    visited_.insert(point);
    const double cost = log_cost(verdict, time_us);
    if (cost < best_cost_) {
      best_cost_ = cost;
      best_ = point;
      since_best_ = 0;
    } else {
      ++since_best_;
    }
    if (!current_ || cost < current_cost_ ||
        (std::isfinite(cost) &&
         rng_.real() < std::exp(-(cost - current_cost_) / std::max(temperature_, 1e-12)))) {
      current_ = point;
      current_cost_ = cost;
    }
    temperature_ = std::max(a_.end_temperature, temperature_ * a_.cooling);
    if (since_best_ >= a_.restart_after && best_) {
      // Reheat from the best config seen: the walk has wandered off without finding better.
      current_ = best_;
      current_cost_ = best_cost_;
      temperature_ = a_.start_temperature * 0.5;
      since_best_ = 0;
    }
  }

 private:
  Space space_;
  Rng rng_;
  AnnealingOptions a_;
  double temperature_;
  bool started_ = false;
  PointSet visited_;
  std::optional<Point> current_, best_;
  double current_cost_ = std::numeric_limits<double>::infinity();
  double best_cost_ = std::numeric_limits<double>::infinity();
  int since_best_ = 0;
};

}  // namespace

const OptionList<AnnealingOptions>& annealing_option_list() {
  static const OptionList<AnnealingOptions> list =
      OptionList<AnnealingOptions>()
          .add("start_temperature", &AnnealingOptions::start_temperature, above(0),
               "starting temperature in log-time units (0.3: a 30% slower move is taken ~37% of "
               "the time)")
          .add("end_temperature", &AnnealingOptions::end_temperature, at_least(0),
               "the temperature it cools to")
          .add("cooling", &AnnealingOptions::cooling, {0, 1, true},
               "temperature factor per evaluation")
          .add("max_step", &AnnealingOptions::max_step, at_least(0),
               "option positions one move may jump; 0: any")
          .add("restart_after", &AnnealingOptions::restart_after, at_least(1),
               "evaluations without a new best before restarting from the best");
  return list;
}

std::unique_ptr<Strategy> make_annealing(const Space& space, const StrategyOptions& options,
                                         const AnnealingOptions& annealing) {
  return std::make_unique<Annealing>(space, options, annealing);
}

}  // namespace attune::search
