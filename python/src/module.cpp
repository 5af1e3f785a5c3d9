// attune._native: the compiled half of the attune package (python/attune/ is the other half).
#include <pybind11/pybind11.h>

#include "bindings.h"

namespace attune::py {

namespace {
PyObject* error_type = nullptr;
}

void raise_error(const std::string& code, const std::string& message) {
  pybind11::object e = pybind11::reinterpret_steal<pybind11::object>(
      PyObject_CallFunction(error_type, "s", message.c_str()));
  if (!e) throw pybind11::error_already_set();
  e.attr("code") = code;
  PyErr_SetObject(error_type, e.ptr());
  throw pybind11::error_already_set();
}

void add_error(pybind11::module_& m) {
  error_type = PyErr_NewExceptionWithDoc(
      "attune.Error",
      "A failure of attune: a refused table, a CUDA failure, an unreadable database. `code` "
      "names its kind.",
      PyExc_RuntimeError, nullptr);
  if (!error_type) throw pybind11::error_already_set();
  m.add_object("Error", pybind11::handle(error_type));
}

}  // namespace attune::py

PYBIND11_MODULE(_native, m) {
  m.doc() = "attune's compiled bindings; use the attune package";
  attune::py::add_error(m);
  attune::py::add_table(m);
  attune::py::add_database(m);
#ifdef ATTUNE_PY_WITH_RUNTIME
  attune::py::add_runtime(m);
  m.attr("has_runtime") = true;
#else
  m.attr("has_runtime") = false;
#endif
}
