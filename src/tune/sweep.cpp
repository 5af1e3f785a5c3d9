#include "tune/sweep.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

namespace attune {

namespace {

using table::CellTimes;
using table::SweepCell;
using table::SweepGrid;

// The group of a cell: its dtype and sweep_default_per sizes.
std::string group_key(const SweepGrid& g, const SweepCell& c) {
  std::string k = c.dtype;
  for (const auto& a : g.per) k += fmt::format(" {}={}", a.size, c.sizes.at(a.size));
  return k;
}

const ProblemReport* find_report(const TuneReport& r, const Problem& p) {
  for (const auto& pr : r.problems)
    if (pr.problem.structural_key() == p.structural_key()) return &pr;
  return nullptr;
}

// The deploy-regime results that passed the gate, into `times`.
void take_results(const ProblemReport& r, std::map<std::string, table::ConfigTime>* times) {
  for (const auto& c : r.results) {
    if (c.verdict != Verdict::kOk || !c.deploy_us || !(*c.deploy_us > 0) || !c.deploy_check ||
        c.deploy_check->metric.empty() || !(c.deploy_check->value <= c.deploy_check->tolerance))
      continue;
    (*times)[c.config] =
        table::ConfigTime{*c.deploy_us, c.deploy_noise.value_or(0), *c.deploy_check};
  }
}

std::string unstable_why(const ProblemReport& r, const char* pass) {
  return fmt::format("the device did not settle while {} ({})", pass,
                     r.unstable.empty() ? "stopped unstable" : r.unstable);
}

}  // namespace

bool SweepReport::any_cell() const {
  for (const auto& c : cells)
    if (!c.dropped) return true;
  return false;
}

Result<SweepReport> run_sweep(Tuner& tuner, const SweepGrid& grid,
                              const std::vector<Problem>& problems, const SweepOptions& options,
                              const TuneObserver& observer) {
  const std::vector<SweepCell> cells = table::grid_cells(grid);
  if (cells.size() != problems.size())
    return Error::internal(
        fmt::format("{} problems for a grid of {} cells", problems.size(), cells.size()));
  SweepReport rep;
  TuneOptions o = options.tune;
  o.command = "sweep";
  o.fresh_search = true;
  // Each cell first tries the winners of the cells of its group tuned before it: a good config
  // found at one depth or batch is where the search at the next starts, not something it must
  // stumble on again within its budget. Groups are what shards split on, so a shard's cells see
  // the same winners as in one run.
  for (std::size_t i = 0; i < cells.size(); ++i)
    o.warm_start_groups[problems[i].structural_key()] = group_key(grid, cells[i]);
  auto tuned = tuner.run(problems, o, observer);
  if (!tuned) return tuned.error();
  rep.device = tuned->device;
  rep.tune_s = tuned->elapsed_s;
  rep.interrupted = tuned->interrupted;
  rep.interruption = tuned->interruption;

  // Candidates per group: the winners of its cells in grid order, then the baseline.
  std::map<std::string, std::vector<std::string>> candidates;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    SweepCellReport c;
    c.cell = cells[i];
    const ProblemReport* pr = find_report(*tuned, problems[i]);
    if (!pr) return Error::internal("no report for " + problems[i].text());
    c.tuned = *pr;
    if (pr->stopped_by == "unstable") {
      c.dropped = true;
      c.why = unstable_why(*pr, "it was tuned");
    } else if (!pr->started) {
      c.dropped = true;
      c.why = "not tuned: " + pr->stopped_by;
    } else if (!pr->baseline || !pr->baseline->deploy_us) {
      c.dropped = true;
      c.why = "its baseline did not pass in the deploy regime: nothing can be shown to beat it";
    }
    if (!c.dropped) {
      auto& list = candidates[group_key(grid, c.cell)];
      for (const std::string* cfg : {pr->best ? &pr->best->config : nullptr, &pr->baseline->config})
        if (cfg && std::find(list.begin(), list.end(), *cfg) == list.end()) list.push_back(*cfg);
    }
    rep.cells.push_back(std::move(c));
  }
  if (rep.interrupted) return rep;

  // Every candidate of a group at every cell of it; what the store holds is not measured again.
  std::vector<std::pair<Problem, std::vector<Config>>> work;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    if (rep.cells[i].dropped) continue;
    std::vector<Config> configs;
    for (const auto& text : candidates[group_key(grid, cells[i])]) {
      ATTUNE_ASSIGN(Config c, Config::parse(text));
      // Illegal here: no time at this cell, so no-harm refuses it for the bucket holding it.
      ATTUNE_ASSIGN(bool legal, tuner.in_space(problems[i], c));
      if (legal) configs.push_back(std::move(c));
    }
    work.emplace_back(problems[i], std::move(configs));
  }
  if (!work.empty()) {
    auto measured = tuner.measure(work, o, observer);
    if (!measured) return measured.error();
    rep.measure_s = measured->elapsed_s;
    rep.interrupted = measured->interrupted;
    rep.interruption = measured->interruption;
    if (rep.interrupted) return rep;
    for (std::size_t i = 0; i < cells.size(); ++i) {
      SweepCellReport& c = rep.cells[i];
      if (c.dropped) continue;
      const ProblemReport* pr = find_report(*measured, problems[i]);
      if (!pr) return Error::internal("no measurement report for " + problems[i].text());
      c.measured = *pr;
      if (pr->stopped_by == "unstable") {
        c.dropped = true;
        c.why = unstable_why(*pr, "its group's candidates were measured");
      }
    }
  }

  std::vector<CellTimes> times;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    const SweepCellReport& c = rep.cells[i];
    if (c.dropped) continue;
    CellTimes t;
    t.cell = c.cell;
    t.problem = problems[i];
    t.backend = c.tuned.backend;
    t.baseline_config = c.tuned.baseline->config;
    t.winner = c.tuned.best ? c.tuned.best->config : "";
    take_results(c.tuned, &t.configs);
    if (c.measured) take_results(*c.measured, &t.configs);
    times.push_back(std::move(t));
  }
  rep.decision = table::decide_rows(grid, times, rep.device, options.rules);
  return rep;
}

}  // namespace attune
