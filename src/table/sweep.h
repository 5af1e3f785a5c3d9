// attune sweep's rules (docs/sweep.md): the grid of an op's sizes in grid order, and the table
// rows a tuned grid earns, as pure functions of deploy-regime measurements: per bucket of the
// op's first size the least max regret among configs that pass no-harm at every point, the
// aggregate benefit gate, the noise-floor drop of single points, and the compression into one
// default config per (dtype, sweep_default_per sizes) with exception rows; then the rows as JSON
// lines or C++ initializers, and back into a Table (table.h) that libattune-rt loads. The bucket
// choice itself is table/bucket_rule.h's, shared with `attune export`. Pure functions of value
// types; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/device.h"
#include "core/error.h"
#include "core/measurement.h"
#include "core/op.h"
#include "core/problem.h"
#include "table/table.h"

namespace attune::table {

// The JSON lines' format name and version, in every row ("format"): a reader refuses a newer one.
inline constexpr std::string_view kSweepFormat = "attune.sweep";
inline constexpr int kSweepVersion = 1;

// The command-line flag of one of an op's sizes: "--" and the name with '_' as '-' (--q-heads).
std::string size_flag(std::string_view size);
// "1,2,4": positive integers up to max, no repeats, in the order given. `flag` names the flag
// in the error ("--batch '1,x': 'x' is not a positive integer").
Result<std::vector<std::int64_t>> parse_size_values(std::string_view flag, std::string_view text,
                                                    std::int64_t max);

struct SweepAxis {
  std::string size;                  // the op's size name
  std::vector<std::int64_t> values;  // in the order given
};

// The grid of one sweep. Grid order is dtype outermost, then the `per` sizes, then the `other`
// sizes, then the bucket axis innermost; each axis's values in the order given.
struct SweepGrid {
  std::string op;
  std::vector<std::string> dtypes;
  std::vector<SweepAxis> per;    // the op's sweep_default_per sizes, in their listed order
  std::vector<SweepAxis> other;  // the other sizes but the bucket axis, in the op's order
  SweepAxis bucket;              // the op's first size: what a row's range is over
};

// The grid of `op` from the values given per size (by size name) and the dtypes (empty: the
// op's first). A size not given takes its sweep_defaults value; one with none is an error naming
// its flag. A size the op does not have, or a dtype it does not take, is an error naming the ones
// it has.
Result<SweepGrid> make_grid(const OpSignature& op, const std::vector<std::string>& dtypes,
                            const std::map<std::string, std::vector<std::int64_t>>& sizes);

// One point of the grid.
struct SweepCell {
  std::string dtype;
  std::map<std::string, std::int64_t> sizes;  // every size of the op
  bool operator==(const SweepCell&) const = default;
};
// Every cell, in grid order.
std::vector<SweepCell> grid_cells(const SweepGrid& grid);
// The problem spec of a cell, "op:dtype=..,size=..,...", for a backend's resolve().
std::string cell_spec(const SweepGrid& grid, const SweepCell& cell);

// One config's deploy-regime evidence at one cell.
struct ConfigTime {
  double median_us = 0;
  double noise = 0;  // relative standard error of the median (Measurement::noise)
  ErrorCheck check;  // the correctness gate's finding
};

// What the sweep measured at one cell.
struct CellTimes {
  SweepCell cell;
  Problem problem;  // as the backend resolved the cell's spec
  std::string backend;
  std::string baseline_config;
  std::string winner;  // the cell's tuned best config ("": none passed)
  // Every config that passed the gate here in the deploy regime, by config text.
  std::map<std::string, ConfigTime> configs;
};

struct SweepRules {
  // Inclusive upper edges of the buckets of the bucket axis (bucket_rule.h); empty: powers of
  // two, as `attune export`'s default: a batch of 5..8 sequences runs one kernel shape.
  std::vector<std::int64_t> bucket_edges;
  // The aggregate benefit gate: a bucket whose chosen config saves less than this percentage of
  // the summed baseline time over the bucket's points stays at the baseline.
  double min_gain_pct = 5;
  // Compression: a bucket gets an exception row when the group default's regret there exceeds
  // this percentage.
  double max_default_regret_pct = 5;
  // Set: the noise floor of every group (a fraction), instead of the one derived from its
  // measurements (noise_floor()).
  std::optional<double> noise_floor;
};

// The noise floor of a group's measurements, a fraction: 2 * sqrt(2) times the 90th percentile
// (nearest rank) of the relative standard errors of their medians. The difference of two medians
// that each carry that error has a standard error sqrt(2) times it; two of those is the
// two-sided 95% bound. 0 when there are none.
double noise_floor(const std::vector<double>& noises);

// One range of the bucket axis a row covers, at one value of the sizes its row leaves open.
struct SweepCover {
  Problem problem;                                  // a cell's problem without the bucket axis
  std::map<std::string, std::int64_t> sizes;        // the other sizes' values here
  std::int64_t lo = 0, hi = 0;                      // inclusive
  std::vector<std::int64_t> points;                 // the measured points in [lo, hi], ascending
  std::vector<double> point_us, baseline_point_us;  // the row config's and baseline's, per point
  std::int64_t worst = 0;                           // the point of max regret
  double median_us = 0, baseline_us = 0;            // at `worst`
  double max_regret = 0;  // max over the points of time / the point's best time - 1
  // The correctness gate every point passed: its metric, and as value and tolerance the
  // tightest tolerance over the points (the error measured varies with the gate's random inputs;
  // the database holds it).
  ErrorCheck error;
};

struct SweepRow {
  DeviceFingerprint device;
  std::string op, dtype;
  std::string kind;  // "default" (a group's default config) or "exception" (one bucket)
  // The sizes fixed for the whole row: the sweep_default_per sizes for a default row, every
  // size but the bucket axis for an exception row.
  std::map<std::string, std::int64_t> sizes;
  std::string axis;  // the bucket axis
  std::string config, backend, baseline_config;
  // At the row's worst-regret point over its covers.
  double median_us = 0, baseline_us = 0, max_regret = 0;
  // The grid points the row's config was deploy-measured at to decide it: the group's for a
  // default row, the bucket's for an exception row.
  std::int64_t measured = 0;
  std::vector<SweepCover> covers;  // in grid order
};

// What the rules decided, for the log.
struct SweepNote {
  enum class Kind { kNoiseFloor, kCoverage, kRefused, kBaseline, kDropped, kDefault, kException };
  Kind kind;
  std::string where;  // "bf16 head=128 kv=4096 batch=[3, 4]"
  std::string text;
};

struct SweepDecision {
  std::vector<SweepRow> rows;  // in grid order: each group's default row, then its exceptions
  std::vector<SweepNote> notes;
};

// The rows of a tuned grid. cells: the cells measured (those dropped as unstable left out), in
// grid order; each candidate config (every winner of its group, and the baseline) should have
// been measured at every cell of its group: one missing a point is refused there.
SweepDecision decide_rows(const SweepGrid& grid, const std::vector<CellTimes>& cells,
                          const DeviceFingerprint& device, const SweepRules& rules);

// The rules in words, as a table's bucket rule records them.
std::string sweep_rule_text(const SweepRules& rules, const std::string& axis);

// One JSON object per line per row (docs/sweep.md), deterministic for the same rows: no time,
// run or host in them, keys in a fixed order, numbers as JSON's shortest round-trip text.
std::string to_json_lines(const std::vector<SweepRow>& rows);
// One C++ aggregate initializer per line per cover, for an array of the struct docs/sweep.md
// shows (attune::SweepRow-like: device key, op, dtype, kind, problem, axis, lo, hi, config,
// backend, median_us, baseline_us, max_regret).
std::string to_cpp_rows(const std::vector<SweepRow>& rows);
// The rows of JSON lines text (blank lines skipped); an error names the line and what is wrong.
Result<std::vector<SweepRow>> parse_sweep_rows(std::string_view jsonl);
// The rows as a Table libattune-rt loads: one bucketed op table per (op, table dtype), a row per
// cover, validated, its bucket rule naming the sweep's. All rows must name one device.
Result<Table> table_from_sweep_rows(const std::vector<SweepRow>& rows,
                                    const std::string& attune_version,
                                    const std::string& created_at);

}  // namespace attune::table
