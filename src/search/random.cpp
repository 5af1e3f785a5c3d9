#include "search/random.h"

namespace attune {

std::uint64_t uniform_below(std::mt19937_64& rng, std::uint64_t n) {
  // Rejection sampling removes the modulo bias.
  const std::uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  std::uint64_t x;
  do x = rng();
  while (x >= limit);
  return x % n;
}

RandomStrategy::RandomStrategy(const Space& space, std::uint64_t seed)
    : space_(space), rng_(seed ^ 0x5eed5eed5eed5eedULL) {
  // Counting walks the tree once; materializing walks it again, so only spaces small enough
  // to hold are materialized.
  total_ = space_.count();
  if (total_ <= kMaterializeLimit) {
    materialized_ = true;
    order_.reserve(total_);
    for (auto e = space_.enumerate(); auto p = e.next();) order_.push_back(std::move(*p));
    for (std::size_t i = order_.size(); i > 1; --i)
      std::swap(order_[i - 1], order_[uniform_below(rng_, i)]);
  }
}

std::optional<Point> RandomStrategy::descend() {
  Point p;
  p.reserve(space_.depth());
  while (p.size() < space_.depth()) {
    auto opts = space_.legal_options(p);
    if (opts.empty()) {  // dead end: start over
      p.clear();
      continue;
    }
    p.push_back(opts[uniform_below(rng_, opts.size())]);
  }
  return p;
}

std::optional<Point> RandomStrategy::propose() {
  if (materialized_) {
    if (next_ >= order_.size()) return std::nullopt;
    return order_[next_++];
  }
  if (seen_.size() >= total_) return std::nullopt;
  // Large spaces: duplicates are rare until most of the space is seen, which no tuning run
  // with patience reaches.
  while (true) {
    auto p = descend();
    if (seen_.insert(*p).second) return p;
  }
}

}  // namespace attune
