// CSV fields as RFC 4180 writes them, for the files attune writes (tuned tables, traces). Pure:
// thread-safe.
#pragma once

#include <string>

namespace attune {

// `s` as one CSV field: quoted, with its quotes doubled, when it holds a comma, a quote or a line
// break; as it is otherwise.
std::string csv_field(const std::string& s);

}  // namespace attune
