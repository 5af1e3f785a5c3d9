#include "backends/replay/replay_backend.h"

#include <algorithm>

namespace attune::replay {

ReplayBackend::ReplayBackend(std::shared_ptr<const RecordedSpace> recorded, std::string name)
    : recorded_(std::move(recorded)), problem_(recorded_->problem()) {
  if (!name.empty()) problem_.set_name(std::move(name));
}

Result<std::unique_ptr<ReplayBackend>> ReplayBackend::from_payload(const std::string& payload,
                                                                   const std::string& name) {
  auto rs = parse_kernel_tuner_cache(payload);
  if (!rs) return rs.error().with_context("stored replay problem");
  return std::make_unique<ReplayBackend>(
      std::make_shared<const RecordedSpace>(std::move(rs).value()), name);
}

std::vector<ProblemInfo> ReplayBackend::problems() const {
  return {{problem_, "recorded space of " + recorded_->kernel_name + " on " +
                         recorded_->device_name + " (" + std::to_string(recorded_->points.size()) +
                         " configs)"}};
}

bool ReplayBackend::same_problem(const Problem& p) const {
  return p.structural_key() == problem_.structural_key();
}

Result<Problem> ReplayBackend::resolve(const std::string& spec) const {
  if (spec == problem_.name() || spec == problem_.text() || spec == problem_.structural_key())
    return problem_;
  return Error::not_found("the replay backend serves only '" + problem_.name() + "', not '" + spec +
                          "'");
}

Result<Space> ReplayBackend::space(const Problem& problem) const {
  if (!same_problem(problem))
    return Error::not_found("the replay backend has no recorded space for '" + problem.name() +
                            "'");
  return recorded_->space;
}

std::optional<std::string> ReplayBackend::can_implement(const Problem& problem,
                                                        const Config& config) const {
  if (!same_problem(problem)) return "not the recorded problem";
  auto p = recorded_->space.point(config);
  if (!p || !recorded_->find(*p)) return "config '" + config.text() + "' was not recorded";
  return std::nullopt;
}

Outcome replay_outcome(const RecordedResult& r, Regime regime) {
  Outcome o;
  o.verdict = r.verdict;
  if (r.verdict != Verdict::kOk) {
    o.message = "recorded as " + r.failure;
    return o;
  }
  Measurement m;
  m.regime = regime;
  m.cache = regime == Regime::kDeploy ? CacheState::kCold : CacheState::kWarm;
  m.median_us = r.time_us;
  if (r.samples_us.empty()) {
    m.samples = 1;
    m.min_us = m.max_us = r.time_us;
  } else {
    m.samples = static_cast<int>(r.samples_us.size());
    auto [lo, hi] = std::minmax_element(r.samples_us.begin(), r.samples_us.end());
    m.min_us = *lo;
    m.max_us = *hi;
  }
  o.measurement = m;
  o.message = "replayed";
  return o;
}

Outcome ReplayBackend::execute(const Problem& problem, const Config& config, Regime regime) {
  Outcome o;
  if (!same_problem(problem)) {
    o.verdict = Verdict::kUnsupported;
    o.message = "not the recorded problem";
    return o;
  }
  auto p = recorded_->space.point(config);
  const RecordedResult* r = p ? recorded_->find(*p) : nullptr;
  if (!r) {
    o.verdict = Verdict::kUnsupported;
    o.message = "config '" + config.text() + "' was not recorded";
    return o;
  }
  served_.insert(*p);
  return replay_outcome(*r, regime);
}

}  // namespace attune::replay
