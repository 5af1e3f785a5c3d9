// attune.Table: a tuned table opened as libattune-rt opens it (validated whole, every row's config
// planned, the fingerprint guard) and its dispatch decisions, on the CPU: runtime::Selector, the
// code libattune-rt decides with, without the device. No environment is read (no
// ATTUNE_LOG_TUNED, no ATTUNE_HARVEST: those belong to a Runtime).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "bindings.h"
#include "core/problem.h"
#include "runtime/selector.h"
#ifdef ATTUNE_PY_WITH_RUNTIME
#include "runtime/row_plan.h"
#endif

namespace attune::py {

namespace pyb = pybind11;

namespace {

class Table {
 public:
  // device_json: the fingerprint of the device to decide for, as `attune device --json` prints
  // it; "" decides for the table's own device.
  Table(const std::string& path, const std::string& device_json) {
    DeviceFingerprint here;
    bool own_device = device_json.empty();
    if (!own_device) {
      auto j = nlohmann::json::parse(device_json, nullptr, false);
      auto d = j.is_discarded() ? Result<DeviceFingerprint>(Error::invalid_argument("not JSON"))
                                : device_from_json(j);
      if (!d) raise_error("invalid_argument", "device: " + d.error().message());
      here = *d;
    }
    runtime::RowCheck check;
#ifdef ATTUNE_PY_WITH_RUNTIME
    check = runtime::check_row_plan;
#endif
    if (own_device) {
      // The guard compares keys: the table's own fingerprint passes it.
      auto t = table::load_table(path);
      if (!t) raise_error("bad_table", t.error().message());
      here = t->device;
    }
    auto s = runtime::Selector::open(path, here, runtime::SelectorOptions{}, check);
    if (!s) raise_error("bad_table", s.error().message());
    selector_ = std::move(*s);
  }

  pyb::dict device() const {
    nlohmann::json j = selector_->table()->device;
    return pyb::module_::import("json").attr("loads")(j.dump());
  }
  bool device_mismatch() const {
    return selector_->device_mismatch();
  }

  pyb::list rows() const {
    pyb::list out;
    for (const auto& r : selector_->index().rows()) {
      pyb::dict row;
      row["number"] = r.number;
      row["label"] = r.label;
      row["op"] = r.row->problem.op();
      row["dtype"] = table::dtype_of(r.row->problem);
      row["problem"] = r.row->problem.text();
      row["backend"] = r.row->backend;
      row["config"] = r.row->config;
      row["median_us"] = r.row->median_us;
      row["baseline_us"] = r.row->baseline_us;
      row["bucketed"] = r.bucketed;
      row["lo"] = r.lo;
      row["hi"] = r.hi;
      out.append(row);
    }
    return out;
  }

  // What a call of `problem` (canonical text, e.g. "gemm:bias=0,dtype=bf16,k=4096,m=3,n=4096")
  // would run: the Selector's decision, counted as the Runtime counts calls.
  pyb::dict lookup(const std::string& problem) {
    auto p = Problem::parse(problem);
    if (!p) raise_error("invalid_argument", p.error().message());
    auto key = runtime::shape_key_of(*p);
    if (!key) raise_error("invalid_argument", key.error().message());
    runtime::Slot& slot = selector_->select(*key);
    const runtime::IndexedRow* r = slot.row.load(std::memory_order_acquire);
    pyb::dict out;
    out["problem"] = slot.problem;
    out["tuned"] = r != nullptr;
    out["row"] = r ? r->number : 0;
    out["why"] = slot.why;
    out["backend"] = r ? pyb::object(pyb::str(r->row->backend)) : pyb::object(pyb::none());
    out["config"] = r ? pyb::object(pyb::str(r->row->config)) : pyb::object(pyb::none());
    return out;
  }

  pyb::dict counters() const {
    const auto c = selector_->counters();
    pyb::dict out;
    out["hits"] = c.hits;
    out["misses"] = c.misses;
    out["shapes"] = c.shapes;
    out["device_mismatch"] = selector_->device_mismatch();
    return out;
  }

 private:
  std::unique_ptr<runtime::Selector> selector_;
};

}  // namespace

void add_table(pyb::module_& m) {
  using pyb::arg;
  pyb::class_<Table>(m, "Table")
      .def(pyb::init<const std::string&, const std::string&>(), arg("path"), arg("device_json"))
      .def_property_readonly("device", on_object(&Table::device))
      .def_property_readonly("device_mismatch", on_object(&Table::device_mismatch))
      .def("rows", on_object(&Table::rows))
      .def("lookup", on_object(&Table::lookup), arg("problem"))
      .def("counters", on_object(&Table::counters));
}

}  // namespace attune::py
