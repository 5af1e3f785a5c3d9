// attune's command line: one subcommand per file, thin over the layers.
#include <cstdio>

#include <fmt/format.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "cli/commands.h"

namespace attune::cli {

int bad_input(const std::string& what) {
  fmt::print(stderr, "attune: error: {}\n", what);
  return kExitBadInput;
}

int failed(const std::string& what) {
  fmt::print(stderr, "attune: {}\n", what);
  return kExitFailed;
}

}  // namespace attune::cli

int main(int argc, char** argv) {
  using namespace attune::cli;
  // Logs go to stderr so --json output on stdout stays machine-readable.
  auto logger = spdlog::stderr_logger_st("attune");
  logger->set_pattern("%^%l%$ %v");
  spdlog::set_default_logger(logger);

  GlobalOptions g;
  for (int i = 0; i < argc; ++i) g.argv.emplace_back(argv[i]);
  CLI::App app{"attune: a device-aware autotuner for GPU kernels and programs", "attune"};
  app.set_version_flag("--version", ATTUNE_VERSION);
  app.require_subcommand(1);
  // Global flags may come after the command too: attune tune ... --json -v.
  app.fallthrough();
  app.option_defaults()->always_capture_default();
  app.add_option("--db", g.db, "tuning database: an SQLite file or a postgresql:// URL")
      ->capture_default_str();
  app.add_flag("-v,--verbose", g.verbose, "one line per step instead of a progress bar");
  app.add_flag("--json", g.json, "machine-readable report on stdout; logs stay on stderr");

  std::vector<Command> commands = {
      add_device_command(app, g), add_problems_command(app, g), add_tune_command(app, g),
      add_eval_command(app, g),   add_worker_command(app, g),   add_stack_command(app, g),
      add_import_command(app, g), add_export_command(app, g),   add_prior_command(app, g),
      add_ab_command(app, g),     add_verify_command(app, g),
  };
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // One line naming what is wrong; --help has the rest.
    std::string what = e.what();
    if (what.empty()) what = e.get_name();
    return bad_input(what + " (see attune --help)");
  }
  if (g.verbose) spdlog::set_level(spdlog::level::debug);
  for (const auto& c : commands)
    if (c.app->parsed()) return c.run();
  return bad_input("no command given (see attune --help)");
}
