// attune stack: tune a whole program's knobs per device (`stack tune`) and run it with the tuned
// knobs where the machine matches (`stack run`). Thin: the work is in src/stack/.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/common.h"
#include "platform/host.h"
#include "stack/run.h"
#include "stack/stack_file.h"
#include "stack/tune.h"
#include "stack/tuned_file.h"

namespace attune::cli {

namespace {

namespace fs = std::filesystem;

struct StackFlags {
  std::string stack_file;
  int sample = 0;  // 0: each provider's `records`
  int repeats = 3;
  std::uint64_t seed = 0;
  std::string out;      // default: tuned/<device-slug>.yaml beside the stack file
  std::string tuned;    // stack run: the tuned file; "" runs the defaults
  std::string workdir;  // stack run: where work directories are kept
};

int exit_for(const Error& e) {
  return e.kind() == Error::Kind::kInvalidArgument ? bad_input(e.message()) : failed(e.message());
}

int run_tune(const GlobalOptions& g, const StackFlags& f) {
  auto stack = stack::load_stack(f.stack_file);
  if (!stack) return bad_input(stack.error().message());
  stack::TuneOptions options;
  if (f.sample != 0) options.sample = f.sample;
  options.repeats = f.repeats;
  options.seed = f.seed;
  options.arguments = nlohmann::json(g.argv).dump();
  if (auto s = stack::check_tune_options(*stack, options); !s)
    return bad_input(s.error().message());

  platform::HostFingerprint host = platform::probe_host(stack->programs(), stack->dir);
  std::string out =
      f.out.empty() ? (fs::path(stack->dir) / "tuned" / (host.slug() + ".yaml")).string() : f.out;
  auto store = open_store_or_report(g, /*create_if_missing=*/true);
  if (!store) return kExitBadInput;
  options.store = store.get();
  options.log = [&](const std::string& line) {
    if (g.verbose) spdlog::info("{}", line);
  };
  options.interrupted = &g_interrupted;
  install_interrupt_handlers();
  auto result = stack::tune_stack(*stack, host, options);
  if (!result) return exit_for(result.error());
  if (auto s = stack::write_tuned(*result, out); !s) return failed(s.error().message());

  if (g.json) {
    fmt::print("{}\n", stack::tuned_json(*result, out).dump(2));
  } else {
    fmt::print("{}tuned file: {}\n", stack::format_report(*result), out);
  }
  if (!result->ok()) return failed("a provider's baseline (its defaults) failed; see the report");
  return kExitOk;
}

int run_run(const GlobalOptions& g, const StackFlags& f) {
  auto stack = stack::load_stack(f.stack_file);
  if (!stack) return bad_input(stack.error().message());
  std::optional<stack::TunedFile> tuned;
  if (!f.tuned.empty()) {
    auto t = stack::load_tuned(f.tuned);
    if (!t) return bad_input(t.error().message());
    if (auto s = stack::check_tuned(*stack, *t); !s) return bad_input(s.error().message());
    tuned = std::move(*t);
  }
  stack::RunOptions options;
  options.tuned = tuned ? &*tuned : nullptr;
  if (f.sample != 0) options.sample = f.sample;
  options.workdir_root = f.workdir;
  platform::HostFingerprint host = platform::probe_host(stack->programs(), stack->dir);
  options.interrupted = &g_interrupted;
  install_interrupt_handlers();
  auto run = stack::run_stack(*stack, host, options);
  if (!run) return exit_for(run.error());

  if (run->tuned_given && !run->fingerprint_matched) {
    std::string why;
    for (const auto& m : run->mismatches) why += (why.empty() ? "" : "; ") + m;
    fmt::print(stderr,
               "attune: warning: {} was tuned on another machine ({}); running the defaults\n",
               f.tuned, why);
  }
  nlohmann::json report = nlohmann::json::array();
  for (const auto& p : run->providers) {
    if (!g.json) {
      fmt::print("{}", p.process.out);
      fmt::print(stderr, "{}", p.process.err);
    }
    std::string how = p.tuned ? "tuned" : "defaults";
    if (p.ok())
      fmt::print(stderr, "attune: {}: ran {} ({}): {:.4g} records/s; work dir {}\n", p.name,
                 p.label.empty() ? "(no knobs)" : p.label, how, p.throughput, p.workdir);
    else
      fmt::print(stderr, "attune: {}: ran {} ({}): {}: {}; work dir {}\n", p.name,
                 p.label.empty() ? "(no knobs)" : p.label, how, to_string(*p.failure), p.detail,
                 p.workdir);
    report.push_back({{"provider", p.name},
                      {"config", p.label},
                      {"tuned", p.tuned},
                      {"ok", p.ok()},
                      {"failure", p.failure ? std::string(to_string(*p.failure)) : ""},
                      {"detail", p.detail},
                      {"records_per_second", p.throughput},
                      {"workdir", p.workdir},
                      {"stdout", p.process.out}});
  }
  if (g.json)
    fmt::print("{}\n", nlohmann::json{{"stack", stack->name},
                                      {"tuned_file", f.tuned},
                                      {"fingerprint_matched", run->fingerprint_matched},
                                      {"mismatches", run->mismatches},
                                      {"providers", report}}
                           .dump(2));
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
  tune->add_option(
          "--seed", flags->seed,
          "shuffles the order the candidates run in, so drift does not line up with a knob")
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
