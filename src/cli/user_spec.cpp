#include "cli/user_spec.h"

#include <limits>
#include <memory>

namespace attune::cli {

Result<CheckedSpec> check_user_spec(const std::string& spec_file, const std::string& kernel_file,
                                    const std::vector<std::string>& problems) {
  std::optional<std::filesystem::path> kernel;
  if (!kernel_file.empty()) kernel = kernel_file;
  ATTUNE_ASSIGN(user::UserKernelSpec spec, user::load_spec(spec_file, kernel));
  for (const auto& p : problems) ATTUNE_TRY(user::set_problem_sizes(spec, p));
  ATTUNE_ASSIGN(Space space, user::make_space(spec));
  // The baseline is what every candidate is compared with; one the launch check refuses on
  // every GPU (more than 1024 threads per block, a grid of 0 blocks) is the spec's mistake.
  const Config baseline = space.config(space.baseline());
  user::LaunchLimits limits;
  limits.max_shared_memory_bytes = std::numeric_limits<std::int64_t>::max();
  if (auto why = user::unsupported_reason(spec, baseline, limits))
    return Error::invalid_argument(spec.spec_path.string() + ": the defaults (" +
                                   (baseline.text().empty() ? "no knobs" : baseline.text()) +
                                   ") cannot be launched: " + *why + "; change a knob's default");
  return CheckedSpec{std::move(spec), std::move(space)};
}

ReportOptions report_options_for(const user::UserKernelSpec& spec) {
  ReportOptions o;
  if (spec.metrics.empty() && spec.objective.metric.empty()) return o;
  auto shared = std::make_shared<const user::UserKernelSpec>(spec);
  o.metrics_of = [shared](const Problem& p) -> std::optional<ProblemMetrics> {
    if (p.op() != "user") return std::nullopt;
    auto at_sizes = user::spec_for_problem(*shared, p);
    if (!at_sizes) return std::nullopt;
    auto s = std::make_shared<const user::UserKernelSpec>(std::move(at_sizes).value());
    ProblemMetrics m;
    m.at = [s](double time_us) { return user::evaluate_metrics(*s, time_us); };
    m.objective = s->objective.metric;
    m.higher_is_better = s->objective.higher_is_better;
    return m;
  };
  return o;
}

}  // namespace attune::cli
