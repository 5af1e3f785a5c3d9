// attune export: what the database holds for a device, in another form.
//   --format json|csv|cpp: the tuned Table per device (src/table/export.h has the rules);
//   --format kernel-tuner --problem NAME: one problem's measurements as a Kernel Tuner cache, so
//   Kernel Tuner (or attune import) can replay them.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "backends/replay/kernel_tuner_cache.h"
#include "cli/common.h"
#include "table/export.h"
#include "table/formats.h"

namespace attune::cli {

namespace {

namespace fs = std::filesystem;

struct ExportFlags {
  std::string format;
  std::string problem;
  std::string device;  // a device key (or slug); default: every device (kernel-tuner: the one with
                       // the most rows)
  std::string out;
  double min_improvement_pct = 3;
  std::vector<std::string> buckets;
  std::string bucket_edges;
};

int run_kernel_tuner_export(const GlobalOptions& g, const ExportFlags& f);

// Where the tables go: stdout, one file, or one file per device in a directory.
struct Destination {
  enum class Kind { kStdout, kFile, kDirectory } kind = Kind::kStdout;
  std::string path;
};

Destination destination_of(const std::string& out) {
  if (out.empty() || out == "-") return {};
  std::error_code ec;
  if (out.back() == '/' || fs::is_directory(out, ec)) return {Destination::Kind::kDirectory, out};
  return {Destination::Kind::kFile, out};
}

int run_table_export(const GlobalOptions& g, const ExportFlags& f, table::Format format) {
  if (!f.problem.empty())
    return bad_input(
        "--problem is for --format kernel-tuner; a table holds every tuned problem of a device");
  table::ExportOptions o;
  if (!(f.min_improvement_pct >= 0 && f.min_improvement_pct < 100))
    return bad_input(fmt::format("--min-improvement-pct {:g} is not a percentage in [0, 100)",
                                 f.min_improvement_pct));
  o.min_improvement_pct = f.min_improvement_pct;
  for (const auto& b : f.buckets) {
    auto spec = table::parse_bucket_spec(b);
    if (!spec) return bad_input(spec.error().message());
    o.buckets.push_back(*spec);
  }
  if (!f.bucket_edges.empty()) {
    if (o.buckets.empty())
      return bad_input("--bucket-edges needs --bucket AXIS (which attribute to bucket)");
    auto edges = table::parse_bucket_edges(f.bucket_edges);
    if (!edges) return bad_input(edges.error().message());
    o.bucket_edges = *edges;
  }
  const Destination dest = destination_of(f.out);

  auto store = open_store_or_report(g, false);
  if (!store) return kExitBadInput;
  auto devices = store->devices();
  if (!devices) return bad_input(devices.error().message());
  if (devices->empty())
    return bad_input("no measurements in " + g.db + " (run attune tune first, or pass --db)");
  std::vector<DeviceFingerprint> chosen;
  for (const auto& d : *devices)
    if (f.device.empty() || d.key() == f.device || d.slug() == f.device) chosen.push_back(d);
  if (chosen.empty()) {
    std::string known;
    for (const auto& d : *devices)
      known += fmt::format("{}{} ({})", known.empty() ? "" : ", ", d.key(), d.name);
    return bad_input(
        fmt::format("--device {}: no such device in {} (it has: {})", f.device, g.db, known));
  }

  std::vector<table::ExportResult> results;
  std::set<std::pair<std::string, std::string>> bucketed;
  for (const auto& d : chosen) {
    auto r = table::export_table(*store, d, o);
    if (!r)
      return r.error().kind() == Error::Kind::kInvalidArgument ? bad_input(r.error().message())
                                                               : failed(r.error().message());
    for (const auto& s : r->bucketed) bucketed.emplace(s.op, s.axis);
    results.push_back(std::move(*r));
  }
  for (const auto& s : o.buckets)
    if (!bucketed.count({s.op, s.axis}))
      return bad_input(fmt::format(
          "--bucket {}{}: no op table {}has the integer attribute '{}' on every problem",
          s.op.empty() ? "" : s.op + ":", s.axis, s.op.empty() ? "" : "of '" + s.op + "' ",
          s.axis));

  // Devices with nothing to export are said so; the others are written.
  std::vector<const table::ExportResult*> tables;
  for (const auto& r : results) {
    if (g.verbose)
      for (const auto& n : r.notes)
        fmt::print(stderr, "  {} {} {}: {}\n", n.op, n.dtype, n.what, n.why);
    if (r.rows() > 0) {
      tables.push_back(&r);
      continue;
    }
    std::string why =
        r.notes.empty() ? "no problem has deploy-regime measurements" : r.notes.front().why;
    fmt::print(
        stderr,
        "attune: nothing to export for {} ({}): {} problems, no row passed the rules (first: {})\n",
        r.table.device.name, r.table.device.key(), r.problems, why);
  }
  if (tables.empty()) return failed("nothing to export (-v lists why each problem was left out)");
  if (g.json && dest.kind == Destination::Kind::kStdout)
    return bad_input(
        "--json reports what was written: give -o DIR or -o FILE (without -o the table itself is "
        "stdout)");
  if (tables.size() > 1 && dest.kind != Destination::Kind::kDirectory)
    return bad_input(
        fmt::format("{} devices have tuned rows: give -o DIR (one file per device) or --device KEY",
                    tables.size()));

  std::map<std::string, int> slugs;
  for (const auto* t : tables) ++slugs[t->table.device.slug()];
  if (dest.kind == Destination::Kind::kDirectory) {
    std::error_code ec;
    fs::create_directories(dest.path, ec);
    if (!fs::is_directory(dest.path, ec) || ::access(dest.path.c_str(), W_OK) != 0)
      return bad_input("cannot write to directory '" + dest.path + "'");
  }
  nlohmann::json report{{"written", nlohmann::json::array()}};
  for (const auto* t : tables) {
    auto text = table::render(t->table, format);
    if (!text) return failed(text.error().message());
    const DeviceFingerprint& d = t->table.device;
    const std::string what = fmt::format(
        "{} rows in {} op tables for {} ({}); {} problems or buckets left to the baseline (-v: "
        "why)",
        t->rows(), t->table.ops.size(), d.name, d.key(), t->notes.size());
    if (dest.kind == Destination::Kind::kStdout) {
      fmt::print("{}", *text);
      fmt::print(stderr, "exported {}\n", what);
      continue;
    }
    std::string path = dest.path;
    if (dest.kind == Destination::Kind::kDirectory) {
      // Two devices of one name, arch and SM count (different memory) get their key appended.
      const std::string name = slugs[d.slug()] > 1 ? d.slug() + "-" + d.key() : d.slug();
      path = (fs::path(dest.path) / (name + "." + std::string(table::extension(format)))).string();
    }
    if (auto st = table::save_text(*text, path); !st.ok()) return bad_input(st.error().message());
    fmt::print(stderr, "wrote {}: {}\n", path, what);
    nlohmann::json left = nlohmann::json::array();
    for (const auto& n : t->notes)
      left.push_back({{"op", n.op}, {"dtype", n.dtype}, {"what", n.what}, {"why", n.why}});
    report["written"].push_back({{"path", path},
                                 {"format", table::extension(format)},
                                 {"device", d.name},
                                 {"device_key", d.key()},
                                 {"rows", t->rows()},
                                 {"op_tables", t->table.ops.size()},
                                 {"left_to_baseline", left}});
  }
  if (g.json) fmt::print("{}\n", report.dump(2));
  return kExitOk;
}

int run_export(const GlobalOptions& g, const ExportFlags& f) {
  if (f.format == "kernel-tuner") return run_kernel_tuner_export(g, f);
  auto format = table::parse_format(f.format);
  if (!format)
    return bad_input("--format '" + f.format + "': json, csv, cpp (tuned tables) or kernel-tuner");
  return run_table_export(g, f, *format);
}

int run_kernel_tuner_export(const GlobalOptions& g, const ExportFlags& f) {
  if (f.problem.empty())
    return bad_input("--format kernel-tuner needs --problem NAME (a cache holds one problem)");
  auto store = open_store_or_report(g, false);
  if (!store) return kExitBadInput;
  auto rec = store->find_problem(f.problem);
  if (!rec) return bad_input(rec.error().message());
  if (!*rec)
    return bad_input("no problem '" + f.problem + "' in " + g.db + " (see attune eval variants)");
  MeasurementQuery q;
  q.problem = (*rec)->key;
  q.device_key = f.device;
  auto rows = store->measurements(q);
  if (!rows) return bad_input(rows.error().message());
  if (rows->empty()) return failed("no measurements of '" + f.problem + "' to export");

  std::map<std::string, std::size_t> per_device;
  for (const auto& r : *rows) ++per_device[r.device_key];
  std::string device = f.device;
  if (device.empty())
    for (const auto& [k, n] : per_device)
      if (device.empty() || n > per_device[device]) device = k;
  // Per config: the deploy-regime row when there is one (what tables trust), else the newest.
  std::map<std::string, const MeasurementRow*> chosen;
  std::vector<std::string> order;
  for (const auto& r : *rows) {
    if (r.device_key != device) continue;
    auto [it, fresh] = chosen.emplace(r.config, &r);
    if (fresh) {
      order.push_back(r.config);
      continue;
    }
    const MeasurementRow* old = it->second;
    bool better = (r.regime == Regime::kDeploy && old->regime != Regime::kDeploy) ||
                  (r.regime == old->regime && r.id > old->id);
    if (better) it->second = &r;
  }
  std::vector<replay::ExportRow> out;
  for (const auto& text : order) {
    const MeasurementRow& r = *chosen[text];
    auto c = Config::parse(r.config);
    if (!c) return failed("stored config '" + r.config + "': " + c.error().message());
    replay::ExportRow e;
    e.config = *c;
    e.verdict = r.outcome.verdict;
    if (r.outcome.verdict == Verdict::kOk && r.outcome.measurement)
      e.time_us = r.outcome.measurement->median_us;
    else if (r.outcome.verdict == Verdict::kOk)
      e.verdict = Verdict::kLaunchFailed;  // an ok row without a time cannot be replayed as ok
    out.push_back(std::move(e));
  }
  std::string device_name = device;
  if (auto devices = store->devices())
    for (const auto& d : *devices)
      if (d.key() == device) device_name = d.name;
  const Problem& p = (*rec)->problem;
  const std::string* kernel = p.attr("kernel");
  const std::string* size = p.attr("problem_size");
  auto json = replay::write_kernel_tuner_cache(device_name, kernel ? *kernel : p.op(),
                                               size ? *size : p.text(), out);
  if (!json) return failed(json.error().message());
  if (f.out.empty() || f.out == "-") {
    fmt::print("{}\n", *json);
  } else {
    std::ofstream o(f.out);
    o << *json << "\n";
    if (!o) return bad_input("cannot write '" + f.out + "'");
    fmt::print(stderr, "wrote {} configs of {} on {} to {}\n", out.size(), p.name(), device_name,
               f.out);
  }
  return kExitOk;
}

}  // namespace

Command add_export_command(CLI::App& app, GlobalOptions& g) {
  auto* sub = app.add_subcommand(
      "export", "write the tuned table of each device, or one problem's measurements");
  auto f = std::make_shared<ExportFlags>();
  sub->add_option(
         "--format", f->format,
         "json | csv | cpp (a tuned table per device) | kernel-tuner (one problem's measurements)")
      ->required();
  sub->add_option(
      "-o,--output", f->out,
      "a directory (DIR/<device slug>.json|csv|h per device) or a file; default: stdout");
  sub->add_option("--device", f->device,
                  "a device key or slug (default: every device in the database; kernel-tuner: the "
                  "one with the most rows)");
  sub->add_option("--min-improvement-pct", f->min_improvement_pct,
                  "a row must save at least this % of its baseline's deploy time")
      ->check(finite_number())
      ->capture_default_str();
  sub->add_option(
      "--bucket", f->buckets,
      "AXIS or OP:AXIS: one row per range of this integer attribute (e.g. m), chosen by no-harm "
      "and least max regret (repeatable)");
  sub->add_option(
      "--bucket-edges", f->bucket_edges,
      "ascending inclusive upper edges of the buckets, e.g. 1,2,4,8,16 (default: powers of two)");
  sub->add_option("--problem", f->problem,
                  "kernel-tuner: the problem to export (name or structural key)");
  return {sub, [&g, f] { return run_export(g, *f); }};
}

}  // namespace attune::cli
