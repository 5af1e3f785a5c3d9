#include "search/grid.h"

namespace attune {

std::optional<Point> GridStrategy::propose() {
  while (auto p = it_.next()) {
    if (index_++ % shard_count_ == shard_index_) return p;
  }
  return std::nullopt;
}

}  // namespace attune
