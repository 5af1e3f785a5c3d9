// The check both stores run on a database before writing to it: every table and column of the
// schema version it records must be there (a table dropped by hand, a column removed, a
// half-copied file). Tables and columns a user added are fine. Pure functions.
#pragma once

#include <set>
#include <string>

#include "core/error.h"

namespace attune::store_schema {

// Success when `have` (the database's columns, as "table.column") holds every column of `want`
// (what schema `version`'s migrations make of an empty database); otherwise Error::corrupt in
// one line that starts with `shown` (the file or URL) and names what is missing: a table that is
// gone once, not column by column, and at most three, then how many more.
Status check_columns(const std::set<std::string>& want, const std::set<std::string>& have,
                     int version, const std::string& shown);

}  // namespace attune::store_schema
