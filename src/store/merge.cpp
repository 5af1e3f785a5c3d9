#include "store/merge.h"

#include <map>
#include <set>
#include <tuple>

namespace attune {

Result<MergeCounts> merge_stores(Store& from, Store& into) {
  MergeCounts n;
  ATTUNE_ASSIGN(std::vector<DeviceFingerprint> devices, from.devices());
  for (const auto& d : devices) {
    ATTUNE_TRY(into.put_device(d));
    ++n.devices;
  }
  ATTUNE_ASSIGN(std::vector<ProblemRecord> problems, from.problems());
  for (const auto& listed : problems) {
    // problems() leaves payloads out; find_problem carries them.
    ATTUNE_ASSIGN(std::optional<ProblemRecord> p, from.find_problem(listed.key));
    if (!p) continue;
    ATTUNE_TRY(into.put_problem(p->problem, p->payload));
    ++n.problems;
  }
  // Oldest first, so the run a run resumes is mapped before it.
  std::map<std::int64_t, std::int64_t> run_ids;
  ATTUNE_ASSIGN(std::vector<RunInfo> runs, from.runs());
  ATTUNE_ASSIGN(std::vector<RunInfo> known, into.runs());
  const std::int64_t before = static_cast<std::int64_t>(known.size());
  for (RunInfo r : runs) {
    const std::int64_t id = r.id;
    const auto resumed = run_ids.find(r.resumes);
    r.resumes = resumed == run_ids.end() ? 0 : resumed->second;
    ATTUNE_ASSIGN(run_ids[id], into.import_run(r));
  }
  ATTUNE_ASSIGN(std::vector<RunInfo> after, into.runs());
  n.runs_added = static_cast<std::int64_t>(after.size()) - before;
  n.runs_known = static_cast<std::int64_t>(runs.size()) - n.runs_added;

  std::set<std::tuple<std::string, std::string, std::string>> keys;
  ATTUNE_ASSIGN(std::vector<MeasurementRow> rows, from.measurements({}));
  for (MeasurementRow r : rows) {
    const auto run = run_ids.find(r.run_id);
    r.run_id = run == run_ids.end() ? 0 : run->second;
    ATTUNE_ASSIGN(bool added, into.import_measurement(r));
    (added ? n.measurements_added : n.measurements_known) += 1;
    keys.emplace(r.device_key, r.problem_key, r.backend);
  }
  for (const auto& [device, problem, backend] : keys) {
    ATTUNE_ASSIGN(std::optional<BaselineRecord> b, from.find_baseline(device, problem, backend));
    if (!b) continue;
    ATTUNE_TRY(into.put_baseline(*b));
    ++n.baselines;
  }
  return n;
}

}  // namespace attune
