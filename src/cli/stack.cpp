// attune stack: tune a whole program's knobs per device (`stack tune`, the Tuner over the command
// backend) and run it with the tuned knobs where the machine matches (`stack run`, the applier).
// Thin: the work is in tune/stack.h, backends/command/, table/stack_yaml.h and runtime/stack/.
#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "backends/command/stack_file.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "core/files.h"
#include "platform/host.h"
#include "runtime/stack/apply.h"
#include "search/strategy.h"
#include "table/formats.h"
#include "table/stack_yaml.h"
#include "tune/stack.h"

namespace attune::cli {

namespace {

namespace fs = std::filesystem;

struct StackFlags {
  std::string stack_file;
  int sample = 0;  // 0: each provider's `records`
  int repeats = 3;
  std::uint64_t seed = 0;
  std::string strategy = "random";
  int patience = 0;
  std::int64_t max_candidates = 0;  // 0: no cap
  std::string shard;                // "i/n"
  int anchor_every = 8;
  std::string out;      // default: tuned/<device-slug>.yaml beside the stack file
  std::string tuned;    // stack run: the tuned file; "" runs the defaults
  std::string workdir;  // stack run: where work directories are kept
};

int run_tune(const GlobalOptions& g, const StackFlags& f) {
  auto stack = command::load_stack(f.stack_file);
  if (!stack) return bad_input(stack.error().message());
  StackTuneOptions options;
  if (f.sample != 0) options.command.sample = f.sample;
  options.command.repeats = f.repeats;
  options.tuning.seed = f.seed;
  options.tuning.strategy = f.strategy;
  options.tuning.patience = f.patience;
  if (f.max_candidates != 0) options.tuning.max_candidates = f.max_candidates;
  if (!f.shard.empty()) {
    auto s = parse_shard(f.shard);
    if (!s) return bad_input(s.error().message());
    options.tuning.shard_index = s->first;
    options.tuning.shard_count = s->second;
  }
  options.tuning.drift.anchor_every = f.anchor_every;
  options.tuning.arguments = nlohmann::json(g.argv).dump();
  if (auto s = check_stack_tune_options(*stack, options); !s) return bad_input(s.error().message());

  platform::HostFingerprint host = platform::probe_host(stack->programs(), stack->dir);
  std::string out =
      f.out.empty() ? (fs::path(stack->dir) / "tuned" / (host.slug() + ".yaml")).string() : f.out;
  // Where the tuned file goes is checked before any candidate runs.
  if (!output_is_free_or_report(g, "--out", out, {f.stack_file})) return kExitBadInput;
  std::error_code ec;
  if (fs::is_directory(out, ec))
    return bad_input("--out " + out + " is a directory; give the tuned file's path (name.yaml)");
  const fs::path parent = fs::path(out).has_parent_path() ? fs::path(out).parent_path() : ".";
  fs::create_directories(parent, ec);
  if (ec || ::access(parent.c_str(), W_OK) != 0)
    return bad_input("--out " + out + ": cannot write in " + parent.string() +
                     (ec ? " (" + ec.message() + ")" : ""));
  auto store = open_store_or_report(g, /*create_if_missing=*/true);
  if (!store) return kExitBadInput;
  options.log = [&](const std::string& line) {
    if (g.verbose) spdlog::info("{}", line);
  };
  options.tuning.interrupted = &g_interrupted;
  install_interrupt_handlers();
  auto result = tune_stack(*stack, host, *store, options);
  if (!result) return exit_for(result.error());
  auto yaml = table::to_stack_yaml(result->table, result->notes);
  if (!yaml) return failed(yaml.error().message());
  if (auto s = write_text_file(out, *yaml); !s) return failed(s.error().message());

  if (g.json) {
    fmt::print("{}\n", stack_json(*result, out).dump(2));
  } else {
    fmt::print("{}tuned file: {}\n", format_stack_report(*result), out);
  }
  if (!result->ok()) return failed("a provider's baseline (its defaults) failed; see the report");
  return kExitOk;
}

int run_run(const GlobalOptions& g, const StackFlags& f) {
  auto stack = command::load_stack(f.stack_file);
  if (!stack) return bad_input(stack.error().message());
  std::optional<table::TunedStack> tuned;
  if (!f.tuned.empty()) {
    auto t = table::load_tuned_stack(f.tuned);
    if (!t) return bad_input(t.error().message());
    if (auto s = runtime::check_tuned(*stack, *t); !s) return bad_input(s.error().message());
    tuned = std::move(*t);
  }
  runtime::RunOptions options;
  options.tuned = tuned ? &*tuned : nullptr;
  if (f.sample != 0) options.sample = f.sample;
  if (std::error_code ec;
      !f.workdir.empty() && fs::exists(f.workdir, ec) && !fs::is_directory(f.workdir, ec))
    return bad_input("--workdir " + f.workdir + " is not a directory");
  options.workdir_root = f.workdir;
  platform::HostFingerprint host = platform::probe_host(stack->programs(), stack->dir);
  options.interrupted = &g_interrupted;
  install_interrupt_handlers();
  auto run = runtime::run_stack(*stack, host, options);
  if (!run) return exit_for(run.error());

  if (run->tuned_given && !run->fingerprint_matched) {
    std::string why;
    for (const auto& m : run->mismatches) why += (why.empty() ? "" : "; ") + m;
    fmt::print(stderr,
               "attune: warning: {} was tuned on another machine ({}); running the defaults\n",
               f.tuned, why);
  }
  nlohmann::json report = nlohmann::json::array();
  // A work directory attune made is removed after the run: say so instead of naming it.
  auto where = [&](const runtime::ProviderRun& p) {
    return run->temporary_workdir ? std::string("removed (--workdir DIR keeps it)") : p.workdir;
  };
  for (const auto& p : run->providers) {
    if (!g.json) {
      fmt::print("{}", p.process.out);
      fmt::print(stderr, "{}", p.process.err);
    }
    std::string how = p.tuned ? "tuned" : "defaults";
    if (p.ok())
      fmt::print(stderr, "attune: {}: ran {} ({}): {:.4g} records/s; work dir {}\n", p.name,
                 p.label.empty() ? "(no knobs)" : p.label, how, p.throughput, where(p));
    else
      fmt::print(stderr, "attune: {}: ran {} ({}): {}: {}; work dir {}\n", p.name,
                 p.label.empty() ? "(no knobs)" : p.label, how, command::to_string(*p.failure),
                 p.detail, where(p));
    report.push_back({{"provider", p.name},
                      {"config", p.label},
                      {"tuned", p.tuned},
                      {"ok", p.ok()},
                      {"failure", p.failure ? std::string(command::to_string(*p.failure)) : ""},
                      {"detail", p.detail},
                      {"records_per_second", p.throughput},
                      {"workdir", run->temporary_workdir ? "" : p.workdir},
                      {"stdout", p.process.out}});
  }
  if (g.json)
    fmt::print("{}\n", nlohmann::json{{"stack", stack->name},
                                      {"tuned_file", f.tuned},
                                      {"fingerprint_matched", run->fingerprint_matched},
                                      {"mismatches", run->mismatches},
                                      {"providers", report}}
                           .dump(2));
  runtime::remove_temporary_workdir(*run);
  return run->ok() ? kExitOk : failed("a provider failed; see above");
}

}  // namespace

Command add_stack_command(CLI::App& app, GlobalOptions& g) {
  auto flags = std::make_shared<StackFlags>();
  CLI::App* cmd =
      app.add_subcommand("stack", "tune a whole program's knobs on this machine, and run it tuned");
  cmd->require_subcommand(1);

  CLI::App* tune = cmd->add_subcommand("tune",
                                       "sweep each provider's knobs with a hard correctness gate; "
                                       "write tuned/<device>.yaml");
  tune->add_option("stack", flags->stack_file, "the stack file (YAML)")->required();
  tune->add_option("--sample", flags->sample,
                   "records in {sample}; 0 = each provider's records in the stack file");
  tune->add_option("--repeats", flags->repeats, "timed runs per candidate, after one warm-up")
      ->capture_default_str();
  tune->add_option("--seed", flags->seed,
                   "seed of the strategy (random: shuffles the order the candidates run in, so "
                   "drift does not "
                   "line up with a knob)")
      ->check(unsigned_integer())
      ->capture_default_str();
  std::string names;
  for (const auto& n : strategy_names()) names += (names.empty() ? "" : ", ") + n;
  tune->add_option(
          "--strategy", flags->strategy,
          "search strategy: " + names + " (random: the whole grid in an order the seed shuffles)")
      ->capture_default_str();
  tune->add_option(
          "--patience", flags->patience,
          "stop a provider after this many passing candidates without a new best; 0: never")
      ->capture_default_str();
  tune->add_option("--max-candidates", flags->max_candidates,
                   "cap on candidates per provider; 0: none")
      ->capture_default_str();
  tune->add_option("--shard", flags->shard,
                   "i/n: this process takes shard i of n of the grid (--strategy grid)");
  tune->add_option("--anchor-every", flags->anchor_every,
                   "re-run the defaults after this many new candidates to catch drift; 0: never")
      ->capture_default_str();
  tune->add_option("--out", flags->out,
                   "the tuned file (default: tuned/<device-slug>.yaml beside the stack)");

  CLI::App* run =
      cmd->add_subcommand("run", "run the stack, tuned where the tuned file's machine is this one");
  run->add_option("stack", flags->stack_file, "the stack file (YAML)")->required();
  run->add_option("--tuned", flags->tuned,
                  "a tuned file from `attune stack tune` (default: run the defaults)");
  run->add_option("--sample", flags->sample,
                  "records in {sample}; 0 = each provider's records in the stack file");
  run->add_option("--workdir", flags->workdir,
                  "where to keep the work directories (default: a new temp dir)");

  return {cmd, [&g, flags, tune, run]() {
            if (tune->parsed()) return run_tune(g, *flags);
            if (run->parsed()) return run_run(g, *flags);
            return bad_input("attune stack: give 'tune' or 'run' (see attune stack --help)");
          }};
}

}  // namespace attune::cli
