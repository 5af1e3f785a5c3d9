#include "report/sweep_log.h"

#include <fmt/format.h>

namespace attune {

namespace {

std::string cell_text(const table::SweepGrid& g, const table::SweepCell& c) {
  std::string s = c.dtype;
  auto add = [&](const table::SweepAxis& a) {
    s += fmt::format(" {}={}", a.size, c.sizes.at(a.size));
  };
  for (const auto& a : g.per) add(a);
  for (const auto& a : g.other) add(a);
  add(g.bucket);
  return s;
}

std::string us(const std::optional<CandidateResult>& c) {
  return c && c->deploy_us ? fmt::format("{:.3f} us", *c->deploy_us) : "-";
}

// The drift guard's activity in one pass, or "" when it found nothing to do.
std::string cooldown(const ProblemReport& r, const char* pass) {
  if (r.drift_events == 0 && r.backoff_s == 0 && r.discarded == 0) return "";
  return fmt::format(
      "{}: {} drift events, {} measurements discarded, {:.2f} s of back-off, {} "
      "anchor readings{}",
      pass, r.drift_events, r.discarded, r.backoff_s, r.anchor_readings,
      r.anchor_levels ? ", the anchor has two levels" : "");
}

const char* kind_word(table::SweepNote::Kind k) {
  switch (k) {
    case table::SweepNote::Kind::kNoiseFloor:
      return "noise";
    case table::SweepNote::Kind::kCoverage:
      return "bucket";
    case table::SweepNote::Kind::kRefused:
      return "refused";
    case table::SweepNote::Kind::kBaseline:
      return "baseline";
    case table::SweepNote::Kind::kDropped:
      return "drop";
    case table::SweepNote::Kind::kDefault:
      return "default";
    case table::SweepNote::Kind::kException:
      return "exception";
  }
  return "?";
}

}  // namespace

std::vector<std::string> sweep_log(const table::SweepGrid& grid, const SweepReport& report) {
  std::vector<std::string> out;
  std::size_t dropped = 0;
  for (const auto& c : report.cells) {
    const ProblemReport& t = c.tuned;
    const std::string where = cell_text(grid, c.cell);
    out.push_back(fmt::format(
        "cell {}: {}: baseline {}, best {}{}, {} evaluated / {} measured ({} from its group's "
        "earlier winners, {} of the op's first guesses), stopped by {}, {:.2f} s",
        where, t.problem.text(), us(t.baseline), us(t.best),
        t.speedup > 0 ? fmt::format(" ({:.2f}x, {})", t.speedup, t.best->config) : "", t.evaluated,
        t.measured, t.warm_first, t.seeded_first, t.stopped_by.empty() ? "-" : t.stopped_by,
        t.elapsed_s + (c.measured ? c.measured->elapsed_s : 0)));
    for (const std::string& line :
         {cooldown(t, "tuning"), c.measured ? cooldown(*c.measured, "candidates") : ""})
      if (!line.empty()) out.push_back(fmt::format("cooldown {}: {}", where, line));
    if (c.dropped) {
      ++dropped;
      out.push_back(fmt::format("dropped {}: {}", where, c.why));
    }
  }
  for (const auto& n : report.decision.notes)
    out.push_back(fmt::format("{} {}: {}", kind_word(n.kind), n.where, n.text));
  std::size_t defaults = 0;
  for (const auto& r : report.decision.rows) defaults += r.kind == "default";
  out.push_back(
      fmt::format("{} rows ({} default, {} exception) from {} cells, {} dropped; tuning {:.2f} s, "
                  "candidates {:.2f} s",
                  report.decision.rows.size(), defaults, report.decision.rows.size() - defaults,
                  report.cells.size(), dropped, report.tune_s, report.measure_s));
  return out;
}

}  // namespace attune
