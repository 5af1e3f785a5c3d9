// The check libattune-rt runs on every table row at open: the row's config plans for its problem
// through the same kernel plans the tuner launches (kernels::plan), so a table naming a
// kernel or knob this build lacks is refused at open rather than failing at its first call; where
// the op says its space (OpSignature::space), the config must also be a legal point of it, a knob
// the row leaves out (one added after the table was written) counting at the baseline's value.
// Needs no driver (NVRTC is not called). Pure function: thread-safe.
#pragma once

#include "core/config.h"
#include "core/error.h"
#include "core/problem.h"

namespace attune::runtime {

Status check_row_plan(const Problem& problem, const Config& config);

}  // namespace attune::runtime
