#include "tune/stack.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "backends/command/program_run.h"
#include "backends/runner.h"
#include "search/strategy.h"

namespace attune {

namespace {

// A provider without knobs has one config, whose canonical text is empty.
std::string shown(const std::string& label) {
  return label.empty() ? "(no knobs)" : label;
}

// The rejection's reason and detail from the stored message ("REASON: DETAIL").
table::StackRejection rejection(const CandidateResult& c) {
  if (auto r = command::rejection_of(c.message))
    return {c.config, std::string(to_string(r->first)), r->second};
  return {c.config, std::string(to_string(c.verdict)), c.message};
}

std::vector<std::pair<std::string, std::string>> knobs_as_written(const command::Provider& p,
                                                                  const Point& point) {
  std::vector<std::pair<std::string, std::string>> out;
  for (std::size_t k = 0; k < p.space.depth(); ++k)
    out.emplace_back(p.space.knobs()[k].name, p.option_text[k][point[k]]);
  return out;
}

std::string join_changed(const command::Provider& p, const Point& winner) {
  std::string out;
  const Point base = p.space.baseline();
  for (std::size_t k = 0; k < winner.size(); ++k)
    if (winner[k] != base[k])
      out += fmt::format("{}{}={}", out.empty() ? "" : ", ", p.space.knobs()[k].name,
                         p.option_text[k][winner[k]]);
  return out.empty() ? "none" : out;
}

}  // namespace

bool StackTune::ok() const {
  return std::all_of(
      notes.providers.begin(), notes.providers.end(),
      [&](const table::StackProviderNotes& p) { return table::stack_row(table, p) != nullptr; });
}

Status check_stack_tune_options(const command::StackFile& stack, const StackTuneOptions& o) {
  ATTUNE_TRY(command::check_options(stack, o.command));
  auto names = strategy_names();
  if (std::find(names.begin(), names.end(), o.tuning.strategy) == names.end()) {
    std::string known;
    for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
    return Error::invalid_argument("--strategy '" + o.tuning.strategy + "' is not one of " + known);
  }
  if (o.tuning.shard_count > 1 && o.tuning.strategy != "grid")
    return Error::invalid_argument("--shard divides the grid: give --strategy grid with it");
  if (o.tuning.patience < 0)
    return Error::invalid_argument("--patience must be >= 0 (0: never stop early)");
  if (o.tuning.max_candidates && *o.tuning.max_candidates < 1)
    return Error::invalid_argument("--max-candidates must be positive");
  if (o.tuning.drift.anchor_every < 0)
    return Error::invalid_argument("--anchor-every must be >= 0 (0 turns the drift check off)");
  return Status::success();
}

Result<StackTune> tune_stack(const command::StackFile& stack, const platform::HostFingerprint& host,
                             Store& store, const StackTuneOptions& options) {
  ATTUNE_TRY(check_stack_tune_options(stack, options));
  ATTUNE_ASSIGN(auto backend, command::CommandBackend::open(stack, host, options.command));
  InProcessRunner runner(*backend);
  Tuner tuner(store, *backend, runner);
  auto observe = [&](const TuneEvent& ev) {
    if (!options.log) return;
    const CandidateResult& c = ev.result;
    const command::Provider* p = backend->provider_of(ev.problem);
    std::string head = fmt::format("{}: [{}/{}] {}", p ? p->name : ev.problem.name(), ev.index,
                                   ev.space_size, shown(c.config));
    if (c.verdict != Verdict::kOk) {
      auto r = rejection(c);
      options.log(fmt::format("{} rejected: {} ({})", head, r.reason, r.detail));
    } else if (c.deploy_us) {
      options.log(fmt::format("{} {:.4g} records/s{}", head, 1e6 / *c.deploy_us,
                              c.replayed ? " (from the database)" : ""));
    }
  };
  const std::vector<Problem> problems = backend->stack_problems();
  ATTUNE_ASSIGN(TuneReport report, tuner.run(problems, options.tuning, observe));
  // A tuned file is written from whole searches only.
  if (report.interrupted)
    return Error::internal(report.interruption.empty() ? "interrupted" : report.interruption);

  StackTune out;
  out.notes.stack = stack.name;
  out.notes.seed = options.tuning.seed;
  out.notes.repeats = options.command.repeats;
  out.notes.host = host;
  out.table.attune_version = ATTUNE_VERSION;
  out.table.device = report.device;
  table::OpTable ops;
  ops.op = "stack";
  ops.dtype = std::string(table::kNoDtype);
  for (const ProblemReport& rep : report.problems) {
    const command::Provider& p = *backend->provider_of(rep.problem);
    const Space& space = p.space;
    table::StackProviderNotes n;
    n.name = p.name;
    n.problem = rep.problem;
    n.records = backend->records(rep.problem);
    n.baseline_config = space.config(space.baseline()).text();
    n.evaluated = rep.evaluated;
    // The rejections in the space's order, whatever order the strategy visited them in.
    std::map<std::string, std::uint64_t> position;
    std::uint64_t i = 0;
    for (auto e = space.enumerate(); auto point = e.next();)
      position[space.config(*point).text()] = i++;
    for (const CandidateResult& c : rep.rejected) n.rejected.push_back(rejection(c));
    std::stable_sort(n.rejected.begin(), n.rejected.end(), [&](const auto& a, const auto& b) {
      return position[a.config] < position[b.config];
    });
    Point shipped = space.baseline();
    const bool baseline_ok =
        rep.baseline && rep.baseline->verdict == Verdict::kOk && rep.baseline->deploy_us;
    if (!baseline_ok) {
      n.baseline_failure = rep.baseline ? rep.baseline->message : "the baseline was not measured";
    } else {
      // The baseline passed, so the best exists: it is the baseline when nothing beat it.
      const CandidateResult& best = *rep.best;
      table::Row row;
      row.problem = rep.problem;
      row.backend = backend->name();
      row.config = best.config;
      row.median_us = *best.deploy_us;
      row.baseline_us = *rep.baseline->deploy_us;
      row.baseline_config = n.baseline_config;
      row.error = ErrorCheck{command::kDigestCheck, 0, 0};
      ops.rows.push_back(std::move(row));
      ATTUNE_ASSIGN(Config cfg, space.parse(best.config));
      ATTUNE_ASSIGN(shipped, space.point(cfg));
    }
    n.knobs = knobs_as_written(p, shipped);
    out.changed.push_back(join_changed(p, shipped));
    out.notes.providers.push_back(std::move(n));
  }
  if (!ops.rows.empty()) out.table.ops.push_back(std::move(ops));
  out.report = std::move(report);
  return out;
}

std::string format_stack_report(const StackTune& r) {
  const platform::HostFingerprint& f = r.notes.host;
  std::string gpus = !f.gpus ? "absent" : f.gpus->empty() ? "none" : "";
  if (f.gpus)
    for (const auto& g : *f.gpus)
      gpus += fmt::format("{}{} ({} MiB)", gpus.empty() ? "" : ", ", g.name, g.memory_mib);
  std::string out = fmt::format(
      "stack {} on {} ({} logical CPUs), GPU: {}; seed {}, {} timed runs per candidate\n",
      r.notes.stack, f.cpu_model.value_or("CPU model absent"),
      f.logical_cpus ? std::to_string(*f.logical_cpus) : "absent", gpus, r.notes.seed,
      r.notes.repeats);
  for (std::size_t i = 0; i < r.notes.providers.size(); ++i) {
    const table::StackProviderNotes& p = r.notes.providers[i];
    const table::Row* row = table::stack_row(r.table, p);
    out += fmt::format(
        "provider {}: {} config(s) evaluated over {} records, {} rejected, status {}\n", p.name,
        p.evaluated, p.records, p.rejected.size(), table::stack_status(r.table, p));
    if (!row) {
      out +=
          fmt::format("  baseline  {}  FAILED {}\n", shown(p.baseline_config), p.baseline_failure);
      out += "  ships its defaults; nothing else was run (no reference output)\n";
      continue;
    }
    out += fmt::format("  baseline  {}  {:.4g} records/s\n", shown(p.baseline_config),
                       1e6 / row->baseline_us);
    out += fmt::format("  tuned     {}  {:.4g} records/s  speedup {:.2f}x  (changed: {})\n",
                       shown(row->config), 1e6 / row->median_us, row->baseline_us / row->median_us,
                       r.changed[i]);
    for (const auto& c : p.rejected)
      out += fmt::format("  rejected  {}  {}: {}\n", shown(c.config), c.reason, c.detail);
  }
  return out;
}

nlohmann::json stack_json(const StackTune& r, const std::string& tuned_path) {
  const platform::HostFingerprint& f = r.notes.host;
  nlohmann::json fp = {
      {"cpu_model", f.cpu_model ? nlohmann::json(*f.cpu_model) : nlohmann::json()},
      {"logical_cpus", f.logical_cpus ? nlohmann::json(*f.logical_cpus) : nlohmann::json()},
      {"gpus", nlohmann::json()},
      {"tools", nlohmann::json::object()}};
  if (f.gpus) {
    fp["gpus"] = nlohmann::json::array();
    for (const auto& g : *f.gpus)
      fp["gpus"].push_back({{"name", g.name}, {"memory_mib", g.memory_mib}});
  }
  for (const auto& [tool, version] : f.tools)
    fp["tools"][tool] = version ? nlohmann::json(*version) : nlohmann::json();
  nlohmann::json providers = nlohmann::json::array();
  for (std::size_t i = 0; i < r.notes.providers.size(); ++i) {
    const table::StackProviderNotes& p = r.notes.providers[i];
    const table::Row* row = table::stack_row(r.table, p);
    const ProblemReport& rep = r.report.problems.at(i);
    nlohmann::json rejected = nlohmann::json::array();
    for (const auto& c : p.rejected)
      rejected.push_back({{"config", c.config}, {"reason", c.reason}, {"detail", c.detail}});
    nlohmann::json knobs = nlohmann::json::object();
    for (const auto& [k, v] : p.knobs) knobs[k] = v;
    providers.push_back({{"provider", p.name},
                         {"problem", p.problem.name()},
                         {"structural_key", p.problem.structural_key()},
                         {"status", table::stack_status(r.table, p)},
                         {"records", p.records},
                         {"baseline",
                          {{"config", p.baseline_config},
                           {"records_per_second", row ? 1e6 / row->baseline_us : 0.0}}},
                         {"tuned",
                          {{"config", row ? row->config : p.baseline_config},
                           {"knobs", knobs},
                           {"records_per_second", row ? 1e6 / row->median_us : 0.0}}},
                         {"speedup", row ? row->baseline_us / row->median_us : 0.0},
                         {"evaluated", p.evaluated},
                         {"measured", rep.measured},
                         {"replayed", rep.replayed},
                         {"stopped_by", rep.stopped_by},
                         {"drift_events", rep.drift_events},
                         {"rejected", rejected}});
  }
  return {{"stack", r.notes.stack},
          {"fingerprint", fp},
          {"device", r.table.device},
          {"run",
           {{"id", r.report.run_id},
            {"strategy", r.report.strategy},
            {"seed", r.notes.seed},
            {"repeats", r.notes.repeats}}},
          {"tuned_file", tuned_path},
          {"providers", providers}};
}

}  // namespace attune
