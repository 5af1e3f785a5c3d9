// attune.Database's reading half: a tuning database opened through the store layer (open_store:
// SQLite or PostgreSQL, refused as the CLI refuses it), its rows as plain dicts. Only reading
// methods of the Store are called; opening never creates a database (it migrates an older
// schema in place and closes this host's orphaned runs, as every attune command does).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cmath>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "bindings.h"
#include "store/store.h"

namespace attune::py {

namespace pyb = pybind11;

namespace {

std::string kind_name(Error::Kind k) {
  switch (k) {
    case Error::Kind::kInvalidArgument:
      return "invalid_argument";
    case Error::Kind::kIo:
      return "io";
    case Error::Kind::kCorrupt:
      return "corrupt";
    case Error::Kind::kNotFound:
      return "not_found";
    case Error::Kind::kUnsupported:
      return "unsupported";
    case Error::Kind::kInternal:
      break;
  }
  return "internal";
}

template <typename T>
T value_or_raise(Result<T> r) {
  if (!r) raise_error(kind_name(r.error().kind()), r.error().message());
  return std::move(*r);
}

pyb::object number_or_none(const std::optional<double>& v) {
  return v ? pyb::object(pyb::float_(*v)) : pyb::object(pyb::none());
}

pyb::dict device_dict(const DeviceFingerprint& d) {
  nlohmann::json j = d;
  pyb::dict out = pyb::module_::import("json").attr("loads")(j.dump());
  out["key"] = d.key();
  return out;
}

class Database {
 public:
  explicit Database(const std::string& url) : url_(url) {
    store_ = value_or_raise(open_store(url, /*create_if_missing=*/false));
  }

  pyb::list devices() {
    pyb::list out;
    for (const auto& d : value_or_raise(store().devices())) out.append(device_dict(d));
    return out;
  }

  pyb::list problems() {
    pyb::list out;
    for (const auto& p : value_or_raise(store().problems())) {
      pyb::dict d;
      d["name"] = p.problem.name();
      d["key"] = p.key;
      d["op"] = p.problem.op();
      d["text"] = p.problem.text();
      d["attributes"] = p.problem.attrs();
      out.append(d);
    }
    return out;
  }

  pyb::list runs() {
    pyb::list out;
    for (const auto& r : value_or_raise(store().runs())) {
      pyb::dict d;
      d["id"] = r.id;
      d["command"] = r.command;
      d["arguments"] = r.arguments;
      d["strategy"] = r.strategy;
      d["seed"] = r.seed;
      d["version"] = r.version;
      d["device_key"] = r.device_key;
      d["started_at"] = r.started_at;
      d["finished_at"] = r.finished_at;
      d["status"] = r.status;
      d["host"] = r.host;
      d["pid"] = r.pid;
      out.append(d);
    }
    return out;
  }

  pyb::list measurements(const std::string& problem, const std::string& device,
                         const std::string& backend, const std::string& regime, bool failures_only,
                         bool include_discarded) {
    MeasurementQuery q;
    q.problem = problem;
    q.device_key = device;
    q.backend = backend;
    if (!regime.empty()) {
      q.regime = regime_from_string(regime);
      if (!q.regime)
        raise_error("invalid_argument", "regime: rank or deploy, not '" + regime + "'");
    }
    q.failures_only = failures_only;
    q.include_discarded = include_discarded;
    pyb::list out;
    for (const auto& r : value_or_raise(store().measurements(q))) {
      pyb::dict d;
      d["id"] = r.id;
      d["run_id"] = r.run_id;
      d["device_key"] = r.device_key;
      d["problem_key"] = r.problem_key;
      d["backend"] = r.backend;
      d["config"] = r.config;
      d["config_hash"] = r.config_hash;
      d["regime"] = std::string(to_string(r.regime));
      d["verdict"] = std::string(to_string(r.outcome.verdict));
      const auto& m = r.outcome.measurement;
      d["median_us"] = number_or_none(m ? std::optional(m->median_us) : std::nullopt);
      d["min_us"] = number_or_none(m ? std::optional(m->min_us) : std::nullopt);
      d["max_us"] = number_or_none(m ? std::optional(m->max_us) : std::nullopt);
      d["noise"] = number_or_none(m ? std::optional(m->noise) : std::nullopt);
      d["samples"] = m ? m->samples : 0;
      d["cache"] =
          m ? pyb::object(pyb::str(std::string(to_string(m->cache)))) : pyb::object(pyb::none());
      d["sm_clock_mhz"] = m ? m->sm_clock_mhz : 0;
      d["throttle"] = m ? m->throttle : std::string();
      const auto& c = r.outcome.check;
      d["error_metric"] = c ? pyb::object(pyb::str(c->metric)) : pyb::object(pyb::none());
      d["error"] = number_or_none(c ? std::optional(c->value) : std::nullopt);
      d["tolerance"] = number_or_none(c ? std::optional(c->tolerance) : std::nullopt);
      d["message"] = r.outcome.message;
      d["created_at"] = r.created_at;
      d["discarded"] = r.discarded;
      out.append(d);
    }
    return out;
  }

  pyb::object baseline(const std::string& device_key, const std::string& problem_key,
                       const std::string& backend) {
    auto b = value_or_raise(store().find_baseline(device_key, problem_key, backend));
    if (!b) return pyb::none();
    pyb::dict d;
    d["device_key"] = b->device_key;
    d["problem_key"] = b->problem_key;
    d["backend"] = b->backend;
    d["config"] = b->config;
    d["config_hash"] = b->config_hash;
    d["recorded_at"] = b->recorded_at;
    return pyb::object(std::move(d));
  }

  const std::string& url() const { return url_; }
  void close() { store_.reset(); }

 private:
  Store& store() {
    if (!store_) raise_error("invalid_argument", "this attune.Database is closed");
    return *store_;
  }
  std::string url_;
  std::unique_ptr<Store> store_;
};

}  // namespace

void add_database(pyb::module_& m) {
  using pyb::arg;
  pyb::class_<Database>(m, "Database")
      .def(pyb::init<const std::string&>(), arg("url"))
      .def("devices", on_object(&Database::devices))
      .def("problems", on_object(&Database::problems))
      .def("runs", on_object(&Database::runs))
      .def("measurements", on_object(&Database::measurements), arg("problem") = "",
           arg("device") = "", arg("backend") = "", arg("regime") = "",
           arg("failures_only") = false, arg("include_discarded") = false)
      .def("baseline", on_object(&Database::baseline), arg("device_key"), arg("problem_key"),
           arg("backend"))
      .def_property_readonly("url", on_object(&Database::url))
      .def("close", on_object(&Database::close));
}

}  // namespace attune::py
