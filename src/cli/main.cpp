// attune's command line: one subcommand per file, thin over the layers.
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>

#include <fmt/format.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "cli/commands.h"

namespace attune::cli {

int bad_input(const std::string& what) {
  fmt::print(stderr, "attune: error: {}\n", printable(what));
  return kExitBadInput;
}

int failed(const std::string& what) {
  fmt::print(stderr, "attune: {}\n", printable(what));
  return kExitFailed;
}

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    // A UTF-8 sequence is kept whole; a stray byte is escaped.
    const int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    bool whole = len > 1 && i + len <= text.size();
    for (int k = 1; whole && k < len; ++k)
      whole = (static_cast<unsigned char>(text[i + k]) >> 6) == 2;
    if (whole) {
      out.append(text.substr(i, static_cast<std::size_t>(len)));
      i += static_cast<std::size_t>(len) - 1;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c < 0x20 || c >= 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

CLI::Validator finite_number() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        double v = 0;
        auto r = std::from_chars(text.data(), text.data() + text.size(), v);
        if (text.empty() || r.ec != std::errc() || r.ptr != text.data() + text.size() ||
            !std::isfinite(v))
          return "'" + printable(text) + "' is not a finite number";
        return "";
      },
      "NUMBER");
}

CLI::Validator unsigned_integer() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        std::uint64_t v = 0;
        auto r = std::from_chars(text.data(), text.data() + text.size(), v);
        if (text.empty() || r.ec != std::errc() || r.ptr != text.data() + text.size())
          return "'" + printable(text) + "' is not a whole number from 0 to " +
                 std::to_string(UINT64_MAX);
        return "";
      },
      "UINT");
}

CLI::Validator non_empty() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        return text.empty() ? "an empty value (leave the flag out for its default)" : "";
      },
      "TEXT");
}

namespace {

// The first word of the command line that is not a global flag: the command the user meant.
std::string command_word(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--db") {
      ++i;
      continue;
    }
    if (a.starts_with("-")) continue;
    return std::string(a);
  }
  return "";
}

// The first word after `command` on the command line that is not a flag ("" if none).
std::string word_after(int argc, char** argv, const std::string& command) {
  int i = 1;
  while (i < argc && argv[i] != command) ++i;
  for (++i; i < argc; ++i)
    if (!std::string_view(argv[i]).starts_with("-")) return argv[i];
  return "";
}

}  // namespace

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
  app.add_option("--db", g.db,
                 "tuning database: an SQLite file (or sqlite:PATH), or a fleet's PostgreSQL "
                 "database (postgresql://user@host/db); default attune.db here")
      ->capture_default_str();
  app.add_flag("-v,--verbose", g.verbose, "one line per step instead of a progress bar");
  app.add_flag("--json", g.json, "machine-readable report on stdout; logs stay on stderr");

  std::vector<Command> commands = {
      add_device_command(app, g), add_problems_command(app, g),
      add_tune_command(app, g),   add_eval_command(app, g),
      add_worker_command(app, g), add_stack_command(app, g),
      add_import_command(app, g), add_export_command(app, g),
      add_prior_command(app, g),  add_ab_command(app, g),
      add_verify_command(app, g), add_space_command(app, g),
      add_sweep_command(app, g),  add_queue_command(app, g),
      add_db_command(app, g),     add_candidate_worker_command(app, g),
      add_report_command(app, g),
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
    if (app.get_subcommands().empty()) {
      std::string known;
      for (const auto& c : commands)
        if (!c.app->get_group().empty())  // hidden commands are not offered
          known += (known.empty() ? "" : ", ") + c.app->get_name();
      const std::string word = command_word(argc, argv);
      if (!word.empty())
        return bad_input("unknown command '" + word + "'; the commands are: " + known);
      for (int i = 1; i < argc; ++i) {
        const std::string_view a = argv[i];
        if (a == "--db") ++i;
        if (a == "--db" || a == "-v" || a == "--verbose" || a == "--json") continue;
        if (a.starts_with("--db=")) continue;
        return bad_input("unknown flag '" + std::string(a) +
                         "' before the command; the commands are: " + known +
                         " (see attune --help)");
      }
      if (argc > 1 && std::string_view(argv[argc - 1]) == "--db")
        return bad_input(std::string(e.what()) + " (see attune --help)");
      return bad_input("no command given; the commands are: " + known + " (see attune --help)");
    }
    // A command of subcommands (eval, db, stack, import, ...) given none it knows.
    for (CLI::App* sub : app.get_subcommands()) {
      const auto all = sub->get_subcommands([](CLI::App* a) { return !a->get_group().empty(); });
      if (all.empty() || !sub->get_subcommands().empty()) continue;
      std::string known;
      for (const CLI::App* a : all) known += (known.empty() ? "" : ", ") + a->get_name();
      const std::string word = word_after(argc, argv, sub->get_name());
      if (word.empty())
        return bad_input("attune " + sub->get_name() + " needs a subcommand: " + known);
      return bad_input("unknown subcommand '" + word + "' of attune " + sub->get_name() +
                       "; its subcommands are: " + known);
    }
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
