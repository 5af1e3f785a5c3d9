// Reports of a tuning run: the JSON document DESIGN.md specifies and the text a person reads.
// Pure functions; thread-safe.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "tune/tuner.h"

namespace attune {

nlohmann::json report_json(const TuneReport& report);
std::string report_text(const TuneReport& report);

}  // namespace attune
