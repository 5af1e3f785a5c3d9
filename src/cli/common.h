// Pieces several commands share: opening the store and the backend with one clear line on
// failure, and the worker command line for isolated candidates.
#pragma once

#include <memory>
#include <string>

#include "backends/backend.h"
#include "cli/commands.h"
#include "store/store.h"

namespace attune::cli {

// The store at g.db, or nullptr after printing one line (the caller exits with kExitBadInput).
std::unique_ptr<Store> open_store_or_report(const GlobalOptions& g, bool create_if_missing);
// The backend named, or the default one (with a note on stderr); nullptr after one line.
std::unique_ptr<Backend> open_backend_or_report(const std::string& name);
// This executable's path, for starting workers.
std::string self_executable();

}  // namespace attune::cli
