// The backends this build of attune has, by name. Thread-safe (no shared state).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backends/backend.h"

namespace attune {

std::vector<std::string> backend_names();
// Where a library attune loads at run time lives: $ATTUNE_PLUGIN_DIR/file when that is set, else
// beside the attune binary.
std::string plugin_path(const std::string& file);
// The backend named; an invalid_argument naming the known ones otherwise.
Result<std::unique_ptr<Backend>> make_backend(const std::string& name);
// The backend used when none is named: the GPU one when this build has it and a GPU answers,
// else sim. `why` says why a GPU backend was passed over ("" when it was not).
std::string default_backend(std::string* why);

}  // namespace attune
