#include "table/sweep.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "table/bucket_rule.h"

namespace attune::table {

namespace {

using ojson = nlohmann::ordered_json;

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// "head=128 kv=4096" of the sizes named, in the order named.
std::string sizes_text(const std::map<std::string, std::int64_t>& sizes,
                       const std::vector<SweepAxis>& axes) {
  std::string out;
  for (const auto& a : axes)
    if (auto it = sizes.find(a.size); it != sizes.end())
      out += fmt::format("{}{}={}", out.empty() ? "" : " ", a.size, it->second);
  return out;
}

std::map<std::string, std::int64_t> pick(const std::map<std::string, std::int64_t>& sizes,
                                         const std::vector<SweepAxis>& axes) {
  std::map<std::string, std::int64_t> out;
  for (const auto& a : axes) out[a.size] = sizes.at(a.size);
  return out;
}

Problem without(const Problem& p, const std::string& axis) {
  auto attrs = p.attrs();
  attrs.erase(axis);
  return Problem(p.op(), std::move(attrs));
}

double saved(double us, double baseline_us) {
  return 1 - us / baseline_us;
}

// The cells of one group: the same dtype and `per` sizes.
struct Group {
  std::string dtype;
  std::map<std::string, std::int64_t> per;
  std::vector<const CellTimes*> cells;  // grid order
};

// One bucket of one sub-group (the group's cells with the same `other` sizes).
struct BucketWork {
  std::map<std::string, std::int64_t> other;
  std::pair<std::int64_t, std::int64_t> range;
  std::vector<const CellTimes*> cells;  // ascending axis value
  std::string where;
  std::string config;  // chosen; "": the baseline
  std::set<std::int64_t> kept;
};

PointTimes point_times(const CellTimes& c, const std::string& axis) {
  PointTimes p;
  p.point = c.cell.sizes.at(axis);
  p.baseline_us = c.configs.at(c.baseline_config).median_us;
  p.best_us = p.baseline_us;
  for (const auto& [config, t] : c.configs) {
    p.us.emplace(config, t.median_us);
    p.best_us = std::min(p.best_us, t.median_us);
  }
  return p;
}

// The covers of `config` over the kept points of a bucket: one per run of kept points; a run
// reaches the bucket's edge where it holds the bucket's first or last point, else it stops at
// its own points (the values between a kept and a dropped point go to the baseline).
std::vector<SweepCover> covers_of(const BucketWork& b, const std::string& config,
                                  const std::string& axis) {
  std::vector<SweepCover> out;
  std::optional<SweepCover> run;
  for (std::size_t i = 0; i < b.cells.size(); ++i) {
    const CellTimes& c = *b.cells[i];
    const std::int64_t p = c.cell.sizes.at(axis);
    if (!b.kept.count(p)) {
      if (run) out.push_back(std::move(*run));
      run.reset();
      continue;
    }
    if (!run) {
      run = SweepCover{};
      run->problem = without(c.problem, axis);
      run->sizes = b.other;
      run->lo = i == 0 ? b.range.first : p;
      run->max_regret = -1;
    }
    run->hi = i + 1 == b.cells.size() ? b.range.second : p;
    run->points.push_back(p);
    const ConfigTime& t = c.configs.at(config);
    const double base = c.configs.at(c.baseline_config).median_us;
    double best = base;
    for (const auto& [_, other] : c.configs) best = std::min(best, other.median_us);
    run->point_us.push_back(t.median_us);
    run->baseline_point_us.push_back(base);
    const double regret = t.median_us / best - 1;
    if (regret > run->max_regret) {
      run->max_regret = regret;
      run->worst = p;
      run->median_us = t.median_us;
      run->baseline_us = base;
    }
    // The gate's bound, not the error it measured: the gate draws fresh random inputs for every
    // check, so the measured error differs between two measurements of one config and rows
    // that must be byte-identical across shards cannot carry it (the database holds it).
    if (run->error.metric.empty() || t.check.tolerance < run->error.tolerance)
      run->error = ErrorCheck{t.check.metric, t.check.tolerance, t.check.tolerance};
  }
  if (run) out.push_back(std::move(*run));
  return out;
}

// A row of `config` over covers: its worst-regret point is its covers' worst.
SweepRow row_of(const SweepGrid& g, const DeviceFingerprint& device, const Group& group,
                const std::string& kind, const std::string& config, std::vector<SweepCover> covers,
                std::int64_t measured) {
  SweepRow r;
  r.device = device;
  r.op = g.op;
  r.dtype = group.dtype;
  r.kind = kind;
  r.sizes = group.per;
  r.axis = g.bucket.size;
  r.config = config;
  r.backend = group.cells.front()->backend;
  r.baseline_config = group.cells.front()->baseline_config;
  r.measured = measured;
  r.max_regret = -1;
  for (const auto& c : covers)
    if (c.max_regret > r.max_regret) {
      r.max_regret = c.max_regret;
      r.median_us = c.median_us;
      r.baseline_us = c.baseline_us;
    }
  r.covers = std::move(covers);
  return r;
}

std::string pct(double fraction) {
  return fmt::format("{:.1f}%", 100 * fraction);
}

}  // namespace

std::string size_flag(std::string_view size) {
  std::string out = "--";
  for (char c : size) out += c == '_' ? '-' : c;
  return out;
}

Result<std::vector<std::int64_t>> parse_size_values(std::string_view flag, std::string_view text,
                                                    std::int64_t max) {
  std::vector<std::int64_t> out;
  std::string_view rest = text;
  while (true) {
    const auto comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    std::int64_t v = 0;
    auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc() || end != item.data() + item.size() || v <= 0 || v > max)
      return Error::invalid_argument(fmt::format(
          "{} '{}': '{}' is not a positive integer up to {} (give a comma list, e.g. {} 1,2,4)",
          flag, text, item, max, flag));
    if (std::find(out.begin(), out.end(), v) != out.end())
      return Error::invalid_argument(
          fmt::format("{} '{}': {} is given twice; give each value once", flag, text, v));
    out.push_back(v);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return out;
}

Result<SweepGrid> make_grid(const OpSignature& op, const std::vector<std::string>& dtypes,
                            const std::map<std::string, std::vector<std::int64_t>>& sizes) {
  SweepGrid g;
  g.op = op.name;
  std::vector<std::string> flags;
  for (const auto& s : op.sizes) flags.push_back(size_flag(s));
  for (const auto& [size, _] : sizes)
    if (!contains(op.sizes, size))
      return Error::invalid_argument(
          fmt::format("{} has no size '{}' (its sizes: {})", op.name, size, join(flags, ", ")));
  g.dtypes = dtypes.empty() ? std::vector<std::string>{op.dtypes.front()} : dtypes;
  std::set<std::string> seen;
  for (const auto& d : g.dtypes) {
    if (!contains(op.dtypes, d))
      return Error::invalid_argument(
          fmt::format("--dtype '{}': {} takes {}", d, op.name, join(op.dtypes, ", ")));
    if (!seen.insert(d).second)
      return Error::invalid_argument(
          fmt::format("--dtype: '{}' is given twice; give each value once", d));
  }
  auto axis = [&](const std::string& size) -> Result<SweepAxis> {
    if (auto it = sizes.find(size); it != sizes.end()) return SweepAxis{size, it->second};
    auto d = op.sweep_defaults.find(size);
    if (d == op.sweep_defaults.end())
      return Error::invalid_argument(
          fmt::format("attune sweep {} needs {} (comma-separated values of {}; it has no default)",
                      op.name, size_flag(size), size));
    std::int64_t v = 0;
    auto [end, ec] = std::from_chars(d->second.data(), d->second.data() + d->second.size(), v);
    if (ec != std::errc() || end != d->second.data() + d->second.size() || v <= 0)
      return Error::internal(fmt::format("{}'s sweep default {}={} is not a positive integer",
                                         op.name, size, d->second));
    return SweepAxis{size, {v}};
  };
  ATTUNE_ASSIGN(g.bucket, axis(op.sizes.front()));
  for (const auto& s : op.sweep_default_per) {
    if (!contains(op.sizes, s) || s == op.sizes.front())
      return Error::internal(fmt::format(
          "{}'s sweep_default_per names '{}', which is not one of its sizes past the first",
          op.name, s));
    ATTUNE_ASSIGN(SweepAxis a, axis(s));
    g.per.push_back(std::move(a));
  }
  for (std::size_t i = 1; i < op.sizes.size(); ++i) {
    if (contains(op.sweep_default_per, op.sizes[i])) continue;
    ATTUNE_ASSIGN(SweepAxis a, axis(op.sizes[i]));
    g.other.push_back(std::move(a));
  }
  return g;
}

std::vector<SweepCell> grid_cells(const SweepGrid& g) {
  std::vector<const SweepAxis*> axes;  // outermost first
  for (const auto& a : g.per) axes.push_back(&a);
  for (const auto& a : g.other) axes.push_back(&a);
  axes.push_back(&g.bucket);
  std::vector<SweepCell> out;
  for (const auto& dtype : g.dtypes) {
    std::vector<std::size_t> at(axes.size(), 0);
    while (true) {
      SweepCell c{dtype, {}};
      for (std::size_t i = 0; i < axes.size(); ++i) c.sizes[axes[i]->size] = axes[i]->values[at[i]];
      out.push_back(std::move(c));
      std::size_t i = axes.size();
      while (i > 0 && ++at[i - 1] == axes[i - 1]->values.size()) at[--i] = 0;
      if (i == 0) break;
    }
  }
  return out;
}

std::string cell_spec(const SweepGrid& g, const SweepCell& cell) {
  std::string spec = g.op + ":dtype=" + cell.dtype;
  for (const auto& [size, v] : cell.sizes) spec += fmt::format(",{}={}", size, v);
  return spec;
}

double noise_floor(const std::vector<double>& noises) {
  std::vector<double> v;
  for (double n : noises)
    if (std::isfinite(n) && n > 0) v.push_back(n);
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto rank = static_cast<std::size_t>(std::ceil(0.9 * static_cast<double>(v.size())));
  return 2 * std::sqrt(2.0) * v[std::max<std::size_t>(rank, 1) - 1];
}

SweepDecision decide_rows(const SweepGrid& g, const std::vector<CellTimes>& cells,
                          const DeviceFingerprint& device, const SweepRules& rules) {
  SweepDecision out;
  const std::string& axis = g.bucket.size;
  auto note = [&](SweepNote::Kind k, std::string where, std::string text) {
    out.notes.push_back({k, std::move(where), std::move(text)});
  };

  // Groups in grid order (cells come in grid order, so a group's first cell orders it).
  std::vector<Group> groups;
  for (const CellTimes& c : cells) {
    if (!c.configs.count(c.baseline_config)) {
      note(SweepNote::Kind::kBaseline, c.problem.text(),
           "its baseline " + c.baseline_config +
               " has no deploy-regime time that passed the gate: nothing can be shown to beat "
               "it; the cell gets no row");
      continue;
    }
    auto per = pick(c.cell.sizes, g.per);
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const Group& x) { return x.dtype == c.cell.dtype && x.per == per; });
    if (it == groups.end()) it = groups.insert(groups.end(), Group{c.cell.dtype, per, {}});
    it->cells.push_back(&c);
  }

  for (const Group& group : groups) {
    const std::string gname =
        group.dtype + (g.per.empty() ? "" : " " + sizes_text(group.per, g.per));
    std::vector<double> noises;
    for (const CellTimes* c : group.cells)
      for (const auto& [_, t] : c->configs) noises.push_back(t.noise);
    const double floor = rules.noise_floor ? *rules.noise_floor : noise_floor(noises);
    note(SweepNote::Kind::kNoiseFloor, gname,
         fmt::format("noise floor {} ({} deploy-regime medians{})", pct(floor), noises.size(),
                     rules.noise_floor ? ", set by hand"
                                       : ", 2*sqrt(2) x their 90th-percentile "
                                         "relative standard error"));
    // Candidates: every cell's winner in grid order, then the baseline.
    std::vector<std::string> candidates;
    for (const CellTimes* c : group.cells)
      if (!c->winner.empty() && !contains(candidates, c->winner)) candidates.push_back(c->winner);
    const std::string& baseline = group.cells.front()->baseline_config;
    if (!contains(candidates, baseline)) candidates.push_back(baseline);

    // Sub-groups by the other sizes, in grid order, each cut into buckets of the axis.
    std::vector<BucketWork> buckets;
    {
      std::vector<std::pair<std::map<std::string, std::int64_t>, std::vector<const CellTimes*>>>
          subs;
      for (const CellTimes* c : group.cells) {
        auto other = pick(c->cell.sizes, g.other);
        auto it =
            std::find_if(subs.begin(), subs.end(), [&](const auto& s) { return s.first == other; });
        if (it == subs.end()) it = subs.insert(subs.end(), {other, {}});
        it->second.push_back(c);
      }
      for (const auto& [other, sub] : subs) {
        std::map<std::int64_t, const CellTimes*> by_point;
        for (const CellTimes* c : sub) by_point[c->cell.sizes.at(axis)] = c;
        std::vector<std::int64_t> points;
        for (const auto& [p, _] : by_point) points.push_back(p);
        for (const auto& [range, pts] : assign_buckets(points, rules.bucket_edges)) {
          BucketWork b;
          b.other = other;
          b.range = range;
          for (auto p : pts) b.cells.push_back(by_point.at(p));
          std::string at = sizes_text(other, g.other);
          b.where = fmt::format("{}{}{} {}=[{}, {}]", gname, at.empty() ? "" : " ", at, axis,
                                range.first, range.second);
          buckets.push_back(std::move(b));
        }
      }
    }

    // Per bucket: no-harm within the floor, least max regret, the gate, the drop.
    std::int64_t group_points = 0;
    for (BucketWork& b : buckets) {
      std::vector<PointTimes> pts;
      for (const CellTimes* c : b.cells) pts.push_back(point_times(*c, axis));
      group_points += static_cast<std::int64_t>(pts.size());
      BucketDecision d = least_max_regret(pts, candidates, NoHarmRule{floor, std::nullopt});
      for (const Refusal& r : d.refused)
        note(SweepNote::Kind::kRefused, b.where,
             fmt::format("{} refused at {}={}: {}", r.config, axis, r.point, r.why));
      std::string points_text;
      for (const auto& p : pts)
        points_text += (points_text.empty() ? "" : ",") + std::to_string(p.point);
      if (!d.chosen || d.chosen->config == baseline) {
        note(SweepNote::Kind::kBaseline, b.where,
             fmt::format("points {}: the baseline has the least max regret; no row", points_text));
        continue;
      }
      double sum = 0, base_sum = 0;
      for (const auto& p : pts) {
        sum += p.us.at(d.chosen->config);
        base_sum += p.baseline_us;
      }
      const double gain = saved(sum, base_sum);
      if (100 * gain < rules.min_gain_pct) {
        note(SweepNote::Kind::kBaseline, b.where,
             fmt::format("points {}: {} saves {} of the summed baseline time, under the {:g}% "
                         "benefit gate; no row",
                         points_text, d.chosen->config, pct(gain), rules.min_gain_pct));
        continue;
      }
      for (const auto& p : pts) {
        const double s = saved(p.us.at(d.chosen->config), p.baseline_us);
        if (s > floor)
          b.kept.insert(p.point);
        else
          note(SweepNote::Kind::kDropped, b.where,
               fmt::format("{}={}: {} saves {}, not past the noise floor {}; no row there (the "
                           "baseline runs)",
                           axis, p.point, d.chosen->config, pct(s), pct(floor)));
      }
      if (b.kept.empty()) continue;
      b.config = d.chosen->config;
      std::string kept_text;
      for (auto p : b.kept) kept_text += (kept_text.empty() ? "" : ",") + std::to_string(p);
      note(SweepNote::Kind::kCoverage, b.where,
           fmt::format("points {}, rows at {}: {} (max regret {}, saves {} summed)", points_text,
                       kept_text, b.config, pct(d.chosen->max_regret), pct(gain)));
    }

    // Compression: the default is the candidate that represents the most of the group's rows,
    // a bucket's row being represented when at each of its points with a row the candidate is no
    // slower than the baseline (within the noise floor), saves more than the floor, and is within
    // max_default_regret_pct of the point's best; ties go to the least max regret over the rows it
    // represents, then to candidate order. The other rows stay as exception rows. A candidate
    // that harms one point can still be the default of the others: which rows it represents is
    // decided per bucket.
    auto represents = [&](const BucketWork& b, const std::string& config, double* worst) {
      double bucket_worst = 0;
      for (const CellTimes* c : b.cells) {
        const std::int64_t p = c->cell.sizes.at(axis);
        if (!b.kept.count(p)) continue;
        const PointTimes t = point_times(*c, axis);
        auto us = t.us.find(config);
        if (us == t.us.end() || us->second > t.baseline_us * (1 + floor) ||
            saved(us->second, t.baseline_us) <= floor)
          return false;
        const double regret = us->second / t.best_us - 1;
        // The bucket's own choice represents it whatever its regret (it is the best there is).
        if (config != b.config && 100 * regret > rules.max_default_regret_pct) return false;
        bucket_worst = std::max(bucket_worst, regret);
      }
      *worst = std::max(*worst, bucket_worst);
      return true;
    };
    std::string def;
    std::size_t def_rows = 0;
    double def_regret = 0;
    for (const auto& c : candidates) {
      if (c == baseline) continue;
      std::size_t rows = 0;
      double worst = 0;
      for (const BucketWork& b : buckets)
        if (!b.config.empty() && represents(b, c, &worst)) ++rows;
      if (rows > def_rows || (rows == def_rows && rows > 0 && worst < def_regret)) {
        def = c;
        def_rows = rows;
        def_regret = worst;
      }
    }
    std::vector<SweepCover> default_covers;
    std::vector<SweepRow> exceptions;
    for (const BucketWork& b : buckets) {
      if (b.config.empty()) continue;
      double regret = 0;
      const bool covered = !def.empty() && represents(b, def, &regret);
      if (def.empty())
        note(SweepNote::Kind::kException, b.where,
             "exception row " + b.config +
                 ": no candidate clears the noise floor within the regret bound at every point");
      else
        note(covered ? SweepNote::Kind::kDefault : SweepNote::Kind::kException, b.where,
             covered ? fmt::format("the default {} covers it (regret {})", def, pct(regret))
                     : fmt::format("exception row {}: the default {} is over {:g}% regret, "
                                   "slower than the baseline or within the noise floor at one of "
                                   "its points",
                                   b.config, def, rules.max_default_regret_pct));
      auto covers = covers_of(b, covered ? def : b.config, axis);
      if (covered) {
        for (auto& c : covers) default_covers.push_back(std::move(c));
      } else {
        SweepRow r = row_of(g, device, group, "exception", b.config, std::move(covers),
                            static_cast<std::int64_t>(b.cells.size()));
        for (const auto& [k, v] : b.other) r.sizes[k] = v;
        exceptions.push_back(std::move(r));
      }
    }
    if (!default_covers.empty())
      out.rows.push_back(
          row_of(g, device, group, "default", def, std::move(default_covers), group_points));
    for (auto& r : exceptions) out.rows.push_back(std::move(r));
  }
  return out;
}

std::string sweep_rule_text(const SweepRules& rules, const std::string& axis) {
  return fmt::format(
      "attune sweep (docs/sweep.md): per bucket of {0}, among the group's tuned configs and the "
      "baseline, those no slower than the baseline beyond the noise floor at every point; the "
      "least maximum regret (time / the point's best time - 1) wins; a bucket saving under "
      "{1:g}% of its summed baseline time, or whose choice is the baseline, has no row; a point "
      "not saving more than the noise floor has no row; one default config per group plus "
      "exception rows where its regret exceeds {2:g}%. Buckets: {3}",
      axis, rules.min_gain_pct, rules.max_default_regret_pct,
      bucket_edges_text(rules.bucket_edges));
}

namespace {

ojson error_json(const ErrorCheck& e) {
  return ojson{{"metric", e.metric}, {"tolerance", e.tolerance}};
}

ojson row_json(const SweepRow& r) {
  ojson covers = ojson::array();
  std::int64_t lo = 0, hi = 0;
  std::vector<std::int64_t> points;
  for (const auto& c : r.covers) {
    lo = covers.empty() ? c.lo : std::min(lo, c.lo);
    hi = covers.empty() ? c.hi : std::max(hi, c.hi);
    for (auto p : c.points)
      if (std::find(points.begin(), points.end(), p) == points.end()) points.push_back(p);
    covers.push_back(ojson{{"problem", c.problem.text()},
                           {"sizes", c.sizes},
                           {"lo", c.lo},
                           {"hi", c.hi},
                           {"points", c.points},
                           {"point_us", c.point_us},
                           {"baseline_point_us", c.baseline_point_us},
                           {"worst", c.worst},
                           {"median_us", c.median_us},
                           {"baseline_us", c.baseline_us},
                           {"max_regret", c.max_regret},
                           {"error", error_json(c.error)}});
  }
  std::sort(points.begin(), points.end());
  return ojson{{"format", kSweepFormat},
               {"version", kSweepVersion},
               {"device",
                {{"key", r.device.key()},
                 {"name", r.device.name},
                 {"backend", r.device.backend},
                 {"arch", r.device.arch},
                 {"sm_count", r.device.sm_count},
                 {"memory_bytes", r.device.memory_bytes}}},
               {"op", r.op},
               {"dtype", r.dtype},
               {"kind", r.kind},
               {"sizes", r.sizes},
               {"axis", r.axis},
               {"lo", lo},
               {"hi", hi},
               {"points", points},
               {"config", r.config},
               {"backend", r.backend},
               {"baseline_config", r.baseline_config},
               {"median_us", r.median_us},
               {"baseline_us", r.baseline_us},
               {"max_regret", r.max_regret},
               {"measured", r.measured},
               {"covers", covers}};
}

std::string cpp_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// Shortest text that reads back as the same double, as JSON writes it.
std::string number(double v) {
  return ojson(v).dump();
}

}  // namespace

std::string to_json_lines(const std::vector<SweepRow>& rows) {
  std::string out;
  for (const auto& r : rows) out += row_json(r).dump() + "\n";
  return out;
}

std::string to_cpp_rows(const std::vector<SweepRow>& rows) {
  std::string out;
  for (const auto& r : rows)
    for (const auto& c : r.covers)
      out += fmt::format("{{{}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}}},\n",
                         cpp_string(r.device.key()), cpp_string(r.op), cpp_string(r.dtype),
                         cpp_string(r.kind), cpp_string(c.problem.text()), cpp_string(r.axis), c.lo,
                         c.hi, cpp_string(r.config), cpp_string(r.backend), number(c.median_us),
                         number(c.baseline_us), number(c.max_regret));
  return out;
}

Result<std::vector<SweepRow>> parse_sweep_rows(std::string_view text) {
  std::vector<SweepRow> rows;
  std::size_t line_no = 0;
  while (!text.empty()) {
    const auto nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    auto bad = [&](const std::string& why) {
      return Error::invalid_argument(fmt::format("sweep rows line {}: {}", line_no, why));
    };
    try {
      const auto j = nlohmann::json::parse(line);
      if (j.value("format", "") != kSweepFormat)
        return bad(
            fmt::format("not an {} row (its format is '{}')", kSweepFormat, j.value("format", "")));
      if (j.at("version").get<int>() > kSweepVersion)
        return bad(fmt::format("version {} is newer than this attune's {}",
                               j.at("version").get<int>(), kSweepVersion));
      SweepRow r;
      ATTUNE_ASSIGN(r.device, device_from_json(j.at("device")));
      if (r.device.key() != j.at("device").at("key").get<std::string>())
        return bad("the device's key does not match its fields");
      r.op = j.at("op").get<std::string>();
      r.dtype = j.at("dtype").get<std::string>();
      r.kind = j.at("kind").get<std::string>();
      if (r.kind != "default" && r.kind != "exception")
        return bad("kind '" + r.kind + "' is neither default nor exception");
      r.sizes = j.at("sizes").get<std::map<std::string, std::int64_t>>();
      r.axis = j.at("axis").get<std::string>();
      r.config = j.at("config").get<std::string>();
      r.backend = j.at("backend").get<std::string>();
      r.baseline_config = j.at("baseline_config").get<std::string>();
      r.median_us = j.at("median_us").get<double>();
      r.baseline_us = j.at("baseline_us").get<double>();
      r.max_regret = j.at("max_regret").get<double>();
      r.measured = j.at("measured").get<std::int64_t>();
      for (const auto& c : j.at("covers")) {
        SweepCover v;
        auto p = Problem::parse(c.at("problem").get<std::string>());
        if (!p) return bad(p.error().message());
        v.problem = *p;
        v.sizes = c.at("sizes").get<std::map<std::string, std::int64_t>>();
        v.lo = c.at("lo").get<std::int64_t>();
        v.hi = c.at("hi").get<std::int64_t>();
        v.points = c.at("points").get<std::vector<std::int64_t>>();
        v.point_us = c.at("point_us").get<std::vector<double>>();
        v.baseline_point_us = c.at("baseline_point_us").get<std::vector<double>>();
        v.worst = c.at("worst").get<std::int64_t>();
        v.median_us = c.at("median_us").get<double>();
        v.baseline_us = c.at("baseline_us").get<double>();
        v.max_regret = c.at("max_regret").get<double>();
        const auto& e = c.at("error");
        // A row promises the gate passed at every point: its error is at most the tolerance.
        v.error = {e.at("metric").get<std::string>(), e.at("tolerance").get<double>(),
                   e.at("tolerance").get<double>()};
        r.covers.push_back(std::move(v));
      }
      if (r.covers.empty()) return bad("a row that covers nothing");
      rows.push_back(std::move(r));
    } catch (const nlohmann::json::exception& e) {
      return bad(e.what());
    }
  }
  return rows;
}

Result<Table> table_from_sweep_rows(const std::vector<SweepRow>& rows,
                                    const std::string& attune_version,
                                    const std::string& created_at) {
  Table t;
  t.attune_version = attune_version;
  t.created_at = created_at;
  if (rows.empty()) return Error::invalid_argument("no sweep rows: nothing to make a table of");
  t.device = rows.front().device;
  std::map<std::pair<std::string, std::string>, std::size_t> index;
  for (const auto& r : rows) {
    if (r.device.key() != t.device.key())
      return Error::invalid_argument(fmt::format(
          "sweep rows of two devices ({} and {}): a table is one device's; split the rows",
          t.device.key(), r.device.key()));
    for (const auto& c : r.covers) {
      const std::string dtype = dtype_of(c.problem);
      auto [it, fresh] = index.emplace(std::make_pair(r.op, dtype), t.ops.size());
      if (fresh) {
        OpTable o;
        o.op = r.op;
        o.dtype = dtype;
        o.match = MatchPolicy{
            MatchPolicy::Kind::kBucketed, r.axis,
            "attune sweep rows (docs/sweep.md): per bucket of " + r.axis +
                ", no-harm within the noise floor at every point and the least maximum regret, "
                "an aggregate benefit gate, no row at a point not saving more than the noise "
                "floor, a default config per group with exception rows"};
        t.ops.push_back(std::move(o));
      }
      OpTable& o = t.ops[it->second];
      if (o.match.axis != r.axis)
        return Error::invalid_argument(
            fmt::format("sweep rows of {} bucket both '{}' and '{}'", r.op, o.match.axis, r.axis));
      Row row;
      row.problem = c.problem;
      row.bucket = Bucket{r.axis, c.lo, c.hi, c.points, c.point_us, c.baseline_point_us};
      row.backend = r.backend;
      row.config = r.config;
      row.median_us = c.median_us;
      row.baseline_us = c.baseline_us;
      row.baseline_config = r.baseline_config;
      row.error = c.error;
      row.max_regret = c.max_regret;
      o.rows.push_back(std::move(row));
    }
  }
  ATTUNE_TRY(validate(t));
  return t;
}

}  // namespace attune::table
