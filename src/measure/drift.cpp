#include "measure/drift.h"

#include <algorithm>
#include <cmath>

namespace attune::measure {

DriftGuard::DriftGuard(DriftPolicy policy, ReadAnchor read, platform::Clock& clock)
    : policy_(policy), read_(std::move(read)), clock_(clock) {}

std::optional<double> DriftGuard::reading(std::optional<double> first) {
  std::vector<double> v;
  if (first) v.push_back(*first);
  while (v.size() < 3) {
    auto t = read_();
    if (!t) return std::nullopt;
    v.push_back(*t);
  }
  std::sort(v.begin(), v.end());
  return v[1];
}

bool DriftGuard::within(std::optional<double> t, double bound) const {
  return t && std::fabs(*t / *reference_ - 1) <= bound;
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
  auto t = read_();
  if (!t) {
    c.result = AnchorCheck::Result::kUnreadable;
    return c;
  }
  // One reading within the bound is enough; one outside it is confirmed by two more.
  if (!within(t, policy_.drift_bound)) t = reading(t);
  if (!t || within(t, policy_.drift_bound)) return c;
  c.result = AnchorCheck::Result::kDrifted;
  c.reading_us = *t;
  c.redo = std::move(checked);
  drifted_ = t;
  return c;
}

Settling DriftGuard::settle() {
  Settling s;
  std::optional<double> t = drifted_;
  drifted_.reset();
  double wait = policy_.backoff_s;
  for (int i = 0; i < policy_.max_backoffs && !s.recovered; ++i) {
    clock_.sleep_for(std::chrono::duration<double>(wait));
    wait *= 2;
    t = reading();
    s.recovered = within(t, policy_.recover_bound);
  }
  if (!s.recovered && t) {
    reference_ = t;
    s.new_reference_us = t;
  }
  return s;
}

}  // namespace attune::measure
