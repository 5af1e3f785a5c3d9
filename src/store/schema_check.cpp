#include "store/schema_check.h"

#include <algorithm>
#include <iterator>
#include <vector>

#include <fmt/format.h>

namespace attune::store_schema {

Status check_columns(const std::set<std::string>& want, const std::set<std::string>& have,
                     int version, const std::string& shown) {
  std::vector<std::string> missing;
  std::set_difference(want.begin(), want.end(), have.begin(), have.end(),
                      std::back_inserter(missing));
  if (missing.empty()) return Status::success();
  std::set<std::string> tables_have;
  for (const auto& c : have) tables_have.insert(c.substr(0, c.find('.')));
  std::vector<std::string> named;
  for (const auto& c : missing) {
    const std::string table = c.substr(0, c.find('.'));
    const std::string what = tables_have.count(table) ? "column " + c : "table " + table;
    if (named.empty() || named.back() != what) named.push_back(what);
  }
  std::string list;
  for (std::size_t i = 0; i < named.size() && i < 3; ++i) list += (i ? ", " : "") + named[i];
  if (named.size() > 3) list += fmt::format(" and {} more", named.size() - 3);
  return Error::corrupt(fmt::format(
      "{} is a damaged attune database (schema v{} without {}); refusing to touch it (pass "
      "another --db)",
      shown, version, list));
}

}  // namespace attune::store_schema
