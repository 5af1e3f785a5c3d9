// The measurement rows a report reads (`attune eval`, `attune report`): a query's rows, where a
// problem the database does not know is bad input that names what it has. Uses the Store from the
// calling thread only.
#pragma once

#include <vector>

#include "core/error.h"
#include "store/store.h"

namespace attune {

// store.measurements(query); when that is empty and query.problem names neither a problem nor an
// op of the database, invalid_argument listing the problems it holds.
Result<std::vector<MeasurementRow>> select_measurements(Store& store,
                                                        const MeasurementQuery& query);

}  // namespace attune
