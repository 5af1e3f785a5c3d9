// attune db merge SRC DST: one tuning database's results copied into another (docs/fleet.md).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/common.h"
#include "core/files.h"
#include "store/merge.h"

namespace attune::cli {

namespace {

int run_merge(const GlobalOptions& g, const std::string& src, const std::string& dst) {
  if (src == dst || (!store_file(src).empty() && same_file(store_file(src), store_file(dst))))
    return bad_input("attune db merge: SRC and DST are the same database");
  auto from = open_store(src, false, /*read_only_ok=*/true);
  if (!from) return bad_input(from.error().message());
  auto into = open_store(dst, true);
  if (!into) return bad_input(into.error().message());
  auto n = merge_stores(**from, **into);
  if (!n) return failed(n.error().message());
  if (g.json) {
    fmt::print("{}\n", nlohmann::json({{"runs_added", n->runs_added},
                                       {"runs_known", n->runs_known},
                                       {"measurements_added", n->measurements_added},
                                       {"measurements_known", n->measurements_known},
                                       {"devices", n->devices},
                                       {"problems", n->problems},
                                       {"baselines", n->baselines}})
                           .dump(2));
  } else {
    fmt::print(
        "merged into {}: {} measurements added ({} already there), {} runs added ({} "
        "already there), {} devices, {} problems, {} baselines\n",
        dst.find("://") == std::string::npos ? dst : "the database", n->measurements_added,
        n->measurements_known, n->runs_added, n->runs_known, n->devices, n->problems, n->baselines);
  }
  return kExitOk;
}

}  // namespace

Command add_db_command(CLI::App& app, GlobalOptions& g) {
  auto* sub = app.add_subcommand("db", "operations on tuning databases");
  auto* merge = sub->add_subcommand(
      "merge", "copy SRC's results into DST (SQLite or postgresql://); merging twice adds nothing");
  auto src = std::make_shared<std::string>(), dst = std::make_shared<std::string>();
  merge->add_option("SRC", *src, "the database read (PATH, sqlite:PATH or postgresql://...)")
      ->required();
  merge->add_option("DST", *dst, "the database written (created if absent)")->required();
  sub->require_subcommand(1);
  return {sub, [&g, src, dst] { return run_merge(g, *src, *dst); }};
}

}  // namespace attune::cli
