// The replay backend as the CLI opens it: from a problem `attune import kernel-tuner` stored in
// the tuning database, whose payload is the recorded space. Used by `attune tune --backend
// replay --problem NAME`. One thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "cli/commands.h"

namespace attune::cli {

// The replay backend serving the one recorded problem named, or nullptr after printing one line
// (no database, no such problem, a problem that was not imported, more than one --problem).
std::unique_ptr<Backend> open_replay_backend_or_report(const GlobalOptions& g,
                                                       const std::vector<std::string>& problems);

}  // namespace attune::cli
