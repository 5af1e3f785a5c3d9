#include "search/genetic.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>

#include "search/walk.h"

namespace attune::search {
namespace {

struct Member {
  Point point;
  double cost = std::numeric_limits<double>::infinity();  // log time; +inf for failures
};

class Genetic final : public Strategy {
 public:
  Genetic(const Space& space, const StrategyOptions& o, const GeneticOptions& g)
      : space_(space), rng_(o.seed ^ 0x6e6e7cULL), g_(g) {
    if (g_.population < 2) g_.population = 2;
    g_.elite = std::min(g_.elite, g_.population - 1);
    g_.tournament = std::max<std::size_t>(1, g_.tournament);
    if (g_.mutation <= 0)
      g_.mutation = space_.depth() ? 1.0 / static_cast<double>(space_.depth()) : 0;
  }

  std::string name() const override { return "genetic"; }

  std::optional<Point> propose() override {
    if (queue_.empty()) breed();
    if (queue_.empty()) return std::nullopt;
    Point p = std::move(queue_.front());
    queue_.pop_front();
    return p;
  }

  void observe(const Point& point, Verdict verdict, std::optional<double> time_us) override {
    visited_.insert(point);
    const double cost = log_cost(verdict, time_us);
    children_.push_back({point, cost});
  }

 private:
  void breed() {
    if (first_) {
      first_ = false;
      Point base = space_.baseline();
      if (!visited_.count(base)) add(base);
      while (queue_.size() < g_.population) {
        auto p = random_completion(space_, {}, rng_, visited_);
        if (!p) break;
        add(*p);
      }
      return;
    }
    // The parents: this generation's children and last generation's elite.
    std::vector<Member> pool = std::move(children_);
    children_.clear();
    pool.insert(pool.end(), elite_.begin(), elite_.end());
    std::sort(pool.begin(), pool.end(),
              [](const Member& a, const Member& b) { return a.cost < b.cost; });
    if (pool.size() > g_.population) pool.resize(g_.population);
    elite_.assign(pool.begin(),
                  pool.begin() + static_cast<std::ptrdiff_t>(std::min(g_.elite, pool.size())));
    for (std::size_t n = 0; n < g_.population && !pool.empty(); ++n) {
      std::optional<Point> child;
      for (int t = 0; t < 16 && !child; ++t) {
        Point c = crossover(select(pool).point, select(pool).point);
        mutate(c);
        if (!visited_.count(c) && legal(space_, c)) child = c;
      }
      // A neighbour of a good parent, then anywhere unvisited.
      if (!child) child = random_neighbour(space_, select(pool).point, rng_, visited_, 0, 64);
      if (!child) child = random_completion(space_, {}, rng_, visited_);
      if (!child) break;
      add(*child);
    }
    if (queue_.empty()) {
      if (auto p = random_completion(space_, {}, rng_, visited_)) add(*p);
    }
  }

  void add(const Point& p) {
    visited_.insert(p);  // reserved: never bred again, even before its result is known
    queue_.push_back(p);
  }

  const Member& select(const std::vector<Member>& pool) {
    const Member* best = &pool[rng_.below(pool.size())];
    for (std::size_t i = 1; i < g_.tournament; ++i) {
      const Member& m = pool[rng_.below(pool.size())];
      if (m.cost < best->cost) best = &m;
    }
    return *best;
  }

  Point crossover(const Point& a, const Point& b) {
    Point c = a;
    for (std::size_t k = 0; k < c.size(); ++k)
      if (rng_.below(2)) c[k] = b[k];
    return c;
  }

  void mutate(Point& c) {
    for (std::size_t k = 0; k < c.size(); ++k) {
      std::uint64_t n = space_.knobs()[k].options.size();
      if (n > 1 && rng_.real() < g_.mutation) c[k] = static_cast<std::uint32_t>(rng_.below(n));
    }
  }

  Space space_;
  Rng rng_;
  GeneticOptions g_;
  bool first_ = true;
  PointSet visited_;
  std::deque<Point> queue_;
  std::vector<Member> children_, elite_;
};

}  // namespace

const OptionList<GeneticOptions>& genetic_option_list() {
  static const OptionList<GeneticOptions> list =
      OptionList<GeneticOptions>()
          .add("population", &GeneticOptions::population, at_least(2),
               "configs bred per generation")
          .add("elite", &GeneticOptions::elite, at_least(0),
               "survivors copied into the next generation's parents (at most population - 1)")
          .add("tournament", &GeneticOptions::tournament, at_least(1),
               "configs drawn per parent selection")
          .add("mutation", &GeneticOptions::mutation, between(0, 1),
               "per-knob mutation probability; 0: 1 / knobs");
  return list;
}

std::unique_ptr<Strategy> make_genetic(const Space& space, const StrategyOptions& options,
                                       const GeneticOptions& genetic) {
  return std::make_unique<Genetic>(space, options, genetic);
}

}  // namespace attune::search
