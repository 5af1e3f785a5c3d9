// Reports of a tuning run: the JSON document DESIGN.md specifies and the text a person reads.
// Pure functions; thread-safe.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tune/tuner.h"

namespace attune {

// A problem's user metrics (a user kernel's spec: GFLOP/s, GB/s, ...) and the objective they
// name. The Tuner knows nothing of them: it ranks by time, and the CLI, which read the spec,
// hands the renderer these for the problems that have them.
struct ProblemMetrics {
  // The metrics' values, in the order to show them, at a median time in microseconds.
  std::function<std::vector<std::pair<std::string, double>>(double time_us)> at;
  std::string objective;  // the objective's metric, one of `at`'s names; "" : the time
  bool higher_is_better = false;
};

struct ReportOptions {
  // The metrics of a problem, or nullopt for a problem without any. Unset: no problem has any.
  std::function<std::optional<ProblemMetrics>(const Problem&)> metrics_of;
};

nlohmann::json report_json(const TuneReport& report, const ReportOptions& options = {});
// A search's configs timed again after it (ProblemReport::retimed), as both JSON reports list
// them: config, first_us, again_us.
nlohmann::json retimed_json(const std::vector<ProblemReport::Retimed>& retimed);
std::string report_text(const TuneReport& report, const ReportOptions& options = {});

}  // namespace attune
