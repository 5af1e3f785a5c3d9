// attune sweep's log (stderr; docs/sweep.md): a line per cell (its problem, baseline and best
// times, evaluated/measured, why it stopped, wall time), the drift guard's cooldown activity per
// cell, the dropped cells and why, each group's noise floor, each bucket's coverage of the bucket
// axis, every config the no-harm rule refused with the point that refused it, and the summary.
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "tune/sweep.h"

namespace attune {

// The log's lines, in grid order, without line ends.
std::vector<std::string> sweep_log(const table::SweepGrid& grid, const SweepReport& report);

}  // namespace attune
