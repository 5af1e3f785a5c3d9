// attune problems: the problems a backend offers by name. The replay backend's problems are the
// recorded spaces imported into the database (--db), which is where `tune --backend replay`
// finds them.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "backends/replay/kernel_tuner_cache.h"
#include "cli/common.h"

namespace attune::cli {

namespace {

int list_recorded_spaces(const GlobalOptions& g) {
  auto store = open_store_or_report(g, false, /*read_only_ok=*/true);
  if (!store) return kExitBadInput;
  auto problems = store->problems();
  if (!problems) return bad_input(problems.error().message());
  nlohmann::json out = nlohmann::json::array();
  std::size_t listed = 0;
  for (const auto& listed_rec : *problems) {
    if (listed_rec.problem.op() != "replay") continue;
    // problems() leaves payloads out; the recorded space is read one problem at a time.
    auto rec = store->find_problem(listed_rec.key);
    if (!rec) return bad_input(rec.error().message());
    if (!*rec || (*rec)->payload.empty()) continue;
    auto rs = replay::parse_kernel_tuner_cache((*rec)->payload);
    if (!rs)
      return failed("stored recorded space '" + (*rec)->problem.name() +
                    "': " + rs.error().message());
    ++listed;
    const std::string name = (*rec)->problem.name();
    if (g.json) {
      out.push_back(
          {{"name", name},
           {"spec", (*rec)->problem.text()},
           {"structural_key", (*rec)->key},
           {"configs", rs->points.size()},
           {"kernel", rs->kernel_name},
           {"device", rs->device_name},
           {"description", "recorded space of " + rs->kernel_name + " on " + rs->device_name}});
    } else {
      fmt::print("{:<10} {:>6} configs  {} on {}\n", name, rs->points.size(), rs->kernel_name,
                 rs->device_name);
    }
  }
  if (g.json) fmt::print("{}\n", out.dump(2));
  if (listed == 0)
    fmt::print(stderr,
               "no recorded spaces in {} (import one with: attune import kernel-tuner FILE)\n",
               g.db);
  return kExitOk;
}

}  // namespace

Command add_problems_command(CLI::App& app, GlobalOptions& g) {
  auto* sub = app.add_subcommand("problems", "list the problems a backend offers");
  auto backend = std::make_shared<std::string>();
  sub->add_option("--backend", *backend,
                  "backend to ask (default: the GPU backend, else sim; replay: the recorded "
                  "spaces imported into --db)");
  return {sub, [&g, backend] {
            if (*backend == "replay") return list_recorded_spaces(g);
            auto b = open_backend_or_report(*backend);
            if (!b) return kExitBadInput;
            nlohmann::json out = nlohmann::json::array();
            for (const auto& info : b->problems()) {
              auto space = b->space(info.problem);
              std::uint64_t n = space ? space->count() : 0;
              if (g.json) {
                out.push_back({{"name", info.problem.name()},
                               {"spec", info.problem.text()},
                               {"structural_key", info.problem.structural_key()},
                               {"configs", n},
                               {"description", info.description}});
              } else {
                fmt::print("{:<10} {:>6} configs  {}\n           {}\n", info.problem.name(), n,
                           info.problem.text(), info.description);
              }
            }
            if (g.json) fmt::print("{}\n", out.dump(2));
            return kExitOk;
          }};
}

}  // namespace attune::cli
