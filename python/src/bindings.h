// The parts of the attune Python module (_native), each registered by its own file.
#pragma once

#include <pybind11/pybind11.h>

#include <string>
#include <utility>

namespace attune::py {

// attune.Error: every failure of attune itself (a refused table, a CUDA failure, a database that
// cannot be read); its `code` names the kind ("invalid_argument", "bad_table", "unsupported",
// "cuda", "internal", "io", "not_found", "corrupt").
[[noreturn]] void raise_error(const std::string& code, const std::string& message);

// A method bound through a check that the object was made: pybind11 calls a member function on
// an object made by Class.__new__ without __init__ as if it were one (a segfault); this is a
// TypeError instead.
template <class C>
C& made(pybind11::handle self) {
  auto* inst = reinterpret_cast<pybind11::detail::instance*>(self.ptr());
  if (!inst->get_value_and_holder().holder_constructed())
    throw pybind11::type_error(std::string(Py_TYPE(self.ptr())->tp_name) +
                               ": __init__ was not called");
  return self.cast<C&>();
}
template <class C, class R, class... A>
auto on_object(R (C::*f)(A...)) {
  return
      [f](pybind11::handle self, A... a) -> R { return (made<C>(self).*f)(std::forward<A>(a)...); };
}
template <class C, class R, class... A>
auto on_object(R (C::*f)(A...) const) {
  return
      [f](pybind11::handle self, A... a) -> R { return (made<C>(self).*f)(std::forward<A>(a)...); };
}

void add_error(pybind11::module_& m);

void add_runtime(pybind11::module_& m);   // Runtime: libattune-rt's C API on CUDA arrays
void add_table(pybind11::module_& m);     // Table: a tuned table's dispatch decisions, no GPU
void add_database(pybind11::module_& m);  // open_database: the store's rows as dicts

}  // namespace attune::py
