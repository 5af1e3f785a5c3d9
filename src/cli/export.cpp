// attune export: what the database holds for a device, in another form.
//   --format json|csv|cpp: the tuned Table per device (src/table/export.h has the rules);
//   --format kernel-tuner --problem NAME [--spec FILE [--kernel F.cu]]: one problem's
//   measurements as a Kernel Tuner 1.5 cache (docs/kernel-tuner.md), so Kernel Tuner's
//   simulation mode (or attune import) can replay them.
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <map>
#include <set>

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "backends/registry.h"
#include "backends/replay/kernel_tuner_cache.h"
#include "backends/sim/sim_backend.h"
#include "cli/common.h"
#include "core/files.h"
#include "core/op.h"
#include "kernels/user/spec.h"
#include "table/export.h"
#include "table/formats.h"
#include "table/sweep.h"

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
  std::string spec;        // kernel-tuner: a user kernel's spec, for its full space
  std::string kernel;      // kernel-tuner: the spec's kernel source, when the spec names none
  std::string from_sweep;  // attune sweep's JSON rows (a file, or - for stdin) instead of the db
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
  if (!f.spec.empty() || !f.kernel.empty())
    return bad_input("--spec and --kernel are for --format kernel-tuner");
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

  auto store = open_store_or_report(g, false, /*read_only_ok=*/true);
  if (!store) return kExitBadInput;
  auto found = devices_named(*store, f.device, g.db);
  if (!found) return bad_input(found.error().message());
  const std::vector<DeviceFingerprint>& chosen = *found;

  std::vector<table::ExportResult> results;
  std::set<std::pair<std::string, std::string>> bucketed;
  for (const auto& d : chosen) {
    auto r = table::export_table(*store, d, o);
    if (!r) return exit_for(r.error());
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
    if (!output_is_free_or_report(g, "-o", path)) return kExitBadInput;
    if (auto st = write_text_file(path, *text); !st.ok()) return bad_input(st.error().message());
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

// attune sweep's rows (shards concatenated) as the tuned table libattune-rt and attune verify load:
// the sweep already applied the rules, so its rows are taken as they are, validated.
int run_sweep_export(const ExportFlags& f, table::Format format) {
  if (!f.device.empty() || !f.buckets.empty() || !f.bucket_edges.empty())
    return bad_input("--from-sweep takes the sweep's rows as they are: no --device or --bucket");
  std::string text;
  if (f.from_sweep == "-") {
    text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  } else {
    auto read = read_text_file(f.from_sweep, "--from-sweep");
    if (!read) return bad_input(read.error().message());
    text = std::move(*read);
  }
  auto rows = table::parse_sweep_rows(text);
  if (!rows) return bad_input(f.from_sweep + ": " + rows.error().message());
  if (rows->empty())
    return bad_input(f.from_sweep + " holds no sweep rows (attune sweep writes them on stdout)");
  const std::string now =
      fmt::format("{:%Y-%m-%dT%H:%M:%SZ}",
                  std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now()));
  auto t = table::table_from_sweep_rows(*rows, ATTUNE_VERSION, now);
  if (!t) return bad_input(f.from_sweep + ": " + t.error().message());
  auto rendered = table::render(*t, format);
  if (!rendered) return failed(rendered.error().message());
  const Destination dest = destination_of(f.out);
  if (dest.kind == Destination::Kind::kStdout) {
    fmt::print("{}", *rendered);
    return kExitOk;
  }
  std::string path = dest.path;
  if (dest.kind == Destination::Kind::kDirectory) {
    std::error_code ec;
    fs::create_directories(dest.path, ec);
    path = (fs::path(dest.path) / (t->device.slug() + "." + std::string(table::extension(format))))
               .string();
  }
  if (auto st = write_text_file(path, *rendered); !st.ok()) return bad_input(st.error().message());
  fmt::print(stderr, "wrote {}: {} sweep rows for {} ({})\n", path, rows->size(), t->device.name,
             t->device.key());
  return kExitOk;
}

int run_export(const GlobalOptions& g, const ExportFlags& f) {
  if (f.out != "-" && !output_is_free_or_report(g, "-o", f.out, {f.from_sweep}))
    return kExitBadInput;
  if (f.format == "kernel-tuner") {
    if (!f.from_sweep.empty())
      return bad_input("--from-sweep writes a tuned table: json, csv or cpp");
    return run_kernel_tuner_export(g, f);
  }
  auto format = table::parse_format(f.format);
  if (!format)
    return bad_input("--format '" + f.format + "': json, csv, cpp (tuned tables) or kernel-tuner");
  if (!f.from_sweep.empty()) return run_sweep_export(f, *format);
  return run_table_export(g, f, *format);
}

// What export knows of a problem beyond its measurements: its Space (every config Kernel Tuner's
// simulation mode will look up), its sizes and kernel name, and recorded samples.
struct ProblemFacts {
  std::optional<Space> space;
  std::string space_unknown;  // why space is unset, for the warning
  std::vector<std::int64_t> sizes;
  std::string kernel_name;
  std::string device_name;  // a recorded space's own device name; "" otherwise
  std::map<std::string, std::vector<double>> samples_us;  // by config text (a recorded space)
  std::string tune_command;                               // how to measure the rest of the space
};

// The sizes of a problem of a registered op, in its signature's order (--shape order); of any
// other problem its integer attributes by name (a user kernel's source and launch attributes are
// hashes, which may happen to be all digits: user::make_problem).
std::vector<std::int64_t> sizes_of(const Problem& p) {
  std::vector<std::int64_t> out;
  if (const OpSignature* op = find_op(p.op())) {
    for (const auto& name : op->sizes)
      if (auto v = p.int_attr(name)) out.push_back(*v);
    return out;
  }
  for (const auto& [name, text] : p.attrs()) {
    if (p.op() == "user" && (name == "source" || name == "launch")) continue;
    if (auto v = p.int_attr(name); v && text.find_first_not_of("0123456789") == std::string::npos)
      out.push_back(*v);
  }
  return out;
}

// nullopt after one line on stderr (bad input).
std::optional<ProblemFacts> facts_of(const ProblemRecord& rec, const std::string& backend,
                                     const ExportFlags& f) {
  const Problem& p = rec.problem;
  ProblemFacts facts;
  facts.kernel_name = p.attr("kernel") ? *p.attr("kernel") : p.op();
  facts.sizes = sizes_of(p);
  const std::string grid = " --strategy grid --patience 0";
  if (!f.spec.empty()) {
    if (p.op() != "user") {
      bad_input("--spec describes a user kernel; '" + p.name() + "' is a problem of op '" + p.op() +
                "'");
      return std::nullopt;
    }
    std::optional<std::filesystem::path> kernel;
    if (!f.kernel.empty()) kernel = f.kernel;
    auto spec = user::load_spec(f.spec, kernel);
    if (!spec) {
      bad_input(spec.error().message());
      return std::nullopt;
    }
    auto mine = user::spec_for_problem(*spec, p);
    if (!mine) {
      bad_input("--spec " + f.spec + " is not the spec of '" + p.name() +
                "': " + mine.error().message());
      return std::nullopt;
    }
    auto space = user::make_space(*mine);
    if (!space) {
      bad_input(space.error().message());
      return std::nullopt;
    }
    facts.space = std::move(space).value();
    facts.kernel_name = mine->kernel;
    facts.sizes.clear();
    std::string sizes;
    for (const auto& [name, v] : mine->problem) {
      facts.sizes.push_back(v);
      sizes += (sizes.empty() ? "" : ",") + name + "=" + std::to_string(v);
    }
    facts.tune_command = "attune tune" + (f.kernel.empty() ? "" : " --kernel " + f.kernel) +
                         " --spec " + f.spec + " --problem " + sizes + grid;
  } else if (!rec.payload.empty()) {
    // A recorded space: its payload is the compact cache `attune import` stored.
    auto rs = replay::parse_kernel_tuner_cache(rec.payload);
    if (!rs) {
      bad_input("stored recorded space '" + p.name() + "': " + rs.error().message());
      return std::nullopt;
    }
    facts.kernel_name = rs->kernel_name;
    facts.device_name = rs->device_name;
    facts.sizes = replay::problem_size_numbers(rs->problem_size);
    for (std::size_t i = 0; i < rs->points.size(); ++i)
      if (!rs->results[i].samples_us.empty())
        facts.samples_us[rs->space.config(rs->points[i]).text()] = rs->results[i].samples_us;
    facts.space = rs->space;
    facts.tune_command = "attune tune --backend replay --problem " + p.name() + grid;
  } else if (p.op() == "user") {
    facts.space_unknown = "a user kernel's space is in its spec: give --spec FILE [--kernel F.cu]";
  } else if (backend == "sim") {
    SimBackend sim;
    auto space = sim.space(p);
    if (space)
      facts.space = std::move(space).value();
    else
      facts.space_unknown = space.error().message();
    facts.tune_command = "attune tune --backend sim --problem " + p.text() + grid;
  } else {
    // The backend that measured it knows its space, when this machine can open it (the CUDA
    // plugin loads without a GPU only to say it has none).
    auto b = make_backend(backend);
    auto space = b ? (*b)->space(p) : Result<Space>(b.error());
    if (space)
      facts.space = std::move(space).value();
    else
      facts.space_unknown = "the " + backend + " backend cannot say: " + space.error().message();
    facts.tune_command = "attune tune --backend " + backend + " --problem " + p.text() + grid;
  }
  return facts;
}

int run_kernel_tuner_export(const GlobalOptions& g, const ExportFlags& f) {
  if (f.problem.empty())
    return bad_input("--format kernel-tuner needs --problem NAME (a cache holds one problem)");
  if (!f.kernel.empty() && f.spec.empty())
    return bad_input(
        "--kernel goes with --spec (the user kernel's source, if the spec names none)");
  auto store = open_store_or_report(g, false, /*read_only_ok=*/true);
  if (!store) return kExitBadInput;
  auto rec = store->find_problem(f.problem);
  if (!rec) return bad_input(rec.error().message());
  if (!*rec)
    return bad_input("no problem '" + f.problem + "' in " + g.db + " (see attune eval variants)");
  MeasurementQuery q;
  q.problem = (*rec)->key;
  q.device_key = f.device;
  // The rank regime: every config measured has a rank-regime row, only those near the best a
  // deploy-regime one. Kernel Tuner's simulation mode compares every config of the space with
  // every other, so they must all be timed the same way; rank (warm L2, back-to-back launches)
  // is also how Kernel Tuner itself times a kernel. Tables use deploy (src/table/export.h).
  q.regime = Regime::kRank;
  auto rows = store->measurements(q);
  if (!rows) return bad_input(rows.error().message());
  if (rows->empty()) return failed("no measurements of '" + f.problem + "' to export");

  std::map<std::string, std::size_t> per_device;
  for (const auto& r : *rows) ++per_device[r.device_key];
  std::string device = f.device;
  if (device.empty())
    for (const auto& [k, n] : per_device)
      if (device.empty() || n > per_device[device]) device = k;
  // Per config the newest row (rows come oldest first).
  std::map<std::string, const MeasurementRow*> chosen;
  std::vector<std::string> order;
  std::string backend;
  for (const auto& r : *rows) {
    if (r.device_key != device) continue;
    if (backend.empty()) backend = r.backend;
    auto [it, fresh] = chosen.emplace(r.config, &r);
    if (fresh) order.push_back(r.config);
    it->second = &r;
  }
  auto facts = facts_of(**rec, backend, f);
  if (!facts) return kExitBadInput;

  std::vector<replay::ExportRow> out;
  for (const auto& text : order) {
    const MeasurementRow& r = *chosen[text];
    auto c = Config::parse(r.config);
    if (!c) return failed("stored config '" + r.config + "': " + c.error().message());
    replay::ExportRow e;
    e.config = *c;
    e.verdict = r.outcome.verdict;
    e.measured_at = r.created_at;
    if (r.outcome.verdict == Verdict::kOk && r.outcome.measurement)
      e.time_us = r.outcome.measurement->median_us;
    else if (r.outcome.verdict == Verdict::kOk)
      e.verdict = Verdict::kLaunchFailed;  // an ok row without a time cannot be replayed as ok
    if (auto s = facts->samples_us.find(text); s != facts->samples_us.end())
      e.samples_us = s->second;
    out.push_back(std::move(e));
  }
  replay::CacheHeader header;
  header.device_name = facts->device_name.empty() ? device : facts->device_name;
  if (facts->device_name.empty())
    if (auto devices = store->devices())
      for (const auto& d : *devices)
        if (d.key() == device) header.device_name = d.name;
  const Problem& p = (*rec)->problem;
  header.kernel_name = facts->kernel_name;
  header.problem_size = facts->sizes;
  header.problem_size_text = p.text();
  header.space = facts->space;
  auto cache = replay::write_kernel_tuner_cache(header, out);
  if (!cache) return failed(cache.error().message());

  if (cache->outside_space > 0)
    spdlog::warn("{} stored configs of {} are not legal configs of its space; left out",
                 cache->outside_space, p.name());
  if (!cache->space_configs)
    spdlog::warn(
        "the space of {} is not known ({}); tune_params lists only the values measured, and "
        "Kernel Tuner's simulation mode needs every config of the space",
        p.name(), facts->space_unknown);
  else if (cache->configs < *cache->space_configs)
    spdlog::warn(
        "{} of {} configs of the space measured; Kernel Tuner's simulation mode needs every one: "
        "`{}` measures the rest (what is measured is answered from the database)",
        cache->configs, *cache->space_configs,
        facts->tune_command.empty() ? "attune tune ... --strategy grid --patience 0"
                                    : facts->tune_command);
  if (f.out.empty() || f.out == "-") {
    fmt::print("{}\n", cache->text);
  } else {
    if (auto st = write_text_file(f.out, cache->text + "\n"); !st.ok())
      return bad_input(st.error().message());
    fmt::print(stderr, "wrote {} configs of {} on {} to {}\n", cache->configs, p.name(),
               header.device_name, f.out);
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
         "ascending inclusive upper edges of the buckets, e.g. 1,2,4,8,16 (default: powers of two)")
      ->check(non_empty());
  sub->add_option("--from-sweep", f->from_sweep,
                  "attune sweep's JSON rows (shards concatenated; - for stdin) as the tuned table, "
                  "instead of the database's");
  sub->add_option("--problem", f->problem,
                  "kernel-tuner: the problem to export (name or structural key; a name several "
                  "problems share, as a user kernel tuned at two sizes, is refused)");
  sub->add_option(
      "--spec", f->spec,
      "kernel-tuner: a user kernel's spec (YAML), so tune_params lists its whole space");
  sub->add_option("--kernel", f->kernel,
                  "kernel-tuner, with --spec: the kernel source (.cu) when the spec names none");
  return {sub, [&g, f] { return run_export(g, *f); }};
}

}  // namespace attune::cli
