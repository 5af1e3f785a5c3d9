#include "report/page.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include <fmt/format.h>

#include "report/failures.h"
#include "report/selection.h"
#include "table/export.h"

namespace attune {

namespace {

using nlohmann::json;

// The sections every page has, in order; "table" only when a table is given.
const std::vector<std::string> kSections = {"overview", "problems", "shapes", "failures", "health"};

// Seconds since the epoch of a store timestamp ("2026-12-02T00:10:00.123Z"); nullopt if it is
// not one.
std::optional<double> epoch_s(const std::string& t) {
  std::tm tm{};
  double sec = 0;
  if (std::sscanf(t.c_str(), "%d-%d-%dT%d:%d:%lf", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                  &tm.tm_hour, &tm.tm_min, &sec) != 6)
    return std::nullopt;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return static_cast<double>(timegm(&tm)) + sec;
}

std::optional<double> median_of(const MeasurementRow& r) {
  if (r.outcome.verdict != Verdict::kOk || !r.outcome.measurement) return std::nullopt;
  return r.outcome.measurement->median_us;
}

json or_null(std::optional<double> v) {
  return v ? json(*v) : json(nullptr);
}

// Chart.js pieces: every chart is drawn at once (no animation) and fills its box, whose height
// the page's CSS sets, so it reads at any width.
json axis(const std::string& title, const std::string& type = "linear") {
  return {{"type", type}, {"title", {{"display", true}, {"text", title}}}};
}

json chart(const std::string& id, const std::string& type, json datasets, json scales,
           json extra_options = json::object()) {
  json options = {
      {"responsive", true},
      {"maintainAspectRatio", false},
      {"animation", false},
      {"scales", std::move(scales)},
      {"plugins",
       {{"legend", {{"position", "bottom"}, {"labels", {{"boxWidth", 14}, {"boxHeight", 8}}}}}}}};
  options.update(extra_options, true);
  return {{"id", id},
          {"config",
           {{"type", type}, {"data", {{"datasets", std::move(datasets)}}}, {"options", options}}}};
}

const std::vector<std::string> kColours = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                           "#9467bd", "#8c564b", "#e377c2", "#17becf"};

// One problem on one device and backend: the unit a baseline and a winner belong to.
using UnitKey = std::tuple<std::string, std::string, std::string>;

struct Unit {
  const ProblemRecord* problem = nullptr;
  std::vector<const MeasurementRow*> kept;      // every kept row of it, oldest first
  std::set<std::int64_t> selected_runs;         // the selected runs that measured it
  std::vector<const MeasurementRow*> selected;  // its kept rows of the selected runs
};

std::string run_label(const RunInfo* run, std::int64_t id) {
  if (!run) return fmt::format("run {}", id);
  return fmt::format("run {} ({}, seed {})", id,
                     run->strategy.empty() ? run->command : run->strategy, run->seed);
}

// The baseline and the deploy-regime winner of a unit: per config its newest passing deploy row,
// a config with any failing row out, the fastest winning (ties: the first config text).
Result<json> winner_json(Store& store, const UnitKey& key, const Unit& u) {
  const auto& [device, problem, backend] = key;
  struct PerConfig {
    bool failed = false;
    const MeasurementRow* deploy = nullptr;
  };
  std::map<std::string, PerConfig> configs;
  for (const MeasurementRow* r : u.kept) {
    PerConfig& c = configs[r->config];
    if (r->outcome.verdict != Verdict::kOk ||
        (r->regime == Regime::kDeploy && !table::passed_gate(*r)))
      c.failed = true;
    else if (r->regime == Regime::kDeploy)
      c.deploy = r;
  }
  auto timing = [](const std::string& config, const MeasurementRow* r) {
    const Measurement& m = *r->outcome.measurement;
    return json{{"config", config},  {"deploy_us", m.median_us}, {"noise", m.noise},
                {"run", r->run_id},  {"samples", m.samples},     {"min_us", m.min_us},
                {"max_us", m.max_us}};
  };
  json out = {
      {"baseline", nullptr}, {"winner", nullptr}, {"speedup", nullptr}, {"speedup_noise", nullptr}};
  ATTUNE_ASSIGN(auto baseline, store.find_baseline(device, problem, backend));
  std::optional<std::pair<std::string, const MeasurementRow*>> best;
  for (const auto& [config, c] : configs)
    if (!c.failed && c.deploy &&
        (!best ||
         c.deploy->outcome.measurement->median_us < best->second->outcome.measurement->median_us))
      best = {config, c.deploy};
  if (best) out["winner"] = timing(best->first, best->second);
  if (baseline) {
    const std::string& bc = baseline->config;
    auto b = configs.find(bc);
    if (b != configs.end() && !b->second.failed && b->second.deploy) {
      out["baseline"] = timing(bc, b->second.deploy);
      if (best) {
        const Measurement& bm = *b->second.deploy->outcome.measurement;
        const Measurement& wm = *best->second->outcome.measurement;
        const double s = bm.median_us / wm.median_us;
        out["speedup"] = s;
        // Relative noises of two independent medians add in quadrature.
        out["speedup_noise"] = s * std::sqrt(bm.noise * bm.noise + wm.noise * wm.noise);
      }
    } else {
      out["baseline"] = {{"config", bc}, {"deploy_us", nullptr}};
    }
  }
  return out;
}

// One run's search of a unit, in the regime it ranked in (rank when it has rank rows): the
// evaluations in order (a config once) and the best time after each, as the points where the
// best fell plus the last evaluation (a stepped line).
json curve_json(const Unit& u, std::int64_t run, const RunInfo* info, std::size_t colour) {
  bool any_rank = false;
  for (const MeasurementRow* r : u.selected)
    if (r->run_id == run && r->regime == Regime::kRank) any_rank = true;
  const Regime regime = any_rank ? Regime::kRank : Regime::kDeploy;
  std::set<std::string> seen;
  std::optional<double> best;
  json points = json::array();
  std::int64_t n = 0;
  std::int64_t failed = 0;
  for (const MeasurementRow* r : u.selected) {
    if (r->run_id != run || r->regime != regime || !seen.insert(r->config).second) continue;
    ++n;
    auto t = median_of(*r);
    if (!t) ++failed;
    if (t && (!best || *t < *best)) {
      best = t;
      points.push_back({{"x", n}, {"y", *t}});
    }
  }
  if (best && (points.empty() || points.back()["x"] != n))
    points.push_back({{"x", n}, {"y", *best}});
  const std::string& c = kColours[colour % kColours.size()];
  return {{"run", run},
          {"label", run_label(info, run)},
          {"regime", std::string(to_string(regime))},
          {"evaluations", n},
          {"failed", failed},
          {"best_us", or_null(best)},
          {"dataset",
           {{"label", run_label(info, run) + ", " + std::string(to_string(regime)) + " regime"},
            {"data", points},
            {"stepped", "after"},
            {"borderColor", c},
            {"backgroundColor", c},
            {"pointRadius", 2},
            {"borderWidth", 2}}}};
}

// The baseline's time in a regime (its newest kept passing row), for the curve chart's line.
std::optional<double> baseline_in(const Unit& u, const std::string& config, Regime regime) {
  std::optional<double> t;
  for (const MeasurementRow* r : u.kept)
    if (r->config == config && r->regime == regime)
      if (auto m = median_of(*r)) t = m;
  return t;
}

std::string knob_text(const std::vector<std::pair<std::string, std::string>>& shared) {
  std::string s;
  for (const auto& [k, v] : shared) s += (s.empty() ? "" : ",") + k + "=" + v;
  return s;
}

// One series of points against the health section's time axis.
json time_scatter(const std::string& id, const std::string& label, json points, int radius,
                  const std::string& colour, const std::string& y_title) {
  return chart(id, "scatter",
               json::array({{{"label", label},
                             {"data", std::move(points)},
                             {"pointRadius", radius},
                             {"borderColor", colour},
                             {"backgroundColor", colour}}}),
               {{"x", axis("time since the first row shown (s)")}, {"y", axis(y_title)}});
}

// Measurement health of the selected rows (kept and discarded) over time: the SM clock (at most
// kBins bins, each its lowest and highest reading, so a long run stays small), rows per throttle
// reason, and the rows discarded at each drift event with its reason.
json health_json(const std::vector<const MeasurementRow*>& rows,
                 const std::map<std::string, std::string>& names, json& charts) {
  constexpr int kBins = 600;
  std::optional<double> t0, t1;
  for (const MeasurementRow* r : rows)
    if (auto t = epoch_s(r->created_at)) {
      if (!t0 || *t < *t0) t0 = t;
      if (!t1 || *t > *t1) t1 = t;
    }
  const double span = t0 ? std::max(*t1 - *t0, 1e-9) : 1;
  std::map<int, std::pair<json, json>> bins;  // bin -> (lowest point, highest point)
  std::map<std::string, std::int64_t> throttle;
  std::int64_t timed = 0, clocked = 0;
  struct Event {
    std::string problem, reason;
    double t_s = 0;
    std::int64_t rows = 0;
  };
  std::vector<Event> events;
  for (const MeasurementRow* r : rows) {
    const auto t = epoch_s(r->created_at);
    const double ts = t && t0 ? *t - *t0 : 0;
    if (!r->discarded.empty()) {
      auto name = names.count(r->problem_key) ? names.at(r->problem_key) : r->problem_key;
      if (events.empty() || events.back().reason != r->discarded || events.back().problem != name)
        events.push_back({name, r->discarded, ts, 0});
      ++events.back().rows;
    }
    if (!r->outcome.measurement) continue;
    const Measurement& m = *r->outcome.measurement;
    ++timed;
    ++throttle[m.throttle.empty() ? "not recorded" : m.throttle];
    if (m.sm_clock_mhz <= 0) continue;
    ++clocked;
    const int bin = std::min(kBins - 1, static_cast<int>(ts / span * kBins));
    json p = {{"x", ts}, {"y", m.sm_clock_mhz}};
    auto [it, fresh] = bins.try_emplace(bin, p, p);
    if (!fresh) {
      if (m.sm_clock_mhz < it->second.first["y"].get<int>()) it->second.first = p;
      if (m.sm_clock_mhz > it->second.second["y"].get<int>()) it->second.second = p;
    }
  }
  json clock = json::array();
  for (const auto& [_, lh] : bins) {
    clock.push_back(lh.first);
    if (lh.second != lh.first) clock.push_back(lh.second);
  }
  json discarded = json::array();
  json event_points = json::array();
  std::int64_t discarded_rows = 0;
  for (const Event& e : events) {
    discarded.push_back(
        {{"problem", e.problem}, {"reason", e.reason}, {"t_s", e.t_s}, {"rows", e.rows}});
    event_points.push_back({{"x", e.t_s}, {"y", e.rows}});
    discarded_rows += e.rows;
  }
  json throttle_j = json::object();
  for (const auto& [k, n] : throttle) throttle_j[k] = n;
  charts.push_back(time_scatter("chart-clock", "SM clock (lowest and highest per time bin)", clock,
                                2, kColours[0], "SM clock (MHz)"));
  json tl = json::array(), tn = json::array();
  for (const auto& [k, n] : throttle) {
    tl.push_back(k);
    tn.push_back(n);
  }
  json throttle_chart = chart(
      "chart-throttle", "bar",
      json::array({{{"label", "timed rows"}, {"data", tn}, {"backgroundColor", kColours[3]}}}),
      {{"x", axis("throttle reasons seen while measuring", "category")},
       {"y", axis("timed rows (count)")}},
      {{"plugins", {{"legend", {{"display", false}}}}}});
  throttle_chart["config"]["data"]["labels"] = tl;
  charts.push_back(throttle_chart);
  charts.push_back(time_scatter("chart-discarded", "rows discarded at a drift event", event_points,
                                5, kColours[1], "rows discarded (count)"));
  return {{"rows", rows.size()},
          {"timed_rows", timed},
          {"clocked_rows", clocked},
          {"span_s", t0 ? *t1 - *t0 : 0.0},
          {"clock", clock},
          {"throttle", throttle_j},
          {"discarded_rows", discarded_rows},
          {"discarded", discarded},
          // The tuner reads the anchor without recording it (src/tune/tuner.cpp read_anchor):
          // only what a drift event discarded, and why, is in the database.
          {"anchor_readings_stored", false}};
}

bool is_number(const json& j, const char* k) {
  return j.contains(k) && j[k].is_number();
}

}  // namespace

Result<nlohmann::json> table_data(const TableEvidence& e) {
  // The rows as the table's own JSON format writes them (docs/table.md), each with its op table.
  const json t = json::parse(table::to_json_text(e.table));
  json rows = json::array();
  for (const json& op : t["ops"])
    for (json row : op["rows"]) {
      row["op"] = op["op"];
      row["dtype"] = op["dtype"];
      if (!row.contains("bucket")) row["bucket"] = nullptr;
      rows.push_back(std::move(row));
    }
  json out = {{"path", e.path},
              {"device", t["device"]},
              {"created_at", t["created_at"]},
              {"attune_version", t["attune_version"]},
              {"rows", rows},
              {"verify", nullptr}};
  if (!e.verify) return out;
  const json& v = *e.verify;
  if (!v.is_object() || !v.contains("rows") || !v["rows"].is_array() || !is_number(v, "hits") ||
      !is_number(v, "misses") || !is_number(v, "band"))
    return Error::invalid_argument(
        "the --verify file is not `attune verify --json` output (it needs rows, hits, misses and "
        "band)");
  json checks = json::array();
  for (const json& c : v["rows"]) {
    if (!c.is_object() || !is_number(c, "recorded_us") || !is_number(c, "measured_us") ||
        !c.contains("ok") || !c["ok"].is_boolean())
      return Error::invalid_argument(
          "a row of the --verify file lacks recorded_us, measured_us or ok (is it `attune verify "
          "--json` output?)");
    const double rec = c["recorded_us"], mea = c["measured_us"];
    checks.push_back({{"row", c.value("row", 0)},
                      {"problem", c.value("problem", "")},
                      {"config", c.value("config", "")},
                      {"dispatched", c.value("dispatched", "")},
                      {"recorded_us", rec},
                      {"measured_us", mea},
                      {"ratio", rec > 0 ? json(mea / rec) : json(nullptr)},
                      {"time_ok", c.value("time_ok", true)},
                      {"dispatch_ok", c.value("dispatch_ok", true)},
                      {"ok", c["ok"]}});
  }
  out["verify"] = {{"band", v["band"]},
                   {"hits", v["hits"]},
                   {"misses", v["misses"]},
                   {"failing", v.value("failing", 0)},
                   {"checks", checks}};
  return out;
}

Result<nlohmann::json> page_data(Store& store, const PageSelection& sel,
                                 const std::optional<TableEvidence>& table) {
  ATTUNE_ASSIGN(auto runs, store.runs());
  ATTUNE_ASSIGN(auto devices, store.devices());
  ATTUNE_ASSIGN(auto problems, store.problems());
  std::map<std::int64_t, const RunInfo*> run_of;
  for (const auto& r : runs) run_of[r.id] = &r;
  if (sel.run && !run_of.count(*sel.run))
    return Error::invalid_argument(
        runs.empty() ? fmt::format("no run {} in the database: it holds no runs yet", *sel.run)
                     : fmt::format("no run {} in the database (it holds runs {} to {})", *sel.run,
                                   runs.front().id, runs.back().id));
  MeasurementQuery q;
  q.problem = sel.problem;
  q.include_discarded = true;
  ATTUNE_ASSIGN(auto rows, select_measurements(store, q));
  std::map<std::string, const ProblemRecord*> problem_of;
  std::map<std::string, std::string> names;
  for (const auto& p : problems) {
    problem_of[p.key] = &p;
    names[p.key] = p.problem.name();
  }
  auto selected = [&](const MeasurementRow& r) { return !sel.run || r.run_id == *sel.run; };

  std::map<UnitKey, Unit> units;
  std::vector<const MeasurementRow*> health_rows, failure_rows_p;
  std::vector<MeasurementRow> failure_rows;
  std::set<std::int64_t> shown_runs;
  std::set<std::string> shown_devices;
  for (const auto& r : rows) {
    if (selected(r)) health_rows.push_back(&r);
    if (!r.discarded.empty()) continue;
    Unit& u = units[{r.device_key, r.problem_key, r.backend}];
    u.kept.push_back(&r);
    if (!selected(r)) continue;
    u.selected.push_back(&r);
    u.selected_runs.insert(r.run_id);
    failure_rows.push_back(r);
  }
  if (sel.run) shown_runs.insert(*sel.run);

  json charts = json::array();
  json problems_j = json::array();
  std::map<std::tuple<std::string, std::string, std::string>, std::vector<json>> by_op;
  // By problem name, then device and backend: a shape list reads in its own order.
  std::vector<std::pair<std::string, const UnitKey*>> order;
  for (const auto& [key, u] : units) {
    auto p = problem_of.find(std::get<1>(key));
    order.emplace_back(p != problem_of.end() ? p->second->problem.name() : std::get<1>(key), &key);
  }
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return std::tie(a.first, *a.second) < std::tie(b.first, *b.second);
  });
  std::size_t index = 0;
  for (const auto& [_, unit_key] : order) {
    const UnitKey& key = *unit_key;
    const Unit& u = units.at(key);
    if (u.selected.empty()) continue;  // measured only by runs not shown
    const auto& [device, problem_key, backend] = key;
    shown_devices.insert(device);
    for (auto id : u.selected_runs) shown_runs.insert(id);
    auto p = problem_of.find(problem_key);
    const std::string name = p != problem_of.end() ? p->second->problem.name() : problem_key;
    const std::string spec = p != problem_of.end() ? p->second->problem.text() : problem_key;
    const std::string op = p != problem_of.end() ? p->second->problem.op() : "?";
    ATTUNE_ASSIGN(json w, winner_json(store, key, u));
    const std::string id = fmt::format("p{}", index++);
    json pj = {{"id", id},           {"problem", name},      {"spec", spec},      {"op", op},
               {"key", problem_key}, {"device_key", device}, {"backend", backend}};
    pj.update(w);
    json curves = json::array();
    json datasets = json::array();
    std::size_t colour = 0;
    std::int64_t most = 0;
    std::string regime = "rank";
    for (auto run : u.selected_runs) {
      json c = curve_json(u, run, run_of.count(run) ? run_of[run] : nullptr, colour++);
      most = std::max<std::int64_t>(most, c["evaluations"]);
      regime = c["regime"];
      datasets.push_back(c["dataset"]);
      c.erase("dataset");
      curves.push_back(c);
    }
    pj["curves"] = curves;
    std::int64_t failures = 0;
    std::set<std::string> configs;
    for (const MeasurementRow* r : u.selected) {
      configs.insert(r->config);
      failures += r->outcome.verdict != Verdict::kOk;
    }
    pj["configs"] = configs.size();
    pj["failed_rows"] = failures;
    if (!pj["baseline"].is_null()) {
      auto b = baseline_in(u, pj["baseline"]["config"], *regime_from_string(regime));
      pj["curve_baseline_us"] = or_null(b);
      if (b && most > 0)
        datasets.push_back(
            {{"label", "baseline (" + regime + " regime)"},
             {"data", json::array({{{"x", 1}, {"y", *b}}, {{"x", most}, {"y", *b}}})},
             {"borderDash", {6, 4}},
             {"borderColor", "#555"},
             {"backgroundColor", "#555"},
             {"pointRadius", 0},
             {"borderWidth", 1.5}});
    }
    charts.push_back(chart("chart-" + id, "line", datasets,
                           {{"x", axis("evaluation (candidates in visit order)", "linear")},
                            {"y", axis("best so far (µs, log)", "logarithmic")}},
                           {{"parsing", true}}));
    if (!pj["speedup"].is_null())
      by_op[{device, op, backend}].push_back(
          {{"problem", spec}, {"speedup", pj["speedup"]}, {"noise", pj["speedup_noise"]}});
    problems_j.push_back(std::move(pj));
  }

  // Shape lists: the problems of one op (on one device and backend), one bar each, sorted.
  json shapes = json::array();
  for (auto& [key, bars] : by_op) {
    if (bars.size() < 2) continue;
    const auto& [device, op, backend] = key;
    std::stable_sort(bars.begin(), bars.end(), [](const json& a, const json& b) {
      return a["speedup"].get<double>() > b["speedup"].get<double>();
    });
    json labels = json::array(), values = json::array(), spread = json::array();
    for (const json& b : bars) {
      const double s = b["speedup"], n = b["noise"].is_null() ? 0.0 : b["noise"].get<double>();
      labels.push_back(b["problem"]);
      values.push_back(s);
      spread.push_back({s - n, s + n});
    }
    const std::string id = fmt::format("chart-shapes-{}", shapes.size());
    json c = chart(id, "bar",
                   json::array({{{"label", "± noise (relative noise of both medians)"},
                                 {"data", spread},
                                 {"backgroundColor", "rgba(0,0,0,0.55)"},
                                 {"barPercentage", 0.3},
                                 {"grouped", false}},
                                {{"label", "speedup over the baseline (deploy regime)"},
                                 {"data", values},
                                 {"backgroundColor", "rgba(31,119,180,0.45)"},
                                 {"grouped", false}}}),
                   {{"x", axis("speedup over the baseline (×, deploy regime)")},
                    {"y", axis("problem", "category")}},
                   {{"indexAxis", "y"}});
    c["config"]["data"]["labels"] = labels;
    c["height_px"] = 80 + 22 * static_cast<int>(bars.size());
    charts.push_back(c);
    shapes.push_back(
        {{"chart", id}, {"op", op}, {"device_key", device}, {"backend", backend}, {"bars", bars}});
  }

  // Failures by verdict and the knob values each failing group shares (`eval failures`).
  const auto groups = group_failures(failure_rows);
  std::map<std::string, std::int64_t> by_verdict;
  json groups_j = json::array();
  for (const auto& g : groups) {
    by_verdict[std::string(to_string(g.verdict))] += static_cast<std::int64_t>(g.configs.size());
    groups_j.push_back(
        {{"problem", names.count(g.problem_key) ? names[g.problem_key] : g.problem_key},
         {"verdict", std::string(to_string(g.verdict))},
         {"count", g.configs.size()},
         {"shared", knob_text(g.shared)},
         {"configs", g.configs},
         {"sample_message", g.sample_message}});
  }
  json vl = json::array(), vn = json::array(), by_verdict_j = json::object();
  for (const auto& [v, n] : by_verdict) {
    vl.push_back(v);
    vn.push_back(n);
    by_verdict_j[v] = n;
  }
  json fc = chart(
      "chart-failures", "bar",
      json::array({{{"label", "failing configs"}, {"data", vn}, {"backgroundColor", kColours[1]}}}),
      {{"x", axis("verdict", "category")}, {"y", axis("failing configs (count)")}},
      {{"plugins", {{"legend", {{"display", false}}}}}});
  fc["config"]["data"]["labels"] = vl;
  charts.push_back(fc);

  for (const MeasurementRow* r : health_rows) shown_devices.insert(r->device_key);
  json health = health_json(health_rows, names, charts);

  json devices_j = json::array();
  for (const auto& d : devices)
    if (shown_devices.count(d.key()) || (shown_devices.empty() && !sel.run)) {
      json dj = d;
      dj["key"] = d.key();
      devices_j.push_back(dj);
    }
  json runs_j = json::array();
  for (const auto& r : runs) {
    if (!shown_runs.count(r.id) && (sel.run || !sel.problem.empty())) continue;
    json args = json::parse(r.arguments, nullptr, false);
    if (args.is_discarded()) args = r.arguments;
    runs_j.push_back({{"id", r.id},
                      {"command", r.command},
                      {"arguments", args},
                      {"strategy", r.strategy},
                      {"seed", r.seed},
                      {"version", r.version},
                      {"device_key", r.device_key},
                      {"started_at", r.started_at},
                      {"finished_at", r.finished_at},
                      {"status", r.status},
                      {"host", r.host},
                      {"resumes", r.resumes}});
  }

  json sections = kSections;
  json out = {
      {"report_version", 1},
      {"attune_version", ATTUNE_VERSION},
      {"selection", {{"run", sel.run ? json(*sel.run) : json(nullptr)}, {"problem", sel.problem}}},
      {"devices", devices_j},
      {"runs", runs_j},
      {"problems", problems_j},
      {"shapes", shapes},
      {"failures", {{"by_verdict", by_verdict_j}, {"groups", groups_j}}},
      {"health", health},
      {"table", nullptr}};
  if (table) {
    ATTUNE_ASSIGN(json t, table_data(*table));
    if (!t["verify"].is_null()) {
      json labels = json::array(), ratios = json::array(), colours = json::array();
      for (const json& c : t["verify"]["checks"]) {
        labels.push_back(
            fmt::format("row {} {}", c["row"].get<int>(), c["problem"].get<std::string>()));
        ratios.push_back(c["ratio"]);
        colours.push_back(c["ok"].get<bool>() ? kColours[2] : kColours[1]);
      }
      const double band = t["verify"]["band"];
      json vc = chart("chart-verify", "bar",
                      json::array({{{"label", "measured / recorded deploy time"},
                                    {"data", ratios},
                                    {"backgroundColor", colours}},
                                   {{"label", fmt::format("band: fails above {:.2f}", 1 + band)},
                                    {"type", "line"},
                                    {"data", json::array()},
                                    {"borderColor", "#555"},
                                    {"borderDash", {6, 4}},
                                    {"pointRadius", 0}}}),
                      {{"x", axis("table row (problem)", "category")},
                       {"y", axis("measured / recorded deploy time (ratio)")}});
      for (std::size_t i = 0; i < labels.size(); ++i)
        vc["config"]["data"]["datasets"][1]["data"].push_back(1 + band);
      vc["config"]["data"]["labels"] = labels;
      charts.push_back(vc);
    }
    out["table"] = t;
    sections.push_back("table");
  }
  out["sections"] = sections;
  out["charts"] = charts;
  return out;
}

namespace {

std::string esc(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string text_of(const json& j) {
  if (j.is_null()) return "-";
  if (j.is_string()) return j.get<std::string>();
  return j.dump();
}

std::string us_text(const json& j) {
  return j.is_number() ? fmt::format("{:.4g} µs", j.get<double>()) : "-";
}

std::string speedup_text(const json& p) {
  if (!p["speedup"].is_number()) return "-";
  std::string s = fmt::format("{:.3f}×", p["speedup"].get<double>());
  if (p["speedup_noise"].is_number())
    s += fmt::format(" ± {:.3f}", p["speedup_noise"].get<double>());
  return s;
}

// A chart's box: the page script draws into the element with the chart's id.
std::string chart_box(const std::string& id, int height_px = 0) {
  if (height_px > 0)
    return fmt::format("<div class=\"chart\" id=\"{}\" style=\"height:{}px\"></div>\n", esc(id),
                       height_px);
  return fmt::format("<div class=\"chart\" id=\"{}\"></div>\n", esc(id));
}

std::string table_html(const std::vector<std::string>& head,
                       const std::vector<std::vector<std::string>>& rows,
                       const std::string& cls = "wide") {
  std::string h = "<div class=\"scroll\"><table class=\"" + cls + "\"><thead><tr>";
  for (const auto& c : head) h += "<th>" + esc(c) + "</th>";
  h += "</tr></thead><tbody>\n";
  for (const auto& r : rows) {
    h += "<tr>";
    for (const auto& c : r) h += "<td>" + c + "</td>";  // cells are escaped by the caller
    h += "</tr>\n";
  }
  return h + "</tbody></table></div>\n";
}

std::string overview_html(const json& d) {
  std::string h = "<section id=\"overview\"><h2>Device and runs</h2>\n";
  for (const json& dev : d["devices"]) {
    std::vector<std::vector<std::string>> rows;
    for (const auto& [k, v] : dev.items()) rows.push_back({esc(k), esc(text_of(v))});
    h += "<h3>Device " + esc(dev.value("name", "")) + "</h3>\n";
    h += table_html({"field", "value"}, rows, "kv");
  }
  if (d["devices"].empty()) h += "<p>No device in the database.</p>\n";
  std::vector<std::vector<std::string>> rows;
  for (const json& r : d["runs"]) {
    std::string args;
    if (r["arguments"].is_array())
      for (const json& a : r["arguments"]) args += (args.empty() ? "" : " ") + text_of(a);
    else
      args = text_of(r["arguments"]);
    rows.push_back({esc(text_of(r["id"])), esc(text_of(r["command"])), esc(text_of(r["strategy"])),
                    esc(text_of(r["seed"])), esc(text_of(r["version"])),
                    "<span class=\"status " + esc(text_of(r["status"])) + "\">" +
                        esc(text_of(r["status"])) + "</span>",
                    esc(text_of(r["started_at"])), esc(text_of(r["finished_at"])),
                    "<code class=\"args\">" + esc(args) + "</code>"});
  }
  h += "<h3>Runs</h3>\n";
  h += table_html({"run", "command", "strategy", "seed", "attune", "ended as", "started (UTC)",
                   "finished (UTC)", "arguments"},
                  rows);
  h +=
      "<p class=\"note\">How a run ended (done, failed, interrupted) is what the database keeps of "
      "its stop; why each problem's search stopped (patience, exhausted, max_candidates, "
      "time_limit, unstable) is in <code>attune tune --json</code>'s <code>stopped_by</code>, not "
      "in "
      "the database.</p>\n";
  return h + "</section>\n";
}

std::string problems_html(const json& d) {
  std::string h = "<section id=\"problems\"><h2>Problems</h2>\n";
  if (d["problems"].empty()) h += "<p>No problem was measured by the runs shown.</p>\n";
  std::vector<std::vector<std::string>> rows;
  for (const json& p : d["problems"])
    rows.push_back({"<a href=\"#" + esc(p["id"].get<std::string>()) + "\">" +
                        esc(p["problem"].get<std::string>()) + "</a>",
                    esc(p["backend"].get<std::string>()),
                    esc(us_text(p["baseline"].is_null() ? json() : p["baseline"]["deploy_us"])),
                    esc(us_text(p["winner"].is_null() ? json() : p["winner"]["deploy_us"])),
                    esc(speedup_text(p)), esc(text_of(p["configs"])),
                    esc(text_of(p["failed_rows"]))});
  // A long list is folded, so the charts come first.
  if (!rows.empty())
    h += fmt::format("<details{}><summary>All {} problems in one table</summary>\n",
                     rows.size() > 12 ? "" : " open", rows.size()) +
         table_html({"problem", "backend", "baseline (deploy)", "winner (deploy)", "speedup",
                     "configs", "failed rows"},
                    rows) +
         "</details>\n";
  h += "<div class=\"cards\">\n";
  for (const json& p : d["problems"]) {
    const std::string id = p["id"];
    h += "<article class=\"card\" id=\"" + esc(id) + "\"><h3>" +
         esc(p["problem"].get<std::string>()) + "</h3>\n<p class=\"spec\"><code>" +
         esc(p["spec"].get<std::string>()) + "</code> on " + esc(p["backend"].get<std::string>()) +
         "</p>\n<dl>";
    auto entry = [&](const std::string& k, const std::string& v) {
      h += "<dt>" + esc(k) + "</dt><dd>" + v + "</dd>";
    };
    const json& b = p["baseline"];
    const json& w = p["winner"];
    entry("baseline", b.is_null() ? "not recorded"
                                  : esc(us_text(b["deploy_us"])) + " <code>" +
                                        esc(b["config"].get<std::string>()) + "</code>");
    entry("winner", w.is_null() ? "none passed"
                                : esc(us_text(w["deploy_us"])) + " <code>" +
                                      esc(w["config"].get<std::string>()) + "</code>");
    entry("speedup", esc(speedup_text(p)));
    h += "</dl>\n" + chart_box("chart-" + id) + "</article>\n";
  }
  return h + "</div>\n</section>\n";
}

std::string shapes_html(const json& d) {
  std::string h = "<section id=\"shapes\"><h2>Speedup per shape</h2>\n";
  if (d["shapes"].empty())
    h += "<p>No shape list: no op has two or more problems with a baseline and a winner.</p>\n";
  for (const json& s : d["shapes"]) {
    h += "<h3>" + esc(s["op"].get<std::string>()) + " on " + esc(s["backend"].get<std::string>()) +
         " (" + std::to_string(s["bars"].size()) + " shapes)</h3>\n";
    int height = 80 + 22 * static_cast<int>(s["bars"].size());
    h += chart_box(s["chart"], height);
  }
  return h + "</section>\n";
}

std::string failures_html(const json& d) {
  std::string h = "<section id=\"failures\"><h2>Failures</h2>\n";
  const json& f = d["failures"];
  if (f["groups"].empty()) {
    h += "<p>No failing config.</p>\n";
  } else {
    std::vector<std::vector<std::string>> rows;
    for (const json& g : f["groups"])
      rows.push_back(
          {esc(g["problem"].get<std::string>()), esc(g["verdict"].get<std::string>()),
           esc(text_of(g["count"])),
           "<code>" +
               esc(g["shared"].get<std::string>().empty() ? "(no shared knob value)"
                                                          : g["shared"].get<std::string>()) +
               "</code>",
           esc(g["sample_message"].get<std::string>())});
    h += table_html({"problem", "verdict", "configs", "knob values they share", "e.g."}, rows);
  }
  return h + chart_box("chart-failures") + "</section>\n";
}

std::string health_html(const json& d) {
  const json& hj = d["health"];
  std::string h = "<section id=\"health\"><h2>Measurement health</h2>\n";
  h += fmt::format(
      "<p>{} rows over {:.1f} s; {} timed, {} with an SM clock; {} discarded for drift.</p>\n",
      hj["rows"].get<std::int64_t>(), hj["span_s"].get<double>(),
      hj["timed_rows"].get<std::int64_t>(), hj["clocked_rows"].get<std::int64_t>(),
      hj["discarded_rows"].get<std::int64_t>());
  h += "<div class=\"cards\">\n<article class=\"card\"><h3>SM clock</h3>" +
       chart_box("chart-clock") + "</article>\n<article class=\"card\"><h3>Throttle reasons</h3>" +
       chart_box("chart-throttle") + "</article>\n<article class=\"card\"><h3>Discarded rows</h3>" +
       chart_box("chart-discarded") + "</article>\n</div>\n";
  if (!hj["discarded"].empty()) {
    std::vector<std::vector<std::string>> rows;
    for (const json& e : hj["discarded"])
      rows.push_back({fmt::format("{:.1f}", e["t_s"].get<double>()),
                      esc(e["problem"].get<std::string>()), esc(text_of(e["rows"])),
                      esc(e["reason"].get<std::string>())});
    h += table_html({"at (s)", "problem", "rows discarded", "why"}, rows);
  }
  h += "<p class=\"note\">The anchor's clean readings are not kept in the database (the tuner "
       "reads the anchor without recording it): what a drift event discarded, and the anchor's "
       "move that caused it, are. <code>attune tune --json</code> gives each problem's "
       "<code>anchor_readings</code>.</p>\n";
  return h + "</section>\n";
}

std::string table_section_html(const json& t) {
  std::string h = "<section id=\"table\"><h2>Tuned table</h2>\n<p><code>" +
                  esc(t["path"].get<std::string>()) + "</code>, created " +
                  esc(text_of(t["created_at"])) + " by attune " +
                  esc(text_of(t["attune_version"])) + ".</p>\n";
  std::vector<std::vector<std::string>> rows;
  for (const json& r : t["rows"]) {
    std::string what = r["problem"];
    if (!r["bucket"].is_null())
      what +=
          fmt::format(" {}=[{}, {}]", r["bucket"]["axis"].get<std::string>(),
                      r["bucket"]["lo"].get<std::int64_t>(), r["bucket"]["hi"].get<std::int64_t>());
    rows.push_back(
        {esc(r["op"].get<std::string>() + " " + r["dtype"].get<std::string>()), esc(what),
         "<code>" + esc(r["config"].get<std::string>()) + "</code>", esc(us_text(r["median_us"])),
         esc(us_text(r["baseline_us"])),
         r["speedup"].is_number() ? fmt::format("{:.3f}×", r["speedup"].get<double>()) : "-"});
  }
  h += table_html({"op", "problem", "config", "recorded", "baseline", "speedup"}, rows);
  const json& v = t["verify"];
  if (v.is_null()) {
    h += "<p class=\"note\">Not verified: <code>attune verify TABLE --json &gt; verify.json</code> "
         "and <code>attune report --table TABLE --verify verify.json</code> add what the runtime "
         "measured (the database does not keep it).</p>\n";
  } else {
    h += fmt::format(
        "<p>attune verify: {} checks, {} hits, {} misses, {} failing (band {:.0f}%).</p>\n",
        v["checks"].size(), text_of(v["hits"]), text_of(v["misses"]), text_of(v["failing"]),
        100 * v["band"].get<double>());
    h += chart_box("chart-verify");
    std::vector<std::vector<std::string>> vr;
    for (const json& c : v["checks"])
      vr.push_back({esc(text_of(c["row"])), esc(text_of(c["problem"])),
                    esc(us_text(c["recorded_us"])), esc(us_text(c["measured_us"])),
                    c["ratio"].is_number() ? fmt::format("{:.3f}", c["ratio"].get<double>()) : "-",
                    c["ok"].get<bool>()
                        ? "ok"
                        : "<strong>FAIL</strong>" +
                              std::string(c["dispatch_ok"].get<bool>()
                                              ? ": slower than recorded"
                                              : ": dispatched " + esc(text_of(c["dispatched"])))});
    h += table_html({"row", "problem", "recorded", "measured", "ratio", "verdict"}, vr);
  }
  return h + "</section>\n";
}

constexpr std::string_view kStyle = R"css(
:root { font-family: system-ui, sans-serif; color: #222; background: #fafafa; }
body { margin: 0 auto; max-width: 1240px; padding: 0 16px 48px; }
header { border-bottom: 1px solid #ddd; margin-bottom: 8px; }
h1 { font-size: 1.5rem; margin: 16px 0 4px; }
h2 { font-size: 1.25rem; margin-top: 32px; border-bottom: 1px solid #ddd; }
h3 { font-size: 1rem; margin: 16px 0 6px; overflow-wrap: anywhere; }
nav a { margin-right: 12px; }
code { font-size: 0.85em; overflow-wrap: anywhere; }
td code { overflow-wrap: normal; }
code.args { display: inline-block; min-width: 24em; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; font-size: 0.85rem; margin: 6px 0; }
th, td { border-bottom: 1px solid #e3e3e3; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f0f0f0; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(min(100%, 380px), 1fr));
         gap: 12px; }
.card { background: #fff; border: 1px solid #ddd; border-radius: 6px; padding: 8px 12px; min-width: 0; }
.card dl { display: grid; grid-template-columns: max-content 1fr; gap: 2px 8px; font-size: 0.85rem;
           margin: 4px 0; }
.card dd { margin: 0; overflow-wrap: anywhere; }
.spec { font-size: 0.85rem; margin: 0; }
.chart { position: relative; height: 260px; width: 100%; }
section > .chart { background: #fff; border: 1px solid #ddd; border-radius: 6px; }
.note { color: #555; font-size: 0.85rem; }
.status.done { color: #2a7a2a; } .status.failed, .status.interrupted { color: #b22; }
#attune-status { display: block; font-size: 0.8rem; color: #555; margin: 4px 0 8px; }
#attune-status[data-state="error"] { color: #b22; font-weight: bold; }
summary { cursor: pointer; margin: 6px 0; }
@media (max-width: 600px) {
  body { padding: 0 8px 32px; }
  table.wide { min-width: 640px; }
  .chart { height: 220px; }
  th, td { padding: 2px 4px; }
}
)css";

// Draws the charts, checks that each one's points lie in its plot area and that it painted, checks
// that every section is on the page, and says so in #attune-status (which a headless browser's
// DOM dump shows). The charts on the first screen are drawn at once, the rest when they come near
// the viewport or in idle slices after it (a chart costs 10-20 ms: 100 problems' charts drawn
// before the first paint kept the page blank for 2-3 s, bench/results/report-2026-12-02.md);
// "?draw=all" draws every chart before the page's first paint, for a test to see them all.
constexpr std::string_view kScript = R"js(
(function () {
  var status = document.getElementById('attune-status');
  var errors = [], rendered = [], expected = 0, queue = [], started = performance.now();
  var firstMs = null;
  function publish() {
    var now = performance.now();
    status.dataset.state = errors.length ? 'error' : queue.length ? 'drawing' : 'ok';
    status.dataset.charts = String(expected);
    status.dataset.rendered = String(rendered.length);
    status.dataset.errors = errors.join('; ');
    if (firstMs !== null) status.dataset.firstMs = String(Math.round(firstMs));
    status.dataset.renderMs = String(Math.round(now));
    status.dataset.drawMs = String(Math.round(now - started));
    status.textContent = 'Drew ' + rendered.length + ' of ' + expected + ' charts' +
        (errors.length ? '; errors: ' + errors.join('; ') : '; no script errors') + '.';
  }
  window.addEventListener('error', function (e) { errors.push(String(e.message)); publish(); });
  // 1, 2, 5 x 10^n on a log axis; Chart.js's default labels every tick.
  function logTick(v) {
    var m = v / Math.pow(10, Math.floor(Math.log10(v) + 1e-9));
    return [1, 2, 5].some(function (k) { return Math.abs(m - k) < 1e-6; })
        ? Number(v.toPrecision(3)).toString() : '';
  }
  // Every data point of every dataset lies inside the plot area: a value the axis cannot place
  // (a label on a linear axis, a zero on a log axis) leaves an element at NaN or off the area.
  function placed(chart) {
    for (var i = 0; i < chart.data.datasets.length; i++) {
      var meta = chart.getDatasetMeta(i), n = chart.data.datasets[i].data.length;
      if (meta.data.length !== n) return 'dataset ' + i + ' drew ' + meta.data.length + ' of ' + n;
      for (var k = 0; k < n; k++) {
        var e = meta.data[k], a = chart.chartArea;
        if (!isFinite(e.x) || !isFinite(e.y) || e.x < a.left - 1 || e.x > a.right + 1 ||
            e.y < a.top - 1 || e.y > a.bottom + 1)
          return 'dataset ' + i + ' point ' + k + ' has no place on the axes';
      }
    }
    return '';
  }
  function painted(canvas) {
    if (!canvas.width || !canvas.height) return false;
    var px = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
    for (var i = 3; i < px.length; i += 4 * 7) if (px[i] !== 0) return true;
    return false;
  }
  function draw(c, box) {
    try {
      var scales = c.config.options.scales || {};
      Object.keys(scales).forEach(function (k) {
        if (scales[k].type === 'logarithmic')
          scales[k].ticks = Object.assign({ callback: logTick, autoSkip: false }, scales[k].ticks);
      });
      var canvas = document.createElement('canvas');
      box.appendChild(canvas);
      var chart = new Chart(canvas, c.config);
      var lost = placed(chart);
      if (lost) errors.push('chart ' + c.id + ': ' + lost);
      else if (!painted(canvas)) errors.push('chart ' + c.id + ' drew nothing');
      else rendered.push(c.id);
    } catch (e) { errors.push('chart ' + c.id + ': ' + e.message); }
  }
  function take(i) {
    var q = queue.splice(i, 1)[0];
    if (observer) observer.unobserve(q.box);
    draw(q.chart, q.box);
  }
  var observer = null;
  try {
    var data = JSON.parse(document.getElementById('attune-data').textContent);
    var all = new URLSearchParams(location.search).get('draw') === 'all';
    expected = data.charts.length;
    data.sections.forEach(function (s) {
      if (!document.getElementById(s)) errors.push('section ' + s + ' is missing');
    });
    data.charts.forEach(function (c) {
      var box = document.getElementById(c.id);
      if (!box) errors.push('no element for chart ' + c.id);
      else if (all || box.getBoundingClientRect().top < window.innerHeight + 200) draw(c, box);
      else queue.push({ chart: c, box: box });
    });
    firstMs = performance.now();
    if (queue.length && 'IntersectionObserver' in window) {
      observer = new IntersectionObserver(function (entries) {
        entries.forEach(function (e) {
          if (!e.isIntersecting) return;
          for (var i = 0; i < queue.length; i++) if (queue[i].box === e.target) take(i);
        });
        publish();
      }, { rootMargin: '600px 0px' });
      queue.forEach(function (q) { observer.observe(q.box); });
    }
    // The rest in slices of about 40 ms, so scrolling and input stay responsive meanwhile.
    (function slice() {
      var t = performance.now();
      while (queue.length && performance.now() - t < 40) take(0);
      publish();
      if (queue.length) setTimeout(slice, 0);
    })();
  } catch (e) { errors.push(String(e.message || e)); }
  publish();
})();
)js";

}  // namespace

std::string render_page(const nlohmann::json& data, std::string_view chart_js) {
  // The data is JSON inside a <script> element, which "</script" or "<!--" in a string (a
  // compiler's message) could end or derail: every '<' is written \u003c, the same string to
  // JSON.parse ('<' only occurs inside JSON strings).
  std::string embedded;
  for (char c : data.dump(-1, ' ', false, json::error_handler_t::replace))
    if (c == '<')
      embedded += "\\u003c";
    else
      embedded += c;
  std::string title = "attune report";
  if (!data["devices"].empty()) title += " · " + data["devices"][0].value("name", "");
  std::string h =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>" +
      esc(title) + "</title>\n<style>" + std::string(kStyle) + "</style>\n</head>\n<body>\n";
  h += "<header><h1>" + esc(title) + "</h1>\n<p class=\"note\">attune " +
       esc(text_of(data["attune_version"])) + ", " + std::to_string(data["problems"].size()) +
       " problems, " + std::to_string(data["runs"].size()) + " runs";
  if (data["selection"]["run"].is_number())
    h += ", run " + text_of(data["selection"]["run"]) + " only";
  if (!data["selection"]["problem"].get<std::string>().empty())
    h += ", problem " + esc(data["selection"]["problem"].get<std::string>());
  h += ". Times are medians in microseconds (µs).</p>\n<nav>";
  for (const json& s : data["sections"]) {
    const std::string id = s;
    h += "<a href=\"#" + esc(id) + "\">" + esc(id) + "</a>";
  }
  h += "</nav>\n<output id=\"attune-status\" data-state=\"pending\">The charts need "
       "JavaScript.</output>\n</header>\n";
  h += overview_html(data);
  h += problems_html(data);
  h += shapes_html(data);
  h += failures_html(data);
  h += health_html(data);
  if (!data["table"].is_null()) h += table_section_html(data["table"]);
  h += "<script type=\"application/json\" id=\"attune-data\">" + embedded + "</script>\n";
  // The library as Debian ships it; its text cannot close the element early (checked on read).
  h += "<script>\n" + std::string(chart_js) + "\n</script>\n";
  h += "<script>" + std::string(kScript) + "</script>\n</body></html>\n";
  return h;
}

Result<std::string> read_chart_js(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  if (in) text << in.rdbuf();
  if (!in || text.str().empty())
    return Error::invalid_argument(
        fmt::format("the plotting library {} is missing: install Debian's {} (apt-get install {})",
                    path, kChartJsPackage, kChartJsPackage));
  std::string s = text.str();
  std::string lower = s;
  std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
  if (lower.find("</script") != std::string::npos)
    return Error::invalid_argument(path +
                                   " holds '</script', which would end the page's script early");
  return s;
}

}  // namespace attune
