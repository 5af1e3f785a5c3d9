// attune prior fit | show: refit the prior (the cost model steering mcts) from the tuning
// database without a GPU, and report its size, age and calibration.
#include <charconv>
#include <ctime>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/common.h"
#include "prior/prior.h"

namespace attune::cli {

namespace {

int run_fit(const GlobalOptions& g, const std::string& name, std::size_t reservoir) {
  auto store = open_store_or_report(g, false);
  if (!store) return kExitBadInput;
  auto rows = store->measurements({});
  if (!rows) return bad_input(rows.error().message());
  auto problems = store->problems();
  if (!problems) return bad_input(problems.error().message());
  auto devices = store->devices();
  if (!devices) return bad_input(devices.error().message());
  std::map<std::string, Problem> by_key;
  for (const auto& p : *problems) by_key.emplace(p.key, p.problem);
  std::map<std::string, DeviceFingerprint> dev_by_key;
  for (const auto& d : *devices) dev_by_key.emplace(d.key(), d);

  prior::PriorOptions o;
  o.reservoir = reservoir;
  o.first_refit = 0;  // one fit, below
  prior::Prior p(o);
  std::map<std::string, prior::Context> contexts;
  std::size_t used = 0;
  for (const auto& r : *rows) {
    // Only deploy-regime times feed the prior (DESIGN.md); failures carry no time and are kept,
    // whatever regime they failed in, so the prior learns to steer away from them.
    bool ok = r.outcome.verdict == Verdict::kOk;
    if (ok && (r.regime != Regime::kDeploy || !r.outcome.measurement)) continue;
    auto c = Config::parse(r.config);
    if (!c) continue;
    std::string ck = r.problem_key + "|" + r.device_key;
    auto it = contexts.find(ck);
    if (it == contexts.end()) {
      auto pk = by_key.find(r.problem_key);
      auto dk = dev_by_key.find(r.device_key);
      Problem problem =
          pk != by_key.end() ? pk->second : Problem("unknown", {{"key", r.problem_key}});
      DeviceFingerprint device = dk != dev_by_key.end() ? dk->second : DeviceFingerprint{};
      it = contexts.emplace(ck, prior::make_context(problem, device)).first;
    }
    p.add(prior::make_row(
        *c, it->second, r.outcome.verdict,
        ok ? std::optional<double>(r.outcome.measurement->median_us) : std::nullopt));
    ++used;
  }
  if (auto st = p.fit(); !st.ok()) return failed("fitting the prior: " + st.error().message());
  if (!p.trained())
    return failed(fmt::format("only {} usable rows in {} (a prior needs {}): it stays cold", used,
                              g.db, o.min_rows));
  auto ck = p.save();
  if (!ck) return failed(ck.error().message());
  PriorRecord rec;
  rec.name = name;
  rec.rows = ck->rows;
  rec.calibration = ck->calibration;
  rec.quarantined = ck->quarantined;
  rec.model = ck->model;
  rec.reservoir = ck->reservoir;
  auto id = store->put_prior(rec);
  if (!id) return failed("storing the prior: " + id.error().message());
  if (g.json) {
    fmt::print("{}\n", nlohmann::json{{"name", name},
                                      {"id", *id},
                                      {"rows", rec.rows},
                                      {"calibration", rec.calibration},
                                      {"quarantined", rec.quarantined}}
                           .dump(2));
  } else {
    fmt::print("prior '{}': {} rows from {} measurements, calibration {:.3f} ({})\n", name,
               rec.rows, used, rec.calibration,
               rec.quarantined ? "quarantined: mcts ignores it" : "usable: steers mcts");
  }
  return kExitOk;
}

int run_show(const GlobalOptions& g, const std::string& name) {
  auto store = open_store_or_report(g, false, /*read_only_ok=*/true);
  if (!store) return kExitBadInput;
  auto rec = store->latest_prior(name);
  if (!rec) return bad_input(rec.error().message());
  if (!*rec) {
    if (g.json)
      fmt::print("{}\n", nlohmann::json{{"name", name}, {"state", "cold"}}.dump(2));
    else
      fmt::print(
          "prior '{}': none fitted (cold: mcts scores forks uniformly); fit one with attune prior "
          "fit\n",
          name);
    return kExitOk;
  }
  const PriorRecord& r = **rec;
  std::string age = "unknown";
  std::tm tm{};
  if (strptime(r.created_at.c_str(), "%Y-%m-%dT%H:%M:%S", &tm)) {
    double s = std::difftime(std::time(nullptr), timegm(&tm));
    age = s < 120    ? fmt::format("{:.0f} s", s)
          : s < 7200 ? fmt::format("{:.0f} min", s / 60)
                     : fmt::format("{:.1f} h", s / 3600);
  }
  const char* state = r.quarantined ? "quarantined" : "usable";
  if (g.json) {
    fmt::print("{}\n", nlohmann::json{{"name", r.name},
                                      {"id", r.id},
                                      {"created_at", r.created_at},
                                      {"rows", r.rows},
                                      {"calibration", r.calibration},
                                      {"state", state},
                                      {"model_bytes", r.model.size()}}
                           .dump(2));
  } else {
    fmt::print(
        "prior '{}' (#{}): {} rows, fitted {} ({} ago), calibration {:.3f}, {}, model {} bytes\n",
        r.name, r.id, r.rows, r.created_at, age, r.calibration, state, r.model.size());
  }
  return kExitOk;
}

}  // namespace

Command add_prior_command(CLI::App& app, GlobalOptions& g) {
  auto* sub = app.add_subcommand("prior", "the cost model that steers mcts");
  sub->require_subcommand(1);
  auto name = std::make_shared<std::string>("default");
  auto reservoir = std::make_shared<std::size_t>(4096);
  auto* fit = sub->add_subcommand(
      "fit", "refit the prior from the database's measurements (no GPU needed)");
  fit->add_option("--name", *name, "the prior's name")->capture_default_str()->check(non_empty());
  fit->add_option("--reservoir", *reservoir, "training rows kept")
      ->capture_default_str()
      ->check(unsigned_integer())
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            const std::size_t least = prior::PriorOptions{}.min_rows;
            std::size_t rows = 0;
            std::from_chars(text.data(), text.data() + text.size(), rows);
            return rows < least ? "the reservoir must hold at least " + std::to_string(least) +
                                      " rows (a prior needs that many)"
                                : "";
          },
          "ROWS"));
  auto* show = sub->add_subcommand("show", "the prior's size, age and calibration");
  show->add_option("--name", *name, "the prior's name")->capture_default_str()->check(non_empty());
  return {sub, [&g, fit, name, reservoir] {
            if (fit->parsed()) return run_fit(g, *name, *reservoir);
            return run_show(g, *name);
          }};
}

}  // namespace attune::cli
