// Failing configs grouped by the knob values every row of a group shares: what `attune eval
// failures` prints, so a planted or real fault shows as "block=64,vec=2 -> crashed x2".
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "store/store.h"

namespace attune {

struct FailureGroup {
  std::string problem_key;
  Verdict verdict = Verdict::kCrashed;
  std::vector<std::pair<std::string, std::string>> shared;  // knob=value every config here has
  std::vector<std::string> configs;
  std::string sample_message;
};

// Rows of one config are counted once (its newest row). Within each (problem, verdict), a group
// whose configs share no knob value is split on the knob value covering the most of them, until
// every group shares at least one value (or holds one config).
std::vector<FailureGroup> group_failures(const std::vector<MeasurementRow>& rows);

}  // namespace attune
