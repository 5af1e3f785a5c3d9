// attune eval: what the database holds, without a GPU. `variants` lists measured configs best
// first; `failures` groups failing configs by the knob values they share.
#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/common.h"
#include "report/failures.h"
#include "report/selection.h"

namespace attune::cli {

namespace {

struct EvalFlags {
  std::string kernel;
  std::string device;
  int limit = 20;
};

// Problem key -> display name.
std::map<std::string, std::string> problem_names(Store& store) {
  std::map<std::string, std::string> names;
  if (auto ps = store.problems())
    for (const auto& p : *ps) names[p.key] = p.problem.name();
  return names;
}

Result<std::vector<MeasurementRow>> select_rows(Store& store, const EvalFlags& f,
                                                bool failures_only, const std::string& db) {
  MeasurementQuery q;
  q.problem = f.kernel;
  q.device_key = f.device;
  if (!f.device.empty()) {
    // Only the device's key selects rows; a slug is named back to its key.
    ATTUNE_ASSIGN(std::vector<DeviceFingerprint> named, devices_named(store, f.device, db));
    if (named.size() == 1) q.device_key = named.front().key();
  }
  q.failures_only = failures_only;
  return select_measurements(store, q);
}

int run_variants(const GlobalOptions& g, const EvalFlags& f) {
  auto store = open_store_or_report(g, false, /*read_only_ok=*/true);
  if (!store) return kExitBadInput;
  auto rows = select_rows(*store, f, false, g.db);
  if (!rows) return bad_input(rows.error().message());
  auto names = problem_names(*store);
  // One line per (device, problem, backend, config): its newest rank and deploy rows.
  struct Variant {
    const MeasurementRow* rank = nullptr;
    const MeasurementRow* deploy = nullptr;
    double sort_us() const {
      for (const auto* r : {deploy, rank})
        if (r && r->outcome.verdict == Verdict::kOk && r->outcome.measurement)
          return r->outcome.measurement->median_us;
      return INFINITY;
    }
    const MeasurementRow& any() const { return deploy ? *deploy : *rank; }
    Verdict verdict() const {
      for (const auto* r : {rank, deploy})
        if (r && r->outcome.verdict != Verdict::kOk) return r->outcome.verdict;
      return Verdict::kOk;
    }
  };
  std::map<std::tuple<std::string, std::string, std::string, std::string>, Variant> by;
  for (const auto& r : *rows) {
    auto& v = by[{r.device_key, r.problem_key, r.backend, r.config}];
    (r.regime == Regime::kDeploy ? v.deploy : v.rank) = &r;  // rows come oldest first
  }
  std::vector<Variant> vs;
  for (auto& [_, v] : by) vs.push_back(v);
  std::stable_sort(vs.begin(), vs.end(),
                   [](const Variant& a, const Variant& b) { return a.sort_us() < b.sort_us(); });
  const std::size_t shown = f.limit > 0 ? std::min<std::size_t>(vs.size(), f.limit) : vs.size();
  auto us = [](const MeasurementRow* r) -> std::optional<double> {
    if (r && r->outcome.verdict == Verdict::kOk && r->outcome.measurement)
      return r->outcome.measurement->median_us;
    return std::nullopt;
  };
  if (g.json) {
    nlohmann::json out = nlohmann::json::array();
    for (std::size_t i = 0; i < shown; ++i) {
      const Variant& v = vs[i];
      const auto& r = v.any();
      auto d = us(v.deploy), k = us(v.rank);
      out.push_back({{"problem", names[r.problem_key]},
                     {"structural_key", r.problem_key},
                     {"device_key", r.device_key},
                     {"backend", r.backend},
                     {"config", r.config},
                     {"verdict", to_string(v.verdict())},
                     {"deploy_us", d ? nlohmann::json(*d) : nlohmann::json(nullptr)},
                     {"rank_us", k ? nlohmann::json(*k) : nlohmann::json(nullptr)},
                     {"message", r.outcome.message}});
    }
    fmt::print("{}\n", out.dump(2));
    return kExitOk;
  }
  if (vs.empty()) {
    fmt::print("no measurements in {}\n", g.db);
    return kExitOk;
  }
  fmt::print("{:>4}  {:<10} {:<8} {:>12} {:>12}  {:<13} {}\n", "#", "problem", "backend",
             "deploy_us", "rank_us", "verdict", "config");
  auto cell = [](std::optional<double> t) {
    return t ? fmt::format("{:.2f}", *t) : std::string("-");
  };
  for (std::size_t i = 0; i < shown; ++i) {
    const Variant& v = vs[i];
    const auto& r = v.any();
    fmt::print("{:>4}  {:<10} {:<8} {:>12} {:>12}  {:<13} {}\n", i + 1, names[r.problem_key],
               r.backend, cell(us(v.deploy)), cell(us(v.rank)), to_string(v.verdict()), r.config);
  }
  if (shown < vs.size()) fmt::print("... {} more (--limit 0 shows all)\n", vs.size() - shown);
  return kExitOk;
}

int run_failures(const GlobalOptions& g, const EvalFlags& f) {
  auto store = open_store_or_report(g, false, /*read_only_ok=*/true);
  if (!store) return kExitBadInput;
  auto rows = select_rows(*store, f, false, g.db);
  if (!rows) return bad_input(rows.error().message());
  auto names = problem_names(*store);
  auto groups = group_failures(*rows);
  auto knobs = [](const FailureGroup& gr) {
    std::string s;
    for (const auto& [k, v] : gr.shared) s += (s.empty() ? "" : ",") + k + "=" + v;
    return s.empty() ? std::string("(no shared knob value)") : s;
  };
  if (g.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& gr : groups) {
      nlohmann::json shared = nlohmann::json::object();
      for (const auto& [k, v] : gr.shared) shared[k] = v;
      out.push_back({{"problem", names[gr.problem_key]},
                     {"verdict", to_string(gr.verdict)},
                     {"count", gr.configs.size()},
                     {"shared", shared},
                     {"configs", gr.configs},
                     {"sample_message", gr.sample_message}});
    }
    fmt::print("{}\n", out.dump(2));
    return kExitOk;
  }
  if (groups.empty()) {
    fmt::print("no failing configs in {}\n", g.db);
    return kExitOk;
  }
  fmt::print("{:<10} {:<13} {:>5}  {}\n", "problem", "verdict", "count",
             "shared knob values / sample message");
  for (const auto& gr : groups) {
    fmt::print("{:<10} {:<13} {:>5}  {}\n", names[gr.problem_key], to_string(gr.verdict),
               gr.configs.size(), knobs(gr));
    if (!gr.sample_message.empty()) fmt::print("{:<31}  e.g. {}\n", "", gr.sample_message);
  }
  return kExitOk;
}

}  // namespace

Command add_eval_command(CLI::App& app, GlobalOptions& g) {
  auto* sub = app.add_subcommand("eval", "what the database holds (no GPU needed)");
  sub->require_subcommand(1);
  auto f = std::make_shared<EvalFlags>();
  auto* variants = sub->add_subcommand("variants", "measured configs, best first");
  // --problem, as tune names a problem; --kernel (tune's flag for a .cu file) stays as an alias.
  variants->add_option("--problem,--kernel", f->kernel, "problem name, op or structural key")
      ->required();
  variants->add_option("--device", f->device, "only this device key (see attune device)");
  variants->add_option("--limit", f->limit, "rows to show; 0: all")->capture_default_str();
  auto* failures =
      sub->add_subcommand("failures", "failing configs grouped by the knob values they share");
  failures->add_option("--problem,--kernel", f->kernel,
                       "problem name, op or structural key (default: all)");
  failures->add_option("--device", f->device, "only this device key");
  return {sub, [&g, f, variants] {
            return variants->parsed() ? run_variants(g, *f) : run_failures(g, *f);
          }};
}

}  // namespace attune::cli
