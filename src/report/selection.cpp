#include "report/selection.h"

namespace attune {

Result<std::vector<MeasurementRow>> select_measurements(Store& store,
                                                        const MeasurementQuery& query) {
  ATTUNE_ASSIGN(auto rows, store.measurements(query));
  if (!rows.empty() || query.problem.empty()) return rows;
  ATTUNE_ASSIGN(auto known, store.find_problem(query.problem));
  if (known) return rows;
  ATTUNE_ASSIGN(auto problems, store.problems());
  std::string names;
  for (const auto& p : problems) names += (names.empty() ? "" : ", ") + p.problem.name();
  return Error::invalid_argument(
      "no problem or op named '" + query.problem +
      "' in the database (it has: " + (names.empty() ? "nothing yet" : names) + ")");
}

}  // namespace attune
