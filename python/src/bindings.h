// The parts of the attune Python module (_native), each registered by its own file.
#pragma once

#include <pybind11/pybind11.h>

#include <string>

namespace attune::py {

// attune.Error: every failure of attune itself (a refused table, a CUDA failure, a database that
// cannot be read); its `code` names the kind ("invalid_argument", "bad_table", "unsupported",
// "cuda", "internal", "io", "not_found", "corrupt").
[[noreturn]] void raise_error(const std::string& code, const std::string& message);
void add_error(pybind11::module_& m);

void add_runtime(pybind11::module_& m);   // Runtime: libattune-rt's C API on CUDA arrays
void add_table(pybind11::module_& m);     // Table: a tuned table's dispatch decisions, no GPU
void add_database(pybind11::module_& m);  // open_database: the store's rows as dicts

}  // namespace attune::py
