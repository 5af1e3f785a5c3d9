// attune import kernel-tuner FILE [--name NAME]: a Kernel Tuner cache (JSON or .json.gz) into the
// tuning database as a replayable problem (tune it with --backend replay --problem NAME).
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "backends/replay/kernel_tuner_cache.h"
#include "cli/common.h"

namespace attune::cli {

namespace {

std::string stem(const std::string& path) {
  std::string s = std::filesystem::path(path).filename().string();
  for (const std::string ext : {".json.gz", ".json", ".gz"})
    if (s.size() > ext.size() && s.ends_with(ext)) return s.substr(0, s.size() - ext.size());
  return s;
}

int run_import(const GlobalOptions& g, const std::string& file, std::string name) {
  // Read and check the whole file before the database is touched: nothing is imported half-way.
  auto rs = replay::load_kernel_tuner_cache(file);
  if (!rs) return bad_input(rs.error().message());
  if (name.empty()) name = stem(file);
  Problem problem = rs->problem();
  problem.set_name(name);
  auto store = open_store_or_report(g, true);
  if (!store) return kExitBadInput;
  auto same = store->find_problem(name);
  if (!same) return bad_input(same.error().message());
  if (*same && (*same)->key != problem.structural_key())
    return bad_input("the name '" + name + "' is already taken by another problem in " + g.db +
                     "; choose another with --name");
  // One recorded space has one name: importing it again under another would rename it, and
  // every command naming it the old way would stop finding it.
  auto stored = store->find_problem(problem.structural_key());
  if (!stored) return bad_input(stored.error().message());
  if (*stored && (*stored)->problem.name() != name)
    return bad_input(fmt::format("{} is already imported in {} as '{}'; tune it by that name", file,
                                 g.db, (*stored)->problem.name()));
  if (rs->was_open)
    fmt::print(stderr,
               "{} was left open (a Kernel Tuner run cut short); read as Kernel Tuner reads it: "
               "the configs written before the end\n",
               file);
  if (auto st = store->put_problem(problem, rs->compact_json()); !st.ok())
    return failed("storing the recorded space: " + st.error().message());
  std::size_t ok = 0;
  for (const auto& r : rs->results) ok += r.verdict == Verdict::kOk;
  if (g.json) {
    nlohmann::json j = {{"name", name},
                        {"structural_key", problem.structural_key()},
                        {"kernel", rs->kernel_name},
                        {"device", rs->device_name},
                        {"configs", rs->points.size()},
                        {"ok", ok},
                        {"left_open", rs->was_open},
                        {"optimum_us", rs->optimum_us() ? *rs->optimum_us() : 0.0}};
    fmt::print("{}\n", j.dump(2));
  } else {
    fmt::print("{}\n", name);
    fmt::print(stderr,
               "imported {} recorded configs ({} ok) of {} on {}; tune it with: attune tune "
               "--backend replay --problem {}\n",
               rs->points.size(), ok, rs->kernel_name, rs->device_name, name);
  }
  return kExitOk;
}

}  // namespace

Command add_import_command(CLI::App& app, GlobalOptions& g) {
  auto* sub = app.add_subcommand("import", "bring recorded measurements into the tuning database");
  sub->require_subcommand(1);
  auto* kt = sub->add_subcommand(
      "kernel-tuner", "a Kernel Tuner cache file (JSON or .json.gz) as a replayable problem");
  auto file = std::make_shared<std::string>();
  auto name = std::make_shared<std::string>();
  kt->add_option("FILE", *file, "the cache file")->required();
  kt->add_option("--name", *name, "the problem's name (default: the file name without .json[.gz])");
  return {sub, [&g, file, name] { return run_import(g, *file, *name); }};
}

}  // namespace attune::cli
