// attune verify TABLE: the fidelity gate. For every row of a tuned table, libattune-rt's own
// entry point (the production path, loaded from libattune-rt.so beside attune) is timed in the
// deploy regime and compared with the row's recorded time, and what it dispatched is compared
// with the row's config. A row outside the noise band (confirmed by timing it again, judge_timing),
// or whose dispatched kernel is not the row's, fails; exit 1 when any row fails.
#include <dlfcn.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "attune/runtime_c.h"
#include "backends/registry.h"
#include "cli/common.h"
#include "table/table.h"
#include "verify/timing_band.h"

namespace attune::cli {

namespace {

struct VerifyFlags {
  std::string table;
  double band = 0.10;
  double band_floor_us = 0.25;
  int retries = 2;
};

// The C API of libattune-rt, resolved with dlsym so that attune itself never links the driver.
struct RuntimeApi {
  int (*abi_version)() = nullptr;
  int (*open)(const char*, int, attune_rt**) = nullptr;
  void (*close)(attune_rt*) = nullptr;
  const char* (*last_error)() = nullptr;
  int (*row_count)(const attune_rt*) = nullptr;
  int (*row_get)(const attune_rt*, int, attune_rt_row*) = nullptr;
  int (*time_row)(attune_rt*, int, int64_t, attune_rt_timing*) = nullptr;
  int (*counters_get)(const attune_rt*, attune_rt_counters*) = nullptr;
};

// libattune-rt beside attune (or in $ATTUNE_PLUGIN_DIR), else wherever the loader finds it
// (LD_LIBRARY_PATH, an installed prefix's lib/).
Result<RuntimeApi> load_runtime() {
  std::string path = plugin_path("libattune-rt.so.0");
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const std::string beside = dlerror();
    path = "libattune-rt.so.0";
    h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) return Error::unsupported("libattune-rt is unavailable: " + beside + "; " + dlerror());
  }
  RuntimeApi api;
  auto sym = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(h, name));
    return fn != nullptr;
  };
  if (!sym(api.abi_version, "attune_rt_abi_version") || !sym(api.open, "attune_rt_open") ||
      !sym(api.close, "attune_rt_close") || !sym(api.last_error, "attune_rt_last_error") ||
      !sym(api.row_count, "attune_rt_row_count") || !sym(api.row_get, "attune_rt_row_get") ||
      !sym(api.time_row, "attune_rt_time_row") || !sym(api.counters_get, "attune_rt_counters_get"))
    return Error::unsupported(path + " lacks an entry point attune verify needs");
  if (api.abi_version() != ATTUNE_RT_ABI_VERSION)
    return Error::unsupported(fmt::format("{} has ABI version {}, this attune needs {}", path,
                                          api.abi_version(), ATTUNE_RT_ABI_VERSION));
  return api;
}

struct Check {
  int row = 0;
  std::string problem, config, dispatched, why;
  std::int64_t at = 0;  // the axis value timed (bucket rows)
  double recorded_us = 0, measured_us = 0, noise = 0;
  std::vector<double> timings;  // more than one: the first was outside the band (judge_timing)
  bool time_ok = true, dispatch_ok = true, timed = true;
};

int run_verify(const GlobalOptions& g, const VerifyFlags& f) {
  if (!(f.band > 0)) return bad_input("--band must be a positive fraction (0.10 = 10%)");
  if (!(f.band_floor_us >= 0)) return bad_input("--band-floor-us must be >= 0 microseconds");
  // The table is checked whole here first, so a bad file is bad input even where no GPU is.
  if (auto t = table::load_table(f.table); !t) return bad_input(t.error().message());
  auto api = load_runtime();
  if (!api) return failed(api.error().message());
  attune_rt* rt = nullptr;
  if (api->open(f.table.c_str(), -1, &rt) != ATTUNE_RT_OK) return bad_input(api->last_error());
  std::unique_ptr<attune_rt, void (*)(attune_rt*)> owner(rt, api->close);
  attune_rt_counters counters{};
  api->counters_get(rt, &counters);
  if (counters.device_mismatch)
    return failed(f.table +
                  " was tuned for another device (its fingerprint key is not this device's): "
                  "every call would run the baseline; tune and export on this device");

  std::vector<Check> checks;
  const int rows = api->row_count(rt);
  for (int i = 1; i <= rows; ++i) {
    attune_rt_row row{};
    if (api->row_get(rt, i, &row) != ATTUNE_RT_OK) return failed(api->last_error());
    // An exact row is timed at its shape; a bucket row at every measured point, its time checked
    // against the table's time at that point (a table without per-point times: dispatch only, as
    // its one time belongs to one unnamed point).
    std::vector<std::int64_t> points = {0};
    if (row.bucketed) points.assign(row.points, row.points + row.point_count);
    for (std::size_t p = 0; p < points.size(); ++p) {
      // Every timing of the point; the first's dispatch is the one checked.
      attune_rt_timing first{};
      int timed_calls = 0;
      std::string error;
      auto time_once = [&]() -> double {
        attune_rt_timing t{};
        if (!error.empty() || api->time_row(rt, i, points[p], &t) != ATTUNE_RT_OK) {
          if (error.empty()) error = api->last_error();
          return std::numeric_limits<double>::infinity();
        }
        if (timed_calls++ == 0) first = t;
        return t.median_us;
      };
      Check c;
      c.row = i;
      c.config = row.config;
      c.at = points[p];
      c.recorded_us = row.bucketed && row.point_us ? row.point_us[p] : row.median_us;
      c.timed = !row.bucketed || row.point_us;
      const TimingVerdict v =
          judge_timing(c.recorded_us, time_once, f.band, f.band_floor_us, c.timed ? f.retries : 0);
      if (!error.empty()) return failed(fmt::format("row {} ({}): {}", i, row.problem, error));
      c.problem = first.dispatch.problem;
      c.dispatched = first.dispatch.config;
      c.why = first.dispatch.why;
      c.measured_us = v.measured_us;
      c.timings = v.timings;
      c.noise = first.noise;
      c.dispatch_ok =
          first.dispatch.tuned == 1 && first.dispatch.row == i && c.dispatched == c.config;
      c.time_ok = !c.timed || v.ok;
      checks.push_back(std::move(c));
    }
  }
  api->counters_get(rt, &counters);
  int failing = 0;
  for (const Check& c : checks) failing += !(c.time_ok && c.dispatch_ok);

  if (g.json) {
    nlohmann::json j{{"table", f.table},
                     {"band", f.band},
                     {"band_floor_us", f.band_floor_us},
                     {"retries", f.retries},
                     {"hits", counters.hits},
                     {"misses", counters.misses},
                     {"failing", failing},
                     {"rows", nlohmann::json::array()}};
    for (const Check& c : checks)
      j["rows"].push_back({{"row", c.row},
                           {"problem", c.problem},
                           {"config", c.config},
                           {"dispatched", c.dispatched},
                           {"why", c.why},
                           {"recorded_us", c.recorded_us},
                           {"measured_us", c.measured_us},
                           {"timings_us", c.timings},
                           {"noise", c.noise},
                           {"time_checked", c.timed},
                           {"time_ok", c.time_ok},
                           {"dispatch_ok", c.dispatch_ok},
                           {"ok", c.time_ok && c.dispatch_ok}});
    fmt::print("{}\n", j.dump(2));
  } else {
    fmt::print("{:>4}  {:<46} {:>11} {:>11} {:>7}  {}\n", "row", "problem", "recorded us",
               "measured us", "ratio", "verdict");
    for (const Check& c : checks) {
      std::string verdict = "ok";
      if (!c.dispatch_ok)
        verdict = "FAIL: dispatched " + c.dispatched + " (" + c.why + ")";
      else if (!c.time_ok)
        verdict = fmt::format("FAIL: slower than recorded by more than {:.0f}% and {:g} us",
                              100 * f.band, f.band_floor_us);
      else if (!c.timed)
        verdict = "ok (dispatch only: the table records no per-point times)";
      if (c.timings.size() > 1) {
        std::string all;
        for (double t : c.timings) all += fmt::format("{}{:.2f}", all.empty() ? "" : ", ", t);
        verdict += fmt::format(" (median of {} timings: {})", c.timings.size(), all);
      }
      fmt::print("{:>4}  {:<46} {:>11.2f} {:>11.2f} {:>7.3f}  {}\n", c.row, c.problem,
                 c.recorded_us, c.measured_us,
                 c.recorded_us > 0 ? c.measured_us / c.recorded_us : 0.0, verdict);
    }
    fmt::print(
        "{} rows, {} checks: {} hits, {} misses, {} failing (band {:.0f}%, at least {:g} us)\n",
        rows, checks.size(), counters.hits, counters.misses, failing, 100 * f.band,
        f.band_floor_us);
  }
  return failing ? kExitFailed : kExitOk;
}

}  // namespace

Command add_verify_command(CLI::App& app, GlobalOptions& g) {
  auto f = std::make_shared<VerifyFlags>();
  CLI::App* sub = app.add_subcommand(
      "verify", "time each row of a tuned table through libattune-rt and check what it dispatches");
  sub->add_option("table", f->table, "a table written by attune export (tuned/<device>.json)")
      ->required();
  sub->add_option("--band", f->band,
                  "a row fails when measured slower than recorded by more than this fraction")
      ->check(finite_number())
      ->capture_default_str();
  sub->add_option("--band-floor-us", f->band_floor_us,
                  "the band is never narrower than this many microseconds (a short kernel's timing "
                  "reproduces to about 0.2 us between processes)")
      ->check(finite_number())
      ->capture_default_str();
  sub->add_option("--retries", f->retries,
                  "a row first timed outside the band is timed this many times more and judged "
                  "by the median of all its timings (0: the first timing decides)")
      ->check(CLI::Range(0, 100))
      ->capture_default_str();
  return {sub, [&g, f] { return run_verify(g, *f); }};
}

}  // namespace attune::cli
