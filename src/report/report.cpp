#include "report/report.h"

#include <fmt/format.h>

namespace attune {

namespace {

nlohmann::json candidate_json(const CandidateResult& c, const std::string& backend) {
  nlohmann::json j = {
      {"config", c.config}, {"backend", backend}, {"verdict", to_string(c.verdict)}};
  j["median_us"] = c.deploy_us ? nlohmann::json(*c.deploy_us) : nlohmann::json(nullptr);
  j["rank_median_us"] = c.rank_us ? nlohmann::json(*c.rank_us) : nlohmann::json(nullptr);
  if (!c.message.empty()) j["message"] = c.message;
  return j;
}

std::string us(std::optional<double> t) {
  return t ? fmt::format("{:.2f} us", *t) : "-";
}

std::optional<ProblemMetrics> metrics_of(const ReportOptions& o, const Problem& p) {
  if (!o.metrics_of) return std::nullopt;
  return o.metrics_of(p);
}

// The metrics of a candidate at its deploy-regime median (what the report's times are), or an
// empty object when it has none.
nlohmann::json metrics_json(const std::optional<ProblemMetrics>& m, const CandidateResult& c) {
  nlohmann::json j = nlohmann::json::object();
  if (!m || !m->at || !c.deploy_us) return j;
  for (const auto& [name, value] : m->at(*c.deploy_us)) j[name] = value;
  return j;
}

// "  1234.5 gflops, 310.2 gbs" for the text report; "" when there are none.
std::string metrics_text(const std::optional<ProblemMetrics>& m, const CandidateResult& c) {
  if (!m || !m->at || !c.deploy_us) return "";
  std::string out;
  for (const auto& [name, value] : m->at(*c.deploy_us))
    out += fmt::format("{}{:.6g} {}", out.empty() ? "" : ", ", value, name);
  return out;
}

// "run 3", "runs 1, 2 and 5", "6 runs from 1 to 9".
std::string runs_text(const std::vector<std::int64_t>& runs) {
  if (runs.size() == 1) return fmt::format("run {}", runs[0]);
  if (runs.size() > 3)
    return fmt::format("{} runs from {} to {}", runs.size(), runs.front(), runs.back());
  std::string out = "runs";
  for (std::size_t i = 0; i < runs.size(); ++i)
    out += fmt::format("{}{}", i == 0 ? " " : i + 1 == runs.size() ? " and " : ", ", runs[i]);
  return out;
}

// What a continued search went on from, in words: "mcts's stored search state and 54 stored
// results of run 1".
std::string continued_text(const ProblemReport& p, const std::string& strategy) {
  std::string out;
  if (p.continued_state) out = strategy + "'s stored search state";
  if (p.stored_first > 0) {
    if (!out.empty()) out += " and ";
    out += fmt::format("{} stored result{}", p.stored_first, p.stored_first == 1 ? "" : "s");
    if (!p.stored_runs.empty()) out += " of " + runs_text(p.stored_runs);
    out += ", evaluated first";
  }
  return out;
}

}  // namespace

nlohmann::json retimed_json(const std::vector<ProblemReport::Retimed>& retimed) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& t : retimed)
    out.push_back({{"config", t.config}, {"first_us", t.first_us}, {"again_us", t.again_us}});
  return out;
}

nlohmann::json report_json(const TuneReport& r, const ReportOptions& options) {
  nlohmann::json j;
  j["device"] = r.device;
  j["report_version"] = 2;
  j["run"] = {{"id", r.run_id},
              {"strategy", r.strategy},
              {"seed", r.seed},
              {"interrupted", r.interrupted},
              {"elapsed_s", r.elapsed_s}};
  j["problems"] = nlohmann::json::array();
  for (const auto& p : r.problems) {
    nlohmann::json pj;
    pj["problem"] = p.problem.name();
    pj["spec"] = p.problem.text();
    pj["structural_key"] = p.problem.structural_key();
    pj["backend"] = p.backend;
    pj["baseline"] = p.baseline ? candidate_json(*p.baseline, p.backend) : nlohmann::json(nullptr);
    pj["best"] = p.best ? candidate_json(*p.best, p.backend) : nlohmann::json(nullptr);
    pj["speedup"] = p.speedup > 0 ? nlohmann::json(p.speedup) : nlohmann::json(nullptr);
    if (auto m = metrics_of(options, p.problem)) {
      if (p.baseline) pj["baseline"]["metrics"] = metrics_json(m, *p.baseline);
      if (p.best) pj["best"]["metrics"] = metrics_json(m, *p.best);
      // The objective's value for the baseline and the best: a metric's, or the time's (us).
      auto value = [&](const std::optional<CandidateResult>& c) -> nlohmann::json {
        if (!c || !c->deploy_us) return nullptr;
        if (m->objective.empty()) return *c->deploy_us;
        nlohmann::json mj = metrics_json(m, *c);
        return mj.contains(m->objective) ? mj[m->objective] : nlohmann::json(nullptr);
      };
      pj["objective"] = {{"metric", m->objective.empty() ? "time" : m->objective},
                         {"higher_is_better", m->higher_is_better},
                         {"baseline", value(p.baseline)},
                         {"best", value(p.best)}};
    }
    pj["evaluated"] = p.evaluated;
    pj["measured"] = p.measured;
    pj["replayed"] = p.replayed;
    pj["retimed"] = retimed_json(p.retimed);
    pj["space_size"] = p.space_size;
    pj["best_at"] = p.best_at > 0 ? nlohmann::json(p.best_at) : nlohmann::json(nullptr);
    pj["first_guesses"] = p.seeded_first;
    pj["continued"] = p.continued();
    if (p.continued())
      pj["continued_from"] = {{"state", p.continued_state},
                              {"stored_results", p.stored_first},
                              {"runs", p.stored_runs}};
    else
      pj["continued_from"] = nullptr;
    pj["started"] = p.started;
    pj["stopped_by"] = p.stopped_by;
    pj["unstable"] = p.unstable.empty() ? nlohmann::json(nullptr) : nlohmann::json(p.unstable);
    pj["drift_events"] = p.drift_events;
    pj["discarded"] = p.discarded;
    pj["backoff_s"] = p.backoff_s;
    pj["anchor_readings"] = p.anchor_readings;
    if (p.anchor_levels)
      pj["anchor_levels"] = {{"low_us", p.anchor_levels->low_us},
                             {"high_us", p.anchor_levels->high_us},
                             {"low_readings", p.anchor_levels->low_readings},
                             {"high_readings", p.anchor_levels->high_readings}};
    else
      pj["anchor_levels"] = nullptr;
    nlohmann::json v = nlohmann::json::object();
    for (const auto& [verdict, n] : p.verdicts) v[std::string(to_string(verdict))] = n;
    pj["verdicts"] = v;
    nlohmann::json rej = nlohmann::json::array();
    for (const auto& c : p.rejected)
      rej.push_back(
          {{"config", c.config}, {"verdict", to_string(c.verdict)}, {"message", c.message}});
    pj["rejected"] = rej;
    j["problems"].push_back(pj);
  }
  return j;
}

std::string report_text(const TuneReport& r, const ReportOptions& options) {
  std::string out = fmt::format("device {} ({}, {}), run {}, strategy {}, seed {}\n", r.device.name,
                                r.device.backend, r.device.key(), r.run_id, r.strategy, r.seed);
  for (const auto& p : r.problems) {
    out += fmt::format("\n{}  [{}]\n", p.problem.name(), p.problem.text());
    const auto m = metrics_of(options, p.problem);
    if (!p.started) {
      out += fmt::format("  not tuned: {} before it started\n",
                         p.stopped_by == "interrupted" ? "interrupted" : "the time limit came");
      continue;
    }
    if (p.baseline) {
      out += fmt::format("  baseline  {:>12}  {}", us(p.baseline->deploy_us), p.baseline->config);
      if (p.baseline->verdict != Verdict::kOk)
        out += fmt::format("  FAILED: {} ({}) - not trusted", to_string(p.baseline->verdict),
                           p.baseline->message);
      else if (auto t = metrics_text(m, *p.baseline); !t.empty())
        out += "  (" + t + ")";
      out += "\n";
    }
    if (p.best) {
      out += fmt::format("  best      {:>12}  {}", us(p.best->deploy_us), p.best->config);
      if (auto t = metrics_text(m, *p.best); !t.empty()) out += "  (" + t + ")";
      out += "\n";
      if (p.speedup > 0) out += fmt::format("  speedup   {:.3f}x\n", p.speedup);
      if (p.best_at > 0)
        out += fmt::format("  best found at evaluation {} of {}\n", p.best_at, p.evaluated);
      if (!p.retimed.empty()) {
        std::string times;
        for (const auto& r : p.retimed)
          times +=
              fmt::format("{}{:.2f} -> {:.2f}", times.empty() ? "" : ", ", r.first_us, r.again_us);
        out += fmt::format("  timed again (us, first -> again): {}\n", times);
      }
      if (m && !m->objective.empty()) {
        // The search ranked by time; the objective is a strictly monotonic function of it
        // (checked when the spec was loaded), so its best is this same config.
        auto value = [&](const CandidateResult& c) -> std::string {
          if (!c.deploy_us || !m->at) return "-";
          for (const auto& [name, v] : m->at(*c.deploy_us))
            if (name == m->objective) return fmt::format("{:.6g}", v);
          return "-";
        };
        out += fmt::format("  objective {} ({} is better): {} -> {}\n", m->objective,
                           m->higher_is_better ? "higher" : "lower",
                           p.baseline ? value(*p.baseline) : "-", value(*p.best));
      }
    } else {
      out += "  best      none: no candidate passed\n";
    }
    out += fmt::format(
        "  candidates: {} evaluated ({} measured, {} from the database) of {} in the space; "
        "stopped: {}\n",
        p.evaluated, p.measured, p.replayed, p.space_size, p.stopped_by);
    if (p.continued())
      out += fmt::format("  continued: {} (--fresh-search starts a new search)\n",
                         continued_text(p, r.strategy));
    if (p.seeded_first > 0)
      out += fmt::format("  first guesses: {} of the op's, evaluated after the baseline\n",
                         p.seeded_first);
    std::string rejected;
    for (const auto& [v, n] : p.verdicts)
      if (v != Verdict::kOk && n > 0)
        rejected += fmt::format("{}{} {}", rejected.empty() ? "" : ", ", n, to_string(v));
    out += fmt::format("  rejected: {}\n", rejected.empty() ? "none" : rejected);
    if (p.drift_events)
      out += fmt::format(
          "  drift: the anchor moved {} time(s); {} measurements discarded; {:.1f} s of back-off\n",
          p.drift_events, p.discarded, p.backoff_s);
    if (p.anchor_levels)
      out += fmt::format(
          "  anchor: two levels, {:.2f} us ({} readings) and {:.2f} us ({}); drift checked "
          "against both\n",
          p.anchor_levels->low_us, p.anchor_levels->low_readings, p.anchor_levels->high_us,
          p.anchor_levels->high_readings);
    if (!p.unstable.empty()) out += fmt::format("  UNSTABLE: {}\n", p.unstable);
  }
  if (r.interrupted) out += "\ninterrupted: the report covers what was done before\n";
  return out;
}

}  // namespace attune
