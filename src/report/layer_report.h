// The report of a model layer tune (`attune tune --model`): per distinct kernel its op, shape,
// count in the layers, best config and time; per grouping its total; the winner; "N kernels, M
// distinct"; and the assembled-graph check, stated as not measured when it was not. JSON and
// text; docs/report.md describes the JSON. Pure functions; thread-safe.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "tune/layer_tune.h"

namespace attune {

nlohmann::json layer_report_json(const LayerTuneReport& report);
std::string layer_report_text(const LayerTuneReport& report);

}  // namespace attune
