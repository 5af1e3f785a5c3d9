// attune ab: an A/B comparison of two whole commands, ref -> cand -> ref, with the ref-to-ref
// drift measured. Thin: the work is in src/ab/.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "ab/run.h"
#include "cli/commands.h"
#include "cli/common.h"

namespace attune::cli {

namespace {

int run_ab_command(const GlobalOptions& g, ab::AbOptions options, bool higher_is_better) {
  if (higher_is_better && options.metric.empty())
    return bad_input("--higher-is-better goes with --metric NAME: wall time is lower-is-better");
  options.better = higher_is_better ? ab::Better::kHigher : ab::Better::kLower;
  if (auto s = ab::check_options(options); !s) return bad_input(s.error().message());
  options.interrupted = &g_interrupted;
  options.log = [&g](const std::string& line) {
    if (g.verbose) spdlog::info("{}", line);
  };
  install_interrupt_handlers();
  auto report = ab::run_ab(options);
  if (!report)
    return report.error().kind() == Error::Kind::kInvalidArgument
               ? bad_input(report.error().message())
               : failed("ab: " + report.error().message());
  if (report->failure) return failed(ab::format_failure(*report->failure));
  if (g.json)
    fmt::print("{}\n", ab::report_json(*report).dump(2));
  else
    fmt::print("{}", ab::format_report(*report));
  return kExitOk;
}

}  // namespace

Command add_ab_command(CLI::App& app, GlobalOptions& g) {
  auto options = std::make_shared<ab::AbOptions>();
  auto higher = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand(
      "ab",
      "A/B two commands: ref, cand, ref, ... (each cand between two refs), each in a fresh "
      "process; reports both distributions, the ratio and the ref-to-ref drift");
  cmd->add_option("--ref", options->ref, "the reference command line (run by /bin/sh -c)")
      ->required();
  cmd->add_option("--cand", options->cand, "the candidate command line (run by /bin/sh -c)")
      ->required();
  cmd->add_option("--rounds", options->rounds, "cand runs measured; ref runs one more")
      ->capture_default_str();
  cmd->add_option("--warmup", options->warmup,
                  "rounds of one ref and one cand run, run first and discarded")
      ->capture_default_str();
  cmd->add_option("--metric", options->metric,
                  "compare the number each run prints last on stdout as NAME=<number> or "
                  "NAME: <number> (default: each process's wall time)")
      ->check(non_empty());
  cmd->add_flag("--higher-is-better", *higher,
                "the value is a throughput: higher is better (default: lower is better)");
  cmd->add_option("--timeout", options->timeout_s,
                  "seconds per run before its process group is killed and the A/B fails")
      ->check(finite_number())
      ->capture_default_str();
  return {cmd, [&g, options, higher]() { return run_ab_command(g, *options, *higher); }};
}

}  // namespace attune::cli
