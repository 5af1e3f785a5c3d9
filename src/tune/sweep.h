// attune sweep's orchestration (docs/sweep.md): every cell of a grid tuned through the Tuner,
// then every candidate config of a group (each cell's winner and the baseline) measured in the
// deploy regime at every cell of the group through Tuner::measure(), and the times handed to
// table/sweep.h's rules. One pipeline: the store answers what it holds, the drift guard watches
// both passes, and a cell the guard finds unstable in either is dropped. One thread at a time.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "table/sweep.h"
#include "tune/tuner.h"

namespace attune {

struct SweepOptions {
  // The tuning of each cell, as `attune tune` takes it. fresh_search is always on: every cell
  // is searched from the start, whatever earlier runs saved, and the configs it proposes that
  // the store holds are answered from it, so a rerun, or a shard on a shared or a separate
  // database, tunes to the same results. time_limit_s bounds this pass only.
  TuneOptions tune;
  table::SweepRules rules;
};

struct SweepCellReport {
  table::SweepCell cell;
  ProblemReport tuned;                    // its search
  std::optional<ProblemReport> measured;  // its group's candidates measured here
  bool dropped = false;                   // no rows use it
  std::string why;                        // dropped: why, in words
};

struct SweepReport {
  DeviceFingerprint device;
  std::vector<SweepCellReport> cells;  // grid order
  table::SweepDecision decision;       // empty when interrupted
  bool interrupted = false;
  std::string interruption;
  double tune_s = 0, measure_s = 0;  // wall time of the two passes
  // Whether any cell could be tuned (kept, with a baseline that passed).
  bool any_cell() const;
};

// The sweep of `grid` on the tuner's backend. problems: the backend's resolution of each cell's
// spec (table::cell_spec), in grid order (table::grid_cells). An error only when the store or
// the backend fails; dropped cells and a grid without rows are results.
Result<SweepReport> run_sweep(Tuner& tuner, const table::SweepGrid& grid,
                              const std::vector<Problem>& problems, const SweepOptions& options,
                              const TuneObserver& observer = {});

}  // namespace attune
