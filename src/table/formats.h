// The renderings `attune export` writes a Table in: JSON (the primary format, table.h), CSV for
// spreadsheets and scripts, and a self-contained C++ header for programs that compile their tuned
// table in. Pure functions of a valid Table; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "core/error.h"
#include "table/table.h"

namespace attune::table {

enum class Format { kJson, kCsv, kCpp };

// "json", "csv" or "cpp"; an error names the formats there are.
Result<Format> parse_format(std::string_view name);
// The file extension a table in this format is written with: "json", "csv", "h".
std::string_view extension(Format format);

// CSV (RFC 4180: fields with a comma or quote are quoted), a header line then one line per row:
//   device_key   the table's device key (a row applies only on that device)
//   op, dtype    the op table ("none": problems without a dtype attribute)
//   match        exact | bucketed
//   axis, lo, hi bucketed: the attribute and the inclusive range the row covers; empty for exact
//   points       bucketed: the measured values of axis in the range, ';'-separated
//   problem      canonical problem text (without axis for bucket rows); structural_key its hash
//   backend, config            the winning backend and config (canonical text)
//   median_us, baseline_us     deploy-regime medians (a bucket row: at its worst-regret point)
//   baseline_config, speedup   the baseline's config; baseline_us / median_us
//   error_metric, error_value, error_tolerance   the correctness gate's finding
//   max_regret   bucketed: max over points of time / best time at the point - 1; empty for exact
// The bucket rule and the full fingerprint are in the JSON table only.
std::string to_csv_text(const Table& table);

// A C++20 header that needs only the standard library: the device key, name, arch, SM count
// and memory, the format version and attune's, a constexpr std::array of rows (the CSV's
// columns) and the bucket rules, in namespace attune_tuned::<device slug with '_' for '-'>, so
// headers of several devices can be included together.
std::string to_cpp_header(const Table& table);

// The table in `format`, validated first: an invalid table is never rendered.
Result<std::string> render(const Table& table, Format format);

}  // namespace attune::table
