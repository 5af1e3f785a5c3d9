// attune report: what the tuning database holds as one self-contained HTML page
// (src/report/page.h; docs/report.md): the device and runs, per problem the best-so-far curve,
// baseline and winner, speedups per shape, failures, measurement health, and with --table a
// tuned table and what `attune verify` measured of it. No GPU needed.
#include <cstdlib>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/common.h"
#include "core/files.h"
#include "report/page.h"
#include "table/formats.h"

namespace attune::cli {

namespace {

struct ReportFlags {
  std::optional<std::int64_t> run;
  std::string problem;
  std::string table;
  std::string verify;
  std::string out;
};

int run_report(const GlobalOptions& g, const ReportFlags& f) {
  if (!f.verify.empty() && f.table.empty())
    return bad_input("--verify needs --table: the table that `attune verify` checked");
  if (!output_is_free_or_report(g, "-o", f.out, {f.table, f.verify})) return kExitBadInput;
  // The library first: without it no page can be written, whatever the database holds.
  // ATTUNE_CHART_JS points at another copy of Chart.js 3 (docs/report.md).
  const char* lib = std::getenv("ATTUNE_CHART_JS");
  auto chart_js = read_chart_js(lib && *lib ? lib : std::string(kChartJsPath));
  if (!chart_js) return bad_input(chart_js.error().message());
  auto store = open_store_or_report(g, false, /*read_only_ok=*/true);
  if (!store) return kExitBadInput;
  std::optional<TableEvidence> evidence;
  if (!f.table.empty()) {
    auto t = table::load_table(f.table);
    if (!t) return bad_input(t.error().message());
    evidence = TableEvidence{f.table, std::move(*t), std::nullopt};
    if (!f.verify.empty()) {
      auto text = read_text_file(f.verify, "the --verify file");
      if (!text) return bad_input(text.error().message());
      auto j = nlohmann::json::parse(*text, nullptr, false);
      if (j.is_discarded())
        return bad_input(f.verify + " is not JSON (--verify takes `attune verify --json` output)");
      evidence->verify = std::move(j);
    }
  }
  auto data = page_data(*store, {f.run, f.problem}, evidence);
  if (!data) return bad_input(data.error().message());
  if (auto s = write_text_file(f.out, render_page(*data, *chart_js)); !s.ok())
    return bad_input(s.error().message());
  fmt::print(stderr, "wrote {}: {} problems, {} runs, {} charts\n", f.out,
             (*data)["problems"].size(), (*data)["runs"].size(), (*data)["charts"].size());
  return kExitOk;
}

}  // namespace

Command add_report_command(CLI::App& app, GlobalOptions& g) {
  auto f = std::make_shared<ReportFlags>();
  CLI::App* sub = app.add_subcommand(
      "report", "the database as one self-contained HTML page (charts; opens offline)");
  sub->add_option("--run", f->run, "only the problems this run measured, and its curves");
  sub->add_option("--problem", f->problem, "only this problem (a name, an op or a structural key)");
  sub->add_option("--table", f->table, "a tuned table (attune export) to show: its rows");
  sub->add_option("--verify", f->verify,
                  "`attune verify TABLE --json` output: measured against recorded, hits, misses");
  sub->add_option("-o,--out", f->out, "the HTML file to write (report.html)")->required();
  return {sub, [&g, f] { return run_report(g, *f); }};
}

}  // namespace attune::cli
