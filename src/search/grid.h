// Grid strategy: the Space's deterministic enumeration, optionally one shard of it.
#pragma once

#include "search/strategy.h"

namespace attune {

class GridStrategy final : public Strategy {
 public:
  GridStrategy(const Space& space, std::uint32_t shard_index, std::uint32_t shard_count)
      : space_(space),
        it_(space_.enumerate()),
        shard_index_(shard_index),
        shard_count_(shard_count) {}
  std::string name() const override { return "grid"; }
  std::optional<Point> propose() override;
  void observe(const Point&, Verdict, std::optional<double>) override {}

 private:
  Space space_;
  Space::Enumerator it_;
  std::uint32_t shard_index_;
  std::uint32_t shard_count_;
  std::uint64_t index_ = 0;  // enumeration index of the next point
};

}  // namespace attune
