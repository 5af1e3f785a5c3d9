// Random strategy: uniform over the legal configs, seeded, without replacement. Spaces up to
// kMaterializeLimit legal configs are enumerated once and shuffled; larger ones are sampled by
// random descent through the tree with duplicates rejected.
#pragma once

#include <random>
#include <set>
#include <vector>

#include "search/strategy.h"

namespace attune {

class RandomStrategy final : public Strategy {
 public:
  static constexpr std::uint64_t kMaterializeLimit = 2'000'000;

  RandomStrategy(const Space& space, std::uint64_t seed);
  std::string name() const override { return "random"; }
  std::optional<Point> propose() override;
  void observe(const Point&, Verdict, std::optional<double>) override {}

 private:
  std::optional<Point> descend();
  Space space_;
  std::mt19937_64 rng_;
  bool materialized_ = false;
  std::vector<Point> order_;
  std::size_t next_ = 0;
  std::uint64_t total_ = 0;
  std::set<Point> seen_;
};

// Uniform integer in [0, n) from a 64-bit generator, identical on every platform (unlike
// std::uniform_int_distribution, whose algorithm the standard leaves open).
std::uint64_t uniform_below(std::mt19937_64& rng, std::uint64_t n);

}  // namespace attune
