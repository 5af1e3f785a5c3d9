// A user kernel's spec as the commands take it (--spec, --kernel, --problem): loaded and checked
// in the CLI's own process, with no GPU and no CUDA plugin, so `attune space` and `attune tune`
// report the spec's own errors before anything about the backend. Not thread-safe to share a
// result being filled; the functions themselves hold no state.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/space.h"
#include "kernels/user/spec.h"
#include "report/report.h"

namespace attune::cli {

struct CheckedSpec {
  user::UserKernelSpec spec;  // at the sizes --problem set
  Space space;
};

// Loads spec_file (with kernel_file, "" for the spec's `source:`), sets the sizes of each
// --problem ("n=123" or "m=64,n=4096"), makes the Space and checks that the baseline passes the
// launch check. Every error is the spec's one line ("file:line:col: what; what would be right").
Result<CheckedSpec> check_user_spec(const std::string& spec_file, const std::string& kernel_file,
                                    const std::vector<std::string>& problems);

// The report's metrics for the problems of this spec (at each problem's own sizes); unset
// when the spec declares no metric and the objective is the time.
ReportOptions report_options_for(const user::UserKernelSpec& spec);

}  // namespace attune::cli
