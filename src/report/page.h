// The HTML report of a tuning database (`attune report`, docs/report.md): page_data() reads what
// the Store holds into one JSON document (sections, numbers and Chart.js chart specs), and
// render_page() writes it as one self-contained page with the plotting library inlined, so the
// file opens offline. Pure functions over a Store used from the calling thread only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "store/store.h"
#include "table/table.h"

namespace attune {

// Where Debian's libjs-chart.js installs Chart.js, and the package's name for the error line.
inline constexpr std::string_view kChartJsPath = "/usr/share/javascript/chart.js/chart.min.js";
inline constexpr std::string_view kChartJsPackage = "libjs-chart.js";

// What the page covers. Empty: every run and problem in the database.
struct PageSelection {
  std::optional<std::int64_t> run;  // --run: the problems this run measured, and its curves only
  std::string problem;              // --problem: a problem name, an op or a structural key
};

// A tuned table to show beside the database (--table), and what `attune verify --json` measured
// of it (--verify; nullopt: not verified). The database does not keep verify's results.
struct TableEvidence {
  std::string path;
  table::Table table;
  std::optional<nlohmann::json> verify;
};

// The page's data: "sections" (the ids every page has, in order), "devices", "runs", "problems",
// "shapes", "failures", "health", "table" (only with a TableEvidence) and "charts" (one Chart.js
// config per chart, each with the id of the element it is drawn in). Per problem the baseline and
// the deploy-regime winner are taken from every kept row of its device (the rule `attune export`
// trusts: a config that failed anywhere is out); curves, failures and health from the selected
// runs' rows. An unknown --run or --problem is invalid_argument naming what the database has.
Result<nlohmann::json> page_data(Store& store, const PageSelection& selection,
                                 const std::optional<TableEvidence>& table = std::nullopt);

// The table section of the page data, from a table and `attune verify --json` output; an
// invalid_argument names a verify document that is not one.
Result<nlohmann::json> table_data(const TableEvidence& evidence);

// The whole page: `data` (page_data's) embedded as JSON, its sections as HTML, and the page's
// script, which draws every chart with `chart_js` (the library's text, inlined): those on the
// first screen at once, the rest as they come near the viewport or in idle slices ("?draw=all"
// in the page's URL: all at once). It writes what it drew into the #attune-status element:
// data-state ("drawing" while charts wait, then "ok"; "error" at the first error), data-charts
// (expected), data-rendered (drawn, placed and painted), data-errors (";"-separated),
// data-first-ms (from navigation start to the first screen's charts drawn) and data-render-ms
// (to the last chart drawn so far).
std::string render_page(const nlohmann::json& data, std::string_view chart_js);

// The library's text from `path`; an error naming the path and the Debian package to install.
Result<std::string> read_chart_js(const std::string& path = std::string(kChartJsPath));

}  // namespace attune
