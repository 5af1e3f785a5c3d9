// attune sweep OP --SIZE v1,v2,... [--dtype d1,d2]: tunes every cell of the grid and prints table
// rows only on stdout (JSON lines, or --format cpp), the log on stderr (docs/sweep.md).
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "cli/common.h"
#include "cli/search_flags.h"
#include "core/op.h"
#include "report/sweep_log.h"
#include "search/strategy.h"
#include "table/export.h"
#include "table/sweep.h"
#include "tune/sweep.h"

namespace attune::cli {

namespace {

struct SweepFlags {
  std::string op;
  std::string backend;
  std::string dtypes;                        // comma list; "": the op's first
  std::map<std::string, std::string> sizes;  // size name -> comma list, as given
  std::string format = "json";
  std::string bucket_edges;
  double min_gain_pct = 5;
  double max_default_regret_pct = 5;
  int device = -1;
  SearchFlags search;
};

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (true) {
    const auto comma = text.find(',', pos);
    out.push_back(text.substr(pos, comma - pos));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return out;
}

int run_sweep_command(const GlobalOptions& g, const SweepFlags& f,
                      const std::map<std::string, CLI::Option*>& size_options) {
  install_interrupt_handlers();
  // Everything the user asked for is checked before the database is opened or created.
  const OpSignature* op = find_op(f.op);
  if (!op) {
    std::string known;
    for (const OpSignature* s : registered_ops()) known += (known.empty() ? "" : ", ") + s->name;
    return bad_input(fmt::format("attune sweep: no op '{}' (the ops are: {})", f.op, known));
  }
  if (f.format != "json" && f.format != "cpp")
    return bad_input(
        fmt::format("--format '{}': attune sweep writes json (JSON lines) or cpp", f.format));
  std::map<std::string, std::vector<std::int64_t>> sizes;
  for (const auto& [size, text] : f.sizes) {
    if (size_options.at(size)->count() == 0) continue;
    if (std::find(op->sizes.begin(), op->sizes.end(), size) == op->sizes.end()) {
      std::string has;
      for (const auto& s : op->sizes) has += (has.empty() ? "" : ", ") + table::size_flag(s);
      return bad_input(fmt::format("{} is not a size of {} (its sizes: {})", table::size_flag(size),
                                   op->name, has));
    }
    auto values = table::parse_size_values(table::size_flag(size), text, op->max_size);
    if (!values) return bad_input(values.error().message());
    sizes[size] = std::move(*values);
  }
  std::vector<std::string> dtypes;
  if (!f.dtypes.empty()) dtypes = split(f.dtypes);
  auto grid = table::make_grid(*op, dtypes, sizes);
  if (!grid) return bad_input(grid.error().message());
  SweepOptions so;
  auto tune = search_options(f.search, g);
  if (!tune) return bad_input(tune.error().message());
  so.tune = std::move(*tune);
  if (!f.bucket_edges.empty()) {
    auto edges = table::parse_bucket_edges(f.bucket_edges);
    if (!edges) return bad_input(edges.error().message());
    so.rules.bucket_edges = std::move(*edges);
  }
  if (!(f.min_gain_pct >= 0) || !(f.max_default_regret_pct >= 0))
    return bad_input("--min-gain-pct and --max-default-regret-pct are percentages >= 0");
  so.rules.min_gain_pct = f.min_gain_pct;
  so.rules.max_default_regret_pct = f.max_default_regret_pct;

  auto backend = open_backend_or_report(f.backend, f.device);
  if (!backend) return kExitBadInput;
  std::vector<Problem> problems;
  for (const auto& cell : table::grid_cells(*grid)) {
    auto p = backend->resolve(table::cell_spec(*grid, cell));
    if (!p) return bad_input(p.error().message());
    problems.push_back(std::move(*p));
  }
  for (const auto& p : problems) {
    auto space = backend->space(p);
    if (!space) return bad_input(space.error().message());
    StrategyOptions sopt{so.tune.seed, 0, 1, so.tune.strategy_options};
    auto st = make_strategy(so.tune.strategy, *space, sopt);
    if (!st) return bad_input(st.error().message());
    if (auto pins = Tuner::check_pins(*space, so.tune.pins); !pins.ok())
      return bad_input(pins.error().message());
  }
  auto store = open_store_or_report(g, true);
  if (!store) return kExitBadInput;
  auto runner = make_runner(*backend, f.search);

  TuneObserver observer = [&](const TuneEvent& e) {
    if (!g.verbose) return;
    const std::string what =
        e.result.verdict == Verdict::kOk
            ? fmt::format("{:.2f} us{}", e.result.deploy_us.value_or(e.result.rank_us.value_or(0)),
                          e.result.deploy_us ? " (deploy)" : " (rank)")
            : fmt::format("{}: {}", to_string(e.result.verdict), e.result.message);
    spdlog::debug("[{} {}] {} -> {}{}", e.problem.name(), e.index, e.result.config, what,
                  e.result.replayed ? " [from database]" : "");
  };
  so.tune.interrupted = &g_interrupted;
  Tuner tuner(*store, *backend, *runner);
  auto report = run_sweep(tuner, *grid, problems, so, observer);
  if (!report) return failed(report.error().message());
  for (const auto& line : sweep_log(*grid, *report)) spdlog::info("{}", line);
  if (report->interrupted) {
    spdlog::error(
        "interrupted: {}; no rows are printed (what was measured is in the database, "
        "and a rerun answers it from there)",
        report->interruption);
    return kExitInterrupted;
  }
  const auto& rows = report->decision.rows;
  fmt::print("{}", f.format == "cpp" ? table::to_cpp_rows(rows) : table::to_json_lines(rows));
  std::fflush(stdout);
  if (!report->any_cell()) {
    spdlog::error("no cell of the grid could be tuned");
    return kExitFailed;
  }
  return kExitOk;
}

}  // namespace

Command add_sweep_command(CLI::App& app, GlobalOptions& g) {
  auto* sub = app.add_subcommand(
      "sweep",
      "tune a grid of an op's sizes and print table rows only (JSON lines or C++ rows) on "
      "stdout, the log on stderr (docs/sweep.md)");
  auto f = std::make_shared<SweepFlags>();
  std::string ops;
  for (const OpSignature* op : registered_ops()) ops += (ops.empty() ? "" : ", ") + op->name;
  sub->add_option("op", f->op, "the op (" + ops + ")")->required();
  sub->add_option("--backend", f->backend, "sim, ... (default: the GPU backend, else sim)");
  sub->add_option("--dtype", f->dtypes,
                  "comma-separated element types, outermost in the grid (default: the op's "
                  "first)");
  // One flag per size of any registered op; the command refuses one its op does not have.
  auto options = std::make_shared<std::map<std::string, CLI::Option*>>();
  std::map<std::string, std::vector<std::string>> users;
  for (const OpSignature* op : registered_ops())
    for (const auto& s : op->sizes) users[s].push_back(op->name);
  for (const auto& [size, by] : users) {
    std::string who;
    for (const auto& o : by) who += (who.empty() ? "" : ", ") + o;
    (*options)[size] = sub->add_option(table::size_flag(size), f->sizes[size],
                                       "comma-separated values of " + size + " (" + who + ")");
  }
  sub->add_option("--format", f->format, "json (JSON lines) or cpp (C++ initializer rows)")
      ->capture_default_str();
  sub->add_option("--bucket-edges", f->bucket_edges,
                  "inclusive upper edges of the buckets of the op's first size, ascending "
                  "(default: powers of two)");
  sub->add_option("--min-gain-pct", f->min_gain_pct,
                  "a bucket saving less than this percentage of its summed baseline time stays "
                  "at the baseline")
      ->check(finite_number())
      ->capture_default_str();
  sub->add_option("--max-default-regret-pct", f->max_default_regret_pct,
                  "a bucket where the group's default config's regret exceeds this percentage "
                  "gets an exception row")
      ->check(finite_number())
      ->capture_default_str();
  add_search_flags(sub, &f->search);
  add_device_option(sub, &f->device, "to sweep on (default: cuda $ATTUNE_DEVICE, else 0)");
  return {sub, [&g, f, options] { return run_sweep_command(g, *f, *options); }};
}

}  // namespace attune::cli
