// attune db merge: one store's results copied into another (SQLite into PostgreSQL and back), so
// a laptop's or an offline box's results join the fleet's. Idempotent: a run or measurement the
// destination already holds (Store::import_run, import_measurement) is not added again, so merging
// twice adds nothing. Reads `from`, writes `into`; each Store is used from the calling thread.
#pragma once

#include <cstdint>

#include "store/store.h"

namespace attune {

struct MergeCounts {
  std::int64_t devices = 0, problems = 0, baselines = 0;  // refreshed (kept once per key)
  std::int64_t runs_added = 0, runs_known = 0;
  std::int64_t measurements_added = 0, measurements_known = 0;
};

// Copies devices, problems (with payloads), runs, measurements that are not discarded, and the
// baselines of the (device, problem, backend) keys measured. Search nodes, priors, claims and work
// items are not copied: they belong to the store they were made in.
Result<MergeCounts> merge_stores(Store& from, Store& into);

}  // namespace attune
