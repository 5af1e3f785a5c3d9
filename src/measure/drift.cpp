#include "measure/drift.h"

#include <algorithm>
#include <cmath>

namespace attune::measure {

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

std::optional<AnchorLevels> anchor_levels(const std::vector<double>& readings, double drift_bound) {
  if (readings.size() < 6) return std::nullopt;
  std::vector<double> sorted = readings;
  std::sort(sorted.begin(), sorted.end());
  if (sorted.front() <= 0) return std::nullopt;
  std::size_t cut = 0;  // the low cluster is sorted[0..cut]
  double gap = 0;
  for (std::size_t i = 0; i + 1 < sorted.size(); ++i) {
    const double g = sorted[i + 1] / sorted[i] - 1;
    if (g > gap) gap = g, cut = i;
  }
  const std::size_t low_n = cut + 1, high_n = sorted.size() - low_n;
  if (low_n < 2 || high_n < 2 || gap <= drift_bound / 2) return std::nullopt;
  const double low_spread = sorted[cut] / sorted.front() - 1;
  const double high_spread = sorted.back() / sorted[cut + 1] - 1;
  if (gap <= 3 * std::max(low_spread, high_spread)) return std::nullopt;
  const double split = sorted[cut];
  int switches = 0;
  for (std::size_t i = 1; i < readings.size(); ++i)
    switches += (readings[i] > split) != (readings[i - 1] > split);
  if (switches < 4) return std::nullopt;
  AnchorLevels l;
  l.low_us = median({sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(low_n)});
  l.high_us = median({sorted.begin() + static_cast<std::ptrdiff_t>(low_n), sorted.end()});
  l.low_readings = static_cast<int>(low_n);
  l.high_readings = static_cast<int>(high_n);
  return l;
}

DriftGuard::DriftGuard(DriftPolicy policy, ReadAnchor read, platform::Clock& clock,
                       std::function<bool()> stop)
    : policy_(policy), read_(std::move(read)), clock_(clock), stop_(std::move(stop)) {}

std::optional<double> DriftGuard::read_once() {
  auto t = read_();
  if (t) {
    history_.push_back(*t);
    if (!levels_) levels_ = anchor_levels(history_, policy_.drift_bound);
  }
  return t;
}

std::optional<double> DriftGuard::reading(std::optional<double> first) {
  std::vector<double> v;
  if (first) v.push_back(*first);
  while (v.size() < 3) {
    auto t = read_once();
    if (!t) return std::nullopt;
    v.push_back(*t);
  }
  return median(v);
}

bool DriftGuard::within(std::optional<double> t, double bound) const {
  return t && std::fabs(*t / *reference_ - 1) <= bound;
}

bool DriftGuard::near_a_level(double t) const {
  if (!levels_) return false;
  for (double level : {levels_->low_us, levels_->high_us})
    if (std::fabs(t / level - 1) <= policy_.drift_bound) return true;
  return false;
}

bool DriftGuard::add(Point point, std::vector<std::int64_t> rows) {
  if (policy_.anchor_every <= 0) return false;
  if (!reference_) reference_ = reading();
  if (!reference_) return false;
  pending_.push_back({std::move(point), std::move(rows)});
  return static_cast<int>(pending_.size()) >= policy_.anchor_every;
}

AnchorCheck DriftGuard::check() {
  AnchorCheck c;
  std::vector<Pending> checked = std::move(pending_);
  pending_.clear();
  if (!reference_) return c;
  c.reference_us = *reference_;
  auto t = read_once();
  if (!t) {
    c.result = AnchorCheck::Result::kUnreadable;
    return c;
  }
  // One reading within the bound is enough; one outside it is confirmed by two more.
  if (!within(t, policy_.drift_bound)) t = reading(t);
  if (!t || within(t, policy_.drift_bound) || near_a_level(*t)) return c;
  c.reading_us = *t;
  c.redo = std::move(checked);
  // A drift event is at least one round, so a policy without waits is bounded too.
  if (++rounds_ > policy_.max_rounds) {
    c.result = AnchorCheck::Result::kUnstable;
    return c;
  }
  c.result = AnchorCheck::Result::kDrifted;
  drifted_ = t;
  return c;
}

Settling DriftGuard::settle() {
  Settling s;
  std::optional<double> t = drifted_;
  drifted_.reset();
  double wait = policy_.backoff_s;
  bool waited = false;
  for (int i = 0; i < policy_.max_backoffs && !s.recovered; ++i) {
    const double left = policy_.max_wait_s - waited_s_;
    if (left <= 0 || (waited && rounds_ >= policy_.max_rounds)) {
      s.unstable = true;
      return s;
    }
    if (waited) ++rounds_;  // the event's own round covers its first wait
    // What the clock says was waited: a caller's clock may end a wait early (a deadline).
    const auto before = clock_.now();
    clock_.sleep_for(std::chrono::duration<double>(std::min(wait, left)));
    waited_s_ += std::chrono::duration<double>(clock_.now() - before).count();
    if (stop_ && stop_()) return s;
    waited = true;
    wait *= 2;
    t = reading();
    s.recovered = within(t, policy_.recover_bound) || (t && near_a_level(*t));
  }
  if (s.recovered || !t || (stop_ && stop_())) return s;
  if (policy_.max_backoffs > 0) {
    // The new level: the median of several fresh readings, never one low or high reading.
    std::vector<double> v;
    while (static_cast<int>(v.size()) < std::max(1, policy_.rebase_readings)) {
      auto r = read_once();
      if (!r) break;
      v.push_back(*r);
    }
    if (!v.empty()) t = median(v);
  }
  reference_ = t;
  s.new_reference_us = t;
  return s;
}

}  // namespace attune::measure
