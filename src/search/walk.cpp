#include "search/walk.h"

#include <cmath>
#include <functional>
#include <limits>

#include "core/hash.h"

namespace attune::search {

Rng::Rng(std::uint64_t seed) {
  std::uint64_t x = seed;
  for (auto& s : s_) {
    x += 0x9e3779b97f4a7c15ULL;
    s = mix64(x);
  }
}

std::uint64_t Rng::next() {
  auto rotl = [](std::uint64_t v, int k) { return (v << k) | (v >> (64 - k)); };
  std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
  std::uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

std::uint64_t Rng::below(std::uint64_t n) {
  // Lemire's multiply-shift with rejection: unbiased.
  while (true) {
    unsigned __int128 m = static_cast<unsigned __int128>(next()) * n;
    std::uint64_t low = static_cast<std::uint64_t>(m);
    if (low >= n || low >= (0 - n) % n) return static_cast<std::uint64_t>(m >> 64);
  }
}

double Rng::real() {
  return static_cast<double>(next() >> 11) * 0x1.0p-53;
}

std::size_t PointHasher::operator()(const Point& p) const {
  std::uint64_t h = 0x9e3779b97f4a7c15ULL;
  for (std::uint32_t v : p) h = mix64(h ^ v);
  return static_cast<std::size_t>(h);
}

double log_cost(Verdict verdict, std::optional<double> time_us) {
  return verdict == Verdict::kOk && time_us && *time_us > 0
             ? std::log(*time_us)
             : std::numeric_limits<double>::infinity();
}

bool legal(const Space& space, const Point& point) {
  if (point.size() != space.depth()) return false;
  for (std::size_t k = 0; k < point.size(); ++k)
    if (point[k] >= space.knobs()[k].options.size()) return false;
  return space.prefix_legal(point);
}

std::optional<Point> random_completion(const Space& space, const Point& prefix, Rng& rng,
                                       const PointSet& visited, const OptionOrder& order) {
  if (prefix.size() == space.depth()) {
    if (legal(space, prefix) && !visited.count(prefix)) return prefix;
    return std::nullopt;
  }
  Point p = prefix;
  std::vector<std::uint32_t> opts = space.legal_options(p);
  if (order)
    order(p, opts);
  else
    rng.shuffle(opts);
  for (std::uint32_t o : opts) {
    p.push_back(o);
    auto r = random_completion(space, p, rng, visited, order);
    if (r) return r;
    p.pop_back();
  }
  return std::nullopt;
}

std::optional<Point> random_neighbour(const Space& space, const Point& from, Rng& rng,
                                      const PointSet& visited, std::uint32_t max_step, int tries) {
  const std::size_t depth = space.depth();
  if (depth == 0) return std::nullopt;
  for (int t = 0; t < tries; ++t) {
    std::size_t k = rng.below(depth);
    std::uint32_t n = static_cast<std::uint32_t>(space.knobs()[k].options.size());
    if (n < 2) continue;
    std::uint32_t o;
    if (max_step == 0 || max_step >= n) {
      o = static_cast<std::uint32_t>(rng.below(n - 1));
      if (o >= from[k]) ++o;
    } else {
      std::int64_t step = 1 + static_cast<std::int64_t>(rng.below(max_step));
      if (rng.below(2)) step = -step;
      std::int64_t v = static_cast<std::int64_t>(from[k]) + step;
      if (v < 0 || v >= n) v = static_cast<std::int64_t>(from[k]) - step;
      if (v < 0 || v >= n) continue;
      o = static_cast<std::uint32_t>(v);
    }
    Point p = from;
    p[k] = o;
    if (!visited.count(p) && legal(space, p)) return p;
  }
  return std::nullopt;
}

}  // namespace attune::search
