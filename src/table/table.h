// Table: the tuned rows for one device, as `attune export` writes them and libattune-rt reads
// them. Keyed twice (as CUTLASS's operation table is): what is computed (op, dtype; the other
// problem attributes per row) and where (the device fingerprint's key; a shape or a shape bucket
// per row). Loading validates the whole table; a table that fails any check is refused, never
// half-used. Value types: thread-safe to copy; lookups are const.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/device.h"
#include "core/error.h"
#include "core/measurement.h"
#include "core/problem.h"

namespace attune::table {

// The JSON format's name and version; a table with a newer version is refused, not guessed at.
inline constexpr std::string_view kFormat = "attune.table";
inline constexpr int kVersion = 1;

// The dtype of the op table that holds problems with no `dtype` attribute (the sim backend's,
// user kernels'): such a row matches no query that names a dtype.
inline constexpr std::string_view kNoDtype = "none";
// A problem's op table dtype: its `dtype` attribute, or kNoDtype.
std::string dtype_of(const Problem& problem);

// A range of one integer attribute (the token count M of an LLM GEMM, the rows of an RMSNorm)
// that one row covers, and the points of that range that were measured.
struct Bucket {
  std::string axis;                  // "m"
  std::int64_t lo = 0, hi = 0;       // inclusive
  std::vector<std::int64_t> points;  // measured values of axis in [lo, hi], ascending
  // Deploy-regime times at each point of the row's config and of the baseline (empty: not
  // recorded). When present, the row is no slower than the baseline at every point, and
  // `attune verify` checks the runtime's time at each point against them.
  std::vector<double> point_us, baseline_point_us;
};

struct Row {
  // The problem this row answers. For a bucketed op table, the bucket's axis attribute is absent
  // and `bucket` says which values of it the row covers.
  Problem problem;
  std::optional<Bucket> bucket;
  std::string backend;     // "cuda"
  std::string config;      // canonical Config text
  double median_us = 0;    // deploy regime; for a bucket: at its worst-regret point
  double baseline_us = 0;  // the baseline's deploy-regime time at the same point
  std::string baseline_config;
  ErrorCheck error;       // the correctness gate's finding (value <= tolerance)
  double max_regret = 0;  // bucket rows: max over points of time / best time at the point - 1
};

// How a query's shape finds its row.
struct MatchPolicy {
  enum class Kind { kExact, kBucketed };
  Kind kind = Kind::kExact;
  std::string axis;  // bucketed: the attribute whose value ranges are bucketed
  std::string rule;  // bucketed: the rule that chose each bucket's config, in words
};

struct OpTable {
  std::string op;     // "gemm"
  std::string dtype;  // "bf16"
  MatchPolicy match;
  std::vector<Row> rows;
};

struct Table {
  int version = kVersion;
  std::string attune_version;
  std::string created_at;  // ISO 8601 UTC
  DeviceFingerprint device;
  std::vector<OpTable> ops;

  // The op table for (op, dtype), or nullptr.
  const OpTable* find(std::string_view op, std::string_view dtype) const;
};

// The row of `ops` answering `problem` under its match policy, or nullptr (a miss). Exact: every
// attribute equal. Bucketed: every attribute but the axis equal and the axis value in [lo, hi].
const Row* match(const OpTable& ops, const Problem& problem);

// The backends a table row may name: those libattune-rt can dispatch (and sim, for tests).
bool known_backend(std::string_view backend);

// Checks every invariant: version, device, op tables unique per (op, dtype), rows that parse,
// belong to their op table, name a known backend, are no slower than their baseline, passed the
// gate, and do not duplicate or overlap each other. The error names the first violation.
Status validate(const Table& table);

// JSON text <-> Table. parse_table validates; a truncated file, a non-table document, a newer
// version or any invalid row is an error naming what is wrong.
std::string to_json_text(const Table& table);
Result<Table> parse_table(std::string_view json_text);
Result<Table> load_table(const std::string& path);
Status save_table(const Table& table, const std::string& path);

}  // namespace attune::table
