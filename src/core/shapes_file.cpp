#include "core/shapes_file.h"

#include <sstream>

#include <fmt/format.h>

#include "core/files.h"

namespace attune {

Result<std::vector<std::string>> parse_shapes(std::string_view text, const std::string& source,
                                              std::vector<int>* lines) {
  std::vector<std::string> out;
  std::istringstream in{std::string(text)};
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    auto last = line.find_last_not_of(" \t\r");
    out.push_back(line.substr(first, last - first + 1));
    if (lines) lines->push_back(n);
    if (out.back().find(' ') != std::string::npos)
      return Error::invalid_argument(fmt::format(
          "{}:{}: '{}' is not a problem spec (op:key=value,...)", source, n, out.back()));
  }
  if (out.empty()) return Error::invalid_argument("shapes file " + source + " lists no problems");
  return out;
}

Result<std::vector<std::string>> read_shapes_file(const std::string& path,
                                                  std::vector<int>* lines) {
  ATTUNE_ASSIGN(std::string text, read_text_file(path, "shapes file"));
  return parse_shapes(text, path, lines);
}

}  // namespace attune
