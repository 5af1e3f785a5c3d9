// attune problems: the problems a backend offers by name.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/common.h"

namespace attune::cli {

Command add_problems_command(CLI::App& app, GlobalOptions& g) {
  auto* sub = app.add_subcommand("problems", "list the problems a backend offers");
  auto backend = std::make_shared<std::string>();
  sub->add_option("--backend", *backend, "backend to ask (default: the GPU backend, else sim)");
  return {sub, [&g, backend] {
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
