// Rank statistics shared by the layers that judge a model's ranking of configs (the prior's
// calibration, the search's check of a prior against its first results). Pure: thread-safe.
#pragma once

#include <vector>

namespace attune {

// Spearman rank correlation (ties get mean ranks); 0 when the sizes differ, fewer than two
// values are given, or either side is constant.
double spearman(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace attune
