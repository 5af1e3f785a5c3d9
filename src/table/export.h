// Export: the tuned Table of one device, built from what the Store holds, under the rules that
// make a table safe to bind (DESIGN.md "Tables and runtime"): only deploy-regime times of configs
// that passed the gate, no row slower than its baseline, no within-noise wins, and bucket rows
// chosen by no-harm and least maximum regret. Stateless functions; the Store is used from the
// calling thread only.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/device.h"
#include "core/error.h"
#include "store/store.h"
#include "table/table.h"

namespace attune::table {

// Which op tables are bucketed, and over which integer attribute.
struct BucketSpec {
  std::string op;    // "": every op table whose problems all carry `axis` as an integer
  std::string axis;  // "m"
};

struct ExportOptions {
  // A problem's best config becomes a row only when it saves at least this percentage of the
  // baseline's deploy time; smaller wins are within the noise of two medians, and a missing row
  // means the runtime runs the baseline, which is never wrong.
  double min_improvement_pct = 3;
  std::vector<BucketSpec> buckets;  // default: none, every op table is exact
  // Inclusive upper edges of the buckets, ascending: bucket i covers (edge[i-1], edge[i]], the
  // first one [1, edge[0]]; points above the last edge share one bucket up to the largest of
  // them. Empty: powers of two (1, 2, 4, 8, ...), so buckets [1,1] [2,2] [3,4] [5,8] ...
  std::vector<std::int64_t> bucket_edges;
  std::string attune_version;  // written into the table; default: this attune's
};

// Why a problem or a bucket has no row (or fewer rows than points): for the user, one line each.
struct ExportNote {
  std::string op, dtype;
  std::string what;  // problem text, or "gemm:k=..,n=.. m=[5, 8]"
  std::string why;
};

struct ExportResult {
  Table table;
  std::vector<ExportNote> notes;
  std::size_t problems = 0;          // problems with deploy-regime rows on this device
  std::vector<BucketSpec> bucketed;  // the specs that bucketed at least one op table
  std::size_t rows() const;
};

// A deploy row that proves its config: ok, with a measured time and a recorded gate check within
// tolerance (an ok verdict without the check is not proof of a right answer; NaN fails). The
// rows export builds tables from, and the ones `attune report` names winners by.
bool passed_gate(const MeasurementRow& row);

// "m" or "gemm:m". An error names what is wrong.
Result<BucketSpec> parse_bucket_spec(std::string_view text);
// "1,2,4,8": positive, strictly ascending integers.
Result<std::vector<std::int64_t>> parse_bucket_edges(std::string_view text);

// The table of `device` from the rows of `store`. An op table with no row is left out. An error
// only when the store cannot be read or an explicit OP:AXIS bucket spec does not fit its op's
// problems; a table with no rows is a result, and the notes say why.
Result<ExportResult> export_table(Store& store, const DeviceFingerprint& device,
                                  const ExportOptions& options);

}  // namespace attune::table
