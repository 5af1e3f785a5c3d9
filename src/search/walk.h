// Moving about a Space's points for the search strategies: a small deterministic random number
// generator, visited-point sets, random legal completions with backtracking past dead ends, and
// one-knob moves. Pure functions over a Space (immutable); an Rng or PointSet is one thread's.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <unordered_set>
#include <vector>

#include "core/space.h"
#include "core/verdict.h"

namespace attune::search {

// xoshiro256** seeded through splitmix64: the same sequence on every platform for a seed (the
// standard distributions are not portable across library implementations).
class Rng {
 public:
  explicit Rng(std::uint64_t seed);
  std::uint64_t next();
  // Uniform in [0, n); n > 0.
  std::uint64_t below(std::uint64_t n);
  // Uniform in [0, 1).
  double real();
  template <typename T>
  void shuffle(std::vector<T>& v) {
    for (std::size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[below(i)]);
  }

 private:
  std::uint64_t s_[4];
};

struct PointHasher {
  std::size_t operator()(const Point& p) const;
};
using PointSet = std::unordered_set<Point, PointHasher>;

// What annealing and genetic minimise: log of the time for a passing candidate, +infinity for
// any failure (so a failed config is never preferred, whatever its verdict).
double log_cost(Verdict verdict, std::optional<double> time_us);

// A full point that satisfies every constraint.
bool legal(const Space& space, const Point& point);

// A legal full point extending `prefix` that is not in `visited`, chosen by a randomized
// depth-first walk that backtracks past dead ends and fully visited subtrees; nullopt when there
// is none. `order`, when given, ranks the legal options at a depth (first tried first) instead of
// a uniform shuffle.
using OptionOrder = std::function<void(const Point& prefix, std::vector<std::uint32_t>& options)>;
std::optional<Point> random_completion(const Space& space, const Point& prefix, Rng& rng,
                                       const PointSet& visited, const OptionOrder& order = {});

// A legal, unvisited point differing from `from` in one knob (a step of at most `max_step`
// option positions, 0 = any), tried at random; nullopt when none was found in `tries` draws.
std::optional<Point> random_neighbour(const Space& space, const Point& from, Rng& rng,
                                      const PointSet& visited, std::uint32_t max_step,
                                      int tries = 32);

}  // namespace attune::search
