#include "table/export.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <ctime>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "table/bucket_rule.h"

namespace attune::table {

// NaN compares false, so a NaN error value fails the gate too.
bool passed_gate(const MeasurementRow& r) {
  const Outcome& o = r.outcome;
  return o.verdict == Verdict::kOk && o.measurement && o.measurement->median_us > 0 && o.check &&
         !o.check->metric.empty() && o.check->value <= o.check->tolerance;
}

namespace {

// One config's deploy-regime evidence at one problem.
struct Timing {
  double median_us = 0;
  ErrorCheck check;
};

// One problem on one backend: its baseline and every config that passed wherever it ran.
struct Evidence {
  Problem problem;
  std::string backend;
  std::string baseline_config;
  double baseline_us = 0;
  std::map<std::string, Timing> passing;  // by config text

  const std::pair<const std::string, Timing>& best() const {
    // Ties go to the first config text: exports are deterministic.
    return *std::min_element(passing.begin(), passing.end(), [](const auto& a, const auto& b) {
      return a.second.median_us < b.second.median_us;
    });
  }
};

Problem without(const Problem& p, const std::string& axis) {
  auto attrs = p.attrs();
  attrs.erase(axis);
  return Problem(p.op(), std::move(attrs));
}

std::string now_utc() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

double saved_pct(double us, double baseline_us) {
  return 100 * (1 - us / baseline_us);
}

// Gathers the evidence of every problem measured on `device`. Problems that cannot be exported
// at all (unknown backend, no trusted baseline) get a note.
Result<std::vector<Evidence>> collect(Store& store, const DeviceFingerprint& device,
                                      std::vector<ExportNote>* notes, std::size_t* problems) {
  MeasurementQuery q;
  q.device_key = device.key();
  // Every regime: a config that failed anywhere on this device is not trusted in a table, even
  // when another of its measurements passed (slow-but-correct beats fast-but-wrong).
  ATTUNE_ASSIGN(auto rows, store.measurements(q));
  ATTUNE_ASSIGN(auto records, store.problems());
  std::map<std::string, Problem> by_key;
  for (auto& r : records) by_key.emplace(r.key, std::move(r.problem));

  struct PerConfig {
    bool failed = false;
    const MeasurementRow* deploy = nullptr;  // the newest passing deploy row
  };
  std::map<std::pair<std::string, std::string>, std::map<std::string, PerConfig>> groups;
  for (const auto& r : rows) {  // ascending id: a later row replaces an earlier one
    PerConfig& c = groups[{r.problem_key, r.backend}][r.config];
    if (r.outcome.verdict != Verdict::kOk || (r.regime == Regime::kDeploy && !passed_gate(r)))
      c.failed = true;
    else if (r.regime == Regime::kDeploy)
      c.deploy = &r;
  }

  std::set<std::string> seen_problems;
  std::vector<Evidence> out;
  for (const auto& [where, configs] : groups) {
    const auto& [key, backend] = where;
    seen_problems.insert(key);
    auto p = by_key.find(key);
    const std::string what = p != by_key.end() ? p->second.text() : key;
    const std::string op = p != by_key.end() ? p->second.op() : "?";
    const std::string dtype = p != by_key.end() ? dtype_of(p->second) : "?";
    auto note = [&](std::string why) { notes->push_back({op, dtype, what, std::move(why)}); };
    if (p == by_key.end()) {
      note("its problem is not in the problems table");
      continue;
    }
    if (!known_backend(backend)) {
      note(fmt::format("measured on backend '{}', which libattune-rt cannot dispatch", backend));
      continue;
    }
    ATTUNE_ASSIGN(auto baseline, store.find_baseline(device.key(), key, backend));
    if (!baseline) {
      note(
          "no baseline recorded (tuned before attune recorded baselines); run `attune tune` on it "
          "again: it is answered from the database and records the baseline");
      continue;
    }
    auto b = configs.find(baseline->config);
    if (b == configs.end() || b->second.failed || !b->second.deploy) {
      note(fmt::format(
          "its baseline {} has no deploy-regime time that passed the gate: nothing can be "
          "shown to beat it",
          baseline->config));
      continue;
    }
    Evidence ev;
    ev.problem = p->second;
    ev.backend = backend;
    ev.baseline_config = baseline->config;
    ev.baseline_us = b->second.deploy->outcome.measurement->median_us;
    for (const auto& [config, c] : configs)
      if (!c.failed && c.deploy)
        ev.passing.emplace(
            config, Timing{c.deploy->outcome.measurement->median_us, *c.deploy->outcome.check});
    out.push_back(std::move(ev));
  }
  *problems = seen_problems.size();

  // One backend per problem: where a problem was tuned on two, the faster best one is kept.
  std::map<std::string, std::size_t> chosen;
  std::vector<Evidence> unique;
  for (auto& ev : out) {
    auto [it, fresh] = chosen.emplace(ev.problem.text(), unique.size());
    if (fresh) {
      unique.push_back(std::move(ev));
      continue;
    }
    Evidence& old = unique[it->second];
    const bool faster = ev.best().second.median_us < old.best().second.median_us;
    Evidence& dropped = faster ? old : ev;
    notes->push_back(
        {ev.problem.op(), dtype_of(ev.problem), ev.problem.text(),
         fmt::format("also measured on backend '{}'; the table keeps the faster backend",
                     dropped.backend)});
    if (faster) old = std::move(ev);
  }
  return unique;
}

Row exact_row(const Evidence& ev, const std::string& config, const Timing& t) {
  Row r;
  r.problem = ev.problem;
  r.backend = ev.backend;
  r.config = config;
  r.median_us = t.median_us;
  r.baseline_us = ev.baseline_us;
  r.baseline_config = ev.baseline_config;
  r.error = t.check;
  return r;
}

// The exact rule at one problem: its best config, when that is not the baseline and saves at
// least min_pct of the baseline's time. Otherwise nullopt and `why` says why.
std::optional<Row> best_row(const Evidence& ev, double min_pct, std::string* why) {
  const auto& [config, t] = ev.best();
  if (config == ev.baseline_config) {
    *why = "the baseline is the fastest config that passed the gate; the runtime runs it";
    return std::nullopt;
  }
  const double saved = saved_pct(t.median_us, ev.baseline_us);
  if (saved < min_pct) {
    *why = fmt::format(
        "the best config {} saves {:.1f}% of the baseline's {:.3g} us, under "
        "--min-improvement-pct {:g}: within noise; the runtime runs the baseline",
        config, saved, ev.baseline_us, min_pct);
    return std::nullopt;
  }
  return exact_row(ev, config, t);
}

std::string bucket_rule(const ExportOptions& o, const std::string& axis) {
  return fmt::format(
      "no-harm, then least maximum regret: a config represents a bucket of {0} only if it was "
      "deploy-measured at every measured point of the bucket, is no slower than that point's "
      "baseline at each, and saves at least {1:g}% of the baseline's time at one point or more; "
      "among those, the row's config has the least maximum over the points of time / best time "
      "at the point - 1 (ties: least summed relative time, then config text). A bucket with no "
      "such config is split into single-point rows [p, p], each the point's best config when it "
      "saves at least {1:g}%; its other values of {0} are left to the baseline. Buckets: {2}; a "
      "row's median_us and baseline_us are at its worst-regret point, its error the worst over "
      "its points.",
      axis, o.min_improvement_pct, bucket_edges_text(o.bucket_edges));
}

// Rows of one bucketed group: problems equal but for `axis`, by axis value.
void bucket_rows(const std::map<std::int64_t, const Evidence*>& points, const Problem& rest,
                 const std::string& axis, const ExportOptions& o, OpTable* table,
                 std::vector<ExportNote>* notes) {
  std::vector<std::int64_t> values;
  for (const auto& [v, _] : points) values.push_back(v);
  for (const auto& [range, pts] : assign_buckets(values, o.bucket_edges)) {
    const std::string where =
        fmt::format("{} {}=[{}, {}]", rest.text(), axis, range.first, range.second);
    auto note = [&](std::string what, std::string why) {
      notes->push_back({table->op, table->dtype, std::move(what), std::move(why)});
    };
    std::map<std::int64_t, double> best_at;
    for (auto p : pts) best_at[p] = points.at(p)->best().second.median_us;

    // A candidate is a (backend, config) measured at the first point; the rest must follow.
    const Evidence& first = *points.at(pts.front());
    std::vector<PointTimes> times;
    for (auto p : pts) {
      const Evidence& ev = *points.at(p);
      PointTimes t{p, ev.baseline_us, best_at[p], {}};
      if (ev.backend == first.backend)  // another backend's times are no evidence for this one
        for (const auto& [config, timing] : ev.passing) t.us.emplace(config, timing.median_us);
      times.push_back(std::move(t));
    }
    std::vector<std::string> candidates;
    for (const auto& [config, _] : first.passing) candidates.push_back(config);
    const std::optional<BucketChoice> chosen =
        least_max_regret(times, candidates, NoHarmRule{0, o.min_improvement_pct}).chosen;

    if (chosen) {
      const Evidence& at = *points.at(chosen->worst);
      Row r = exact_row(at, chosen->config, at.passing.at(chosen->config));
      r.problem = rest;
      r.bucket = Bucket{axis, range.first, range.second, pts};
      r.max_regret = chosen->max_regret;
      for (auto p : pts) {  // the worst error over the points: what the row can promise
        const Timing& t = points.at(p)->passing.at(chosen->config);
        if (t.check.value / t.check.tolerance > r.error.value / r.error.tolerance)
          r.error = t.check;
        r.bucket->point_us.push_back(t.median_us);
        r.bucket->baseline_point_us.push_back(points.at(p)->baseline_us);
      }
      table->rows.push_back(std::move(r));
      continue;
    }
    if (pts.size() > 1)
      note(where, fmt::format("no config is no slower than the baseline at all {} points with a "
                              "{:g}% win; split into single-point rows",
                              pts.size(), o.min_improvement_pct));
    for (auto p : pts) {
      std::string why;
      auto r = best_row(*points.at(p), o.min_improvement_pct, &why);
      if (!r) {
        note(points.at(p)->problem.text(), why);
        continue;
      }
      r->problem = rest;
      r->bucket = Bucket{axis, p, p, {p}, {r->median_us}, {r->baseline_us}};
      table->rows.push_back(std::move(*r));
    }
  }
}

// The bucket spec that applies to an op table, or nullopt (exact). An explicit OP:AXIS spec that
// does not fit its op's problems is an error.
Result<std::optional<BucketSpec>> bucketing_of(const std::string& op,
                                               const std::vector<const Evidence*>& evs,
                                               const std::vector<BucketSpec>& specs) {
  auto fits = [&](const std::string& axis) -> const Evidence* {
    for (const Evidence* ev : evs)
      if (!ev->problem.int_attr(axis)) return ev;
    return nullptr;
  };
  for (const auto& s : specs)
    if (s.op == op) {
      if (const Evidence* bad = fits(s.axis))
        return Error::invalid_argument(
            fmt::format("--bucket {}:{}: problem {} has no integer attribute '{}'", s.op, s.axis,
                        bad->problem.text(), s.axis));
      return std::optional<BucketSpec>(s);
    }
  for (const auto& s : specs)
    if (s.op.empty() && !fits(s.axis)) return std::optional<BucketSpec>(s);
  return std::optional<BucketSpec>();
}

bool is_word(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

}  // namespace

std::size_t ExportResult::rows() const {
  std::size_t n = 0;
  for (const auto& t : table.ops) n += t.rows.size();
  return n;
}

Result<BucketSpec> parse_bucket_spec(std::string_view text) {
  BucketSpec s;
  const auto colon = text.find(':');
  if (colon != std::string_view::npos) {
    s.op = std::string(text.substr(0, colon));
    text.remove_prefix(colon + 1);
    if (!is_word(s.op))
      return Error::invalid_argument(fmt::format(
          "--bucket '{}:{}': '{}' is not an op name (e.g. --bucket gemm:m)", s.op, text, s.op));
  }
  s.axis = std::string(text);
  if (!is_word(s.axis))
    return Error::invalid_argument(
        fmt::format("--bucket '{}': name an integer attribute, AXIS or OP:AXIS (e.g. m, gemm:m)",
                    s.op.empty() ? s.axis : s.op + ":" + s.axis));
  return s;
}

Result<std::vector<std::int64_t>> parse_bucket_edges(std::string_view text) {
  std::vector<std::int64_t> edges;
  std::string_view rest = text;
  while (true) {
    const auto comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    std::int64_t v = 0;
    auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (ec != std::errc() || end != item.data() + item.size() || v <= 0)
      return Error::invalid_argument(
          fmt::format("--bucket-edges '{}': '{}' is not a positive integer "
                      "(give ascending upper edges, e.g. 1,2,4,8,16)",
                      text, item));
    if (!edges.empty() && v <= edges.back())
      return Error::invalid_argument(
          fmt::format("--bucket-edges '{}': edges must be strictly ascending "
                      "({} after {})",
                      text, v, edges.back()));
    edges.push_back(v);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return edges;
}

Result<ExportResult> export_table(Store& store, const DeviceFingerprint& device,
                                  const ExportOptions& o) {
  ExportResult res;
  res.table.attune_version =
      o.attune_version.empty() ? std::string(ATTUNE_VERSION) : o.attune_version;
  res.table.created_at = now_utc();
  res.table.device = device;
  ATTUNE_ASSIGN(std::vector<Evidence> evidence, collect(store, device, &res.notes, &res.problems));

  std::map<std::pair<std::string, std::string>, std::vector<const Evidence*>> by_op;
  for (const auto& ev : evidence) by_op[{ev.problem.op(), dtype_of(ev.problem)}].push_back(&ev);
  std::set<std::pair<std::string, std::string>> applied;
  for (const auto& [od, evs] : by_op) {
    OpTable t;
    t.op = od.first;
    t.dtype = od.second;
    ATTUNE_ASSIGN(auto spec, bucketing_of(t.op, evs, o.buckets));
    if (!spec) {
      for (const Evidence* ev : evs) {
        std::string why;
        if (auto r = best_row(*ev, o.min_improvement_pct, &why))
          t.rows.push_back(std::move(*r));
        else
          res.notes.push_back({t.op, t.dtype, ev->problem.text(), why});
      }
    } else {
      applied.emplace(spec->op, spec->axis);
      t.match = MatchPolicy{MatchPolicy::Kind::kBucketed, spec->axis, bucket_rule(o, spec->axis)};
      std::map<std::string, std::pair<Problem, std::map<std::int64_t, const Evidence*>>> groups;
      for (const Evidence* ev : evs) {
        Problem rest = without(ev->problem, spec->axis);
        auto& g = groups.try_emplace(rest.text(), rest, std::map<std::int64_t, const Evidence*>{})
                      .first->second;
        g.second[*ev->problem.int_attr(spec->axis)] = ev;
      }
      for (const auto& [_, g] : groups)
        bucket_rows(g.second, g.first, spec->axis, o, &t, &res.notes);
    }
    if (t.rows.empty()) continue;
    std::sort(t.rows.begin(), t.rows.end(), [](const Row& a, const Row& b) {
      if (a.problem.text() != b.problem.text()) return a.problem.text() < b.problem.text();
      return a.bucket && b.bucket && a.bucket->lo < b.bucket->lo;
    });
    res.table.ops.push_back(std::move(t));
  }
  for (const auto& s : o.buckets)
    if (applied.count({s.op, s.axis})) res.bucketed.push_back(s);
  // The rules above are meant to produce only valid rows; the table's own check says so.
  if (auto st = validate(res.table); !st.ok())
    return Error::internal("export produced an invalid table: " + st.error().message());
  return res;
}

}  // namespace attune::table
