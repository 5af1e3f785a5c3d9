// attune tune: search configs of one or more problems on this device and store every result.
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "backends/registry.h"
#include "backends/worker/worker.h"
#include "cli/common.h"
#include "cli/replay.h"
#include "cli/search_flags.h"
#include "cli/tune_model.h"
#include "cli/user_spec.h"
#include "core/op.h"
#include "core/shapes_file.h"
#include "report/progress.h"
#include "report/report.h"
#include "report/trace.h"
#include "search/strategy.h"
#include "tune/fleet.h"
#include "tune/tuner.h"

namespace attune::cli {

namespace {

struct TuneFlags {
  std::string backend;
  std::vector<std::string> problems;
  std::string shapes_file;
  std::string op;
  std::string shape;
  std::string dtype;
  SearchFlags search;  // strategy, budget, pins, drift guard, limits (registered below)
  std::string shard;
  std::string kernel_file;  // --kernel: the user's .cu
  std::string spec_file;    // --spec: its YAML spec
  int device = -1;          // --device: index into the backend's devices; -1: its default
  bool fresh_search = false;
  std::string trace_file;   // --trace: the evaluation trace as CSV; "": none
  bool enqueue = false;     // --enqueue: record work items for a fleet instead of tuning
  std::string enqueue_for;  // --for: the device key or kind the items are for; "": this device
  ModelFlags model;         // --model and the flags that go with it
};

// --enqueue: one work item per problem for the fleet's workers (docs/fleet.md), nothing tuned.
int enqueue(const GlobalOptions& g, const TuneFlags& f, Backend& backend,
            const std::vector<Problem>& problems, const TuneOptions& o) {
  std::string device = f.enqueue_for;
  if (device.empty()) {
    auto fp = backend.fingerprint();
    if (!fp) return bad_input(fp.error().message());
    device = fp->key();
  }
  auto store = open_store_or_report(g, true);
  if (!store) return kExitBadInput;
  std::vector<std::int64_t> ids;
  for (const Problem& p : problems) {
    if (Status st = store->put_problem(p); !st.ok()) return failed(st.error().message());
    WorkItem w;
    w.device = device;
    w.backend = backend.name();
    w.problem = p.text();
    w.problem_name = p.name();
    w.options = work_options_json(o, f.search.timeout_s);
    auto id = store->enqueue(w);
    if (!id) return failed(id.error().message());
    ids.push_back(*id);
  }
  if (g.json)
    fmt::print("{}\n", nlohmann::json({{"device", device}, {"queued", ids}}).dump(2));
  else
    fmt::print(
        "queued {} work item{} for device {} (attune queue shows them; attune worker "
        "takes them)\n",
        ids.size(), ids.size() == 1 ? "" : "s", device);
  return kExitOk;
}

// A one-line progress bar on a terminal (report/progress.h).
class ProgressBar {
 public:
  ProgressBar(std::optional<std::int64_t> max_candidates, double time_limit_s)
      : max_candidates_(max_candidates), time_limit_s_(time_limit_s) {}

  void update(const TuneEvent& e, std::optional<double> best) {
    const auto now = std::chrono::steady_clock::now();
    if (problem_ != e.problem.structural_key()) {
      problem_ = e.problem.structural_key();
      problem_start_ = now;
    }
    Progress p;
    p.problem = e.problem.name();
    p.index = e.index;
    p.space_size = e.space_size;
    p.best_us = best;
    p.elapsed_s = std::chrono::duration<double>(now - problem_start_).count();
    p.max_candidates = max_candidates_;
    if (time_limit_s_ > 0)
      p.time_left_s = time_limit_s_ - std::chrono::duration<double>(now - run_start_).count();
    fmt::print(stderr, "\r{}   ", progress_line(p));
    dirty_ = true;
  }
  void finish() {
    if (dirty_) fmt::print(stderr, "\n");
    dirty_ = false;
  }

 private:
  std::optional<std::int64_t> max_candidates_;
  double time_limit_s_;
  std::chrono::steady_clock::time_point run_start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point problem_start_ = run_start_;
  std::string problem_;
  bool dirty_ = false;
};

// What a user should know of a strategy before picking it, beyond its options. Kept here, not
// in StrategyInfo, while src/search/ is being reworked; grid is offered beside the adaptive
// strategies but is not a search in their sense.
constexpr const char* kGridNote =
    "grid walks the space in enumeration order (the baseline first) and ignores --seed";

// --strategy-option help: the strategy's options, one line each.
int print_strategy_options(const std::string& strategy) {
  auto info = strategy_info(strategy);
  if (!info) return bad_input(info.error().message());
  if (info->options.empty()) {
    fmt::print("{} takes no --strategy-option\n", strategy);
    if (strategy == "grid") fmt::print("{}\n", kGridNote);
    return kExitOk;
  }
  fmt::print("--strategy-option NAME=VALUE for --strategy {}:\n", strategy);
  for (const auto& o : info->options)
    fmt::print("  {:<18} {:<8} {:<14} default {:<6} {}\n", o.name, o.type, o.range, o.default_value,
               o.help);
  return kExitOk;
}

int run_tune(const GlobalOptions& g, const TuneFlags& f) {
  // Ctrl-C, SIGTERM (a scheduler's deadline) and SIGHUP end the run at the candidate in flight,
  // which is not recorded, and the report of what was done is still printed. The handlers go in
  // first: a signal while the backend opens still gets a report (every problem "interrupted").
  install_interrupt_handlers();
  for (const auto& setting : f.search.strategy_options)
    if (setting == "help") return print_strategy_options(f.search.strategy);
  auto searched = search_options(f.search, g);
  if (!searched) return bad_input(searched.error().message());
  TuneOptions o = std::move(*searched);
  o.fresh_search = f.fresh_search;
  if (!f.shard.empty()) {
    auto s = parse_shard(f.shard);
    if (!s) return bad_input(s.error().message());
    o.shard_index = s->first;
    o.shard_count = s->second;
  }

  const ModelFlags& m = f.model;
  if (!m.model.empty()) {
    if (!f.problems.empty() || !f.shapes_file.empty() || !f.op.empty() || !f.shape.empty() ||
        !f.kernel_file.empty() || !f.spec_file.empty() || f.enqueue || !f.shard.empty() ||
        !f.trace_file.empty() || !o.pins.empty())
      return bad_input(
          "--model tunes a model's layers: it takes no --problem, --shapes, --op/--shape, "
          "--kernel/--spec, --enqueue, --shard, --trace or --pin");
    return run_tune_model(g, m, o, f.backend, f.device, f.search.timeout_s);
  }
  if (m.layer != "0" || m.batch != 1 || m.tokens != 0 || m.decode || m.kv != 0 || m.gpus != 0 ||
      !m.devices.empty())
    return bad_input(
        "--layer, --batch, --tokens, --decode, --kv, --gpus and --devices go with --model");

  // A recorded space is served from the database it was imported into (cli/replay.h).
  // A user kernel: the spec is checked here (one line on stderr when it is wrong) and handed
  // to the backend and its workers as options.
  std::vector<std::pair<std::string, std::string>> options;
  std::vector<std::string> user_sizes;
  const bool user_kernel = !f.spec_file.empty() || !f.kernel_file.empty();
  ReportOptions report_options;
  if (user_kernel) {
    if (f.spec_file.empty())
      return bad_input(
          "--kernel needs --spec FILE.yaml describing its knobs, launch and arguments");
    if (!f.backend.empty() && f.backend != "cuda")
      return bad_input("user kernels run on --backend cuda");
    // The spec's own mistakes come first, in its one-line form, whatever the machine has: a
    // typo must not read as "the cuda backend is unavailable" on a laptop.
    auto checked = check_user_spec(f.spec_file, f.kernel_file, f.problems);
    if (!checked) return bad_input(checked.error().message());
    report_options = report_options_for(checked->spec);
    std::error_code ec;
    // The kernel first: the family loads the spec when it gets it, and a spec without `source:`
    // loads only with the kernel known.
    if (!f.kernel_file.empty())
      options.emplace_back("user_kernel", std::filesystem::absolute(f.kernel_file, ec).string());
    options.emplace_back("user_spec", std::filesystem::absolute(f.spec_file, ec).string());
    // --problem n=123 sets the spec's sizes.
    for (const auto& p : f.problems) user_sizes.push_back(p);
    if (!user_sizes.empty()) {
      std::string all;
      for (const auto& p : user_sizes) all += (all.empty() ? "" : ",") + p;
      options.emplace_back("user_problem", all);
    }
  }
  std::unique_ptr<Backend> backend;
  if (user_kernel) {
    // The plugin loads without a driver (it loads the driver itself), so ask for a device too.
    auto cuda = make_backend("cuda");
    Status usable = cuda ? Status::success() : Status(cuda.error());
    if (usable.ok()) {
      auto devices = (*cuda)->devices();
      if (!devices)
        usable = devices.error();
      else if (devices->empty())
        usable = Error::unsupported("the CUDA driver sees no GPU");
    }
    if (!usable.ok())
      return bad_input(fmt::format(
          "the spec {} is valid, but no GPU can run it here: {}; `attune space --spec {}` checks "
          "and counts a spec without one",
          f.spec_file, usable.error().message(), f.spec_file));
    backend = std::move(*cuda);
  } else {
    backend = f.backend == "replay" ? open_replay_backend_or_report(g, f.problems)
                                    : open_backend_or_report(f.backend);
  }
  if (!backend || !select_device_or_report(*backend, f.device)) return kExitBadInput;
  for (const auto& [key, value] : options)
    if (auto st = backend->configure(key, value); !st.ok()) return bad_input(st.error().message());

  // Everything the user asked for is checked before the database is opened or created.
  std::vector<std::string> specs = f.problems;
  std::vector<std::string> from(specs.size());  // "FILE:LINE: " of a spec from --shapes
  if (!f.shapes_file.empty()) {
    std::vector<int> lines;
    auto more = read_shapes_file(f.shapes_file, &lines);
    if (!more) return bad_input(more.error().message());
    specs.insert(specs.end(), more->begin(), more->end());
    for (int line : lines) from.push_back(fmt::format("{}:{}: ", f.shapes_file, line));
  }
  std::vector<Problem> problems;
  if (!f.dtype.empty() && f.op.empty())
    return bad_input("--dtype goes with --op/--shape; a --problem spec names its own (dtype=...)");
  if (!f.op.empty() || !f.shape.empty()) {
    if (f.op.empty() || f.shape.empty()) return bad_input("--op and --shape go together");
    auto p = problem_from_shape(f.op, f.shape, f.dtype);
    if (!p) return bad_input(p.error().message());
    auto r = backend->resolve(p->text());
    if (!r) return bad_input(r.error().message());
    problems.push_back(*r);
  }
  if (user_kernel) {
    specs.clear();
    for (const auto& info : backend->problems())
      if (info.problem.op() == "user") problems.push_back(info.problem);
  }
  for (std::size_t i = 0; i < specs.size(); ++i) {
    auto r = backend->resolve(specs[i]);
    if (!r) return bad_input(from[i] + r.error().message());
    problems.push_back(*r);
  }
  if (problems.empty())
    return bad_input("nothing to tune: give --problem NAME, --shapes FILE or --op/--shape");
  for (const auto& p : problems) {
    auto space = backend->space(p);
    if (!space) return bad_input(space.error().message());
    StrategyOptions so{o.seed, o.shard_index, o.shard_count, o.strategy_options};
    auto st = make_strategy(o.strategy, *space, so);
    if (!st) return bad_input(st.error().message());
    if (auto pins = Tuner::check_pins(*space, o.pins); !pins.ok())
      return bad_input(pins.error().message());
  }

  if (f.enqueue) {
    if (user_kernel)
      return bad_input(
          "--enqueue takes problems a backend names, not --kernel/--spec files "
          "(a worker on another host cannot read them)");
    if (!f.trace_file.empty() || !f.shard.empty())
      return bad_input("--trace and --shard are a worker's, not --enqueue's");
    return enqueue(g, f, *backend, problems, o);
  }
  if (!f.enqueue_for.empty()) return bad_input("--for names the device of --enqueue's items");

  // The trace is opened (and its header written) before the database: a path that cannot be
  // written is bad input, refused before anything is stored or tuned.
  std::optional<TraceWriter> trace;
  if (!output_is_free_or_report(g, "--trace", f.trace_file,
                                {f.shapes_file, f.spec_file, f.kernel_file}))
    return kExitBadInput;
  if (!f.trace_file.empty()) {
    auto opened = TraceWriter::open(f.trace_file, o.strategy, o.seed);
    if (!opened) return bad_input(opened.error().message());
    trace.emplace(std::move(*opened));
  }

  auto store = open_store_or_report(g, true);
  if (!store) return kExitBadInput;

  std::unique_ptr<CandidateRunner> runner;
  const double timeout = f.search.timeout_s > 0 ? f.search.timeout_s : backend->default_timeout_s();
  if (backend->isolated()) {
    // The worker runs its candidates on the device the scheduler fingerprinted.
    std::vector<std::string> argv{self_executable(), kCandidateWorker,
                                  "--backend",       backend->name(),
                                  "--device",        std::to_string(backend->device_index())};
    for (const auto& [key, value] : options) {
      argv.push_back("--option");
      argv.push_back(key + "=" + value);
    }
    runner = std::make_unique<WorkerRunner>(argv, timeout);
  } else {
    runner = std::make_unique<InProcessRunner>(*backend);
  }

  const bool bar = !g.verbose && ::isatty(STDERR_FILENO);
  ProgressBar progress(f.search.max_candidates > 0
                           ? std::optional<std::int64_t>(f.search.max_candidates)
                           : std::nullopt,
                       f.search.time_limit_s);
  std::optional<double> best;
  std::string current;
  TuneObserver observer = [&](const TuneEvent& e) {
    if (trace) {
      if (Status st = trace->write(e); !st.ok()) {
        // The tuning goes on: its results are in the database whatever the trace's fate.
        spdlog::warn("{}; the rest of the run is not traced", st.error().message());
        trace.reset();
      }
    }
    if (current != e.problem.structural_key()) {
      current = e.problem.structural_key();
      best.reset();
    }
    if (e.result.deploy_us && (!best || *e.result.deploy_us < *best)) best = e.result.deploy_us;
    if (g.verbose) {
      std::string what =
          e.result.verdict == Verdict::kOk
              ? fmt::format("{:.2f} us{}",
                            e.result.deploy_us.value_or(e.result.rank_us.value_or(0)),
                            e.result.deploy_us ? " (deploy)" : " (rank)")
              : fmt::format("{}: {}", to_string(e.result.verdict), e.result.message);
      spdlog::info("[{} {}/{}] {} -> {}{}{}", e.problem.name(), e.index, e.space_size,
                   e.result.config, what, e.result.replayed ? " [from database]" : "",
                   e.new_best ? " new best" : "");
    } else if (bar) {
      progress.update(e, best);
    }
  };

  o.interrupted = &g_interrupted;
  Tuner tuner(*store, *backend, *runner);
  auto report = tuner.run(problems, o, observer);
  progress.finish();
  if (!report) return failed(report.error().message());
  if (g.json)
    fmt::print("{}\n", report_json(*report, report_options).dump(2));
  else
    fmt::print("{}", report_text(*report, report_options));
  std::fflush(stdout);
  if (report->interrupted) {
    spdlog::error("interrupted: {}", report->interruption);
    return kExitInterrupted;
  }
  if (!report->any_passed()) {
    spdlog::error("no candidate passed the correctness gate");
    return kExitFailed;
  }
  return kExitOk;
}

}  // namespace

Command add_tune_command(CLI::App& app, GlobalOptions& g) {
  auto* sub = app.add_subcommand(
      "tune", "search configs of problems on this device; every result goes to the database");
  auto f = std::make_shared<TuneFlags>();
  sub->add_option("--backend", f->backend, "sim, ... (default: the GPU backend, else sim)");
  sub->add_option("--problem", f->problems,
                  "a problem name (see attune problems) or spec 'op:key=value,...'; repeatable");
  sub->add_option("--shapes", f->shapes_file,
                  "a file of problem specs, one per line ('#' comments)");
  std::string ops, shapes;
  for (const OpSignature* op : registered_ops()) {
    ops += (ops.empty() ? "" : ", ") + op->name;
    shapes += (shapes.empty() ? "" : ", ") + op->shape_syntax() + " for " + op->name;
  }
  sub->add_option("--op", f->op, "op of a problem given by --shape (" + ops + ")");
  sub->add_option("--shape", f->shape, shapes);
  sub->add_option("--dtype", f->dtype, "element type for --op/--shape (bf16, fp16, ...)");
  std::string names;
  for (const auto& n : strategy_names()) names += (names.empty() ? "" : ", ") + n;
  sub->add_option("--strategy", f->search.strategy, "search strategy: " + names + "; " + kGridNote)
      ->capture_default_str();
  sub->add_option("--seed", f->search.seed, "seed of the strategy")
      ->check(unsigned_integer())
      ->capture_default_str();
  sub->add_flag("--fresh-search", f->fresh_search,
                "start a new search instead of continuing the one stored for the problem (the "
                "strategy's saved state, and the stored results a continuing run evaluates "
                "first); a config it proposes that the database holds is still answered from it, "
                "nothing stored is lost, and its state is stored at the end");
  sub->add_option("--trace", f->trace_file,
                  "write every evaluation to this CSV file as the run goes (columns in "
                  "docs/report.md)");
  sub->add_option("--patience", f->search.patience,
                  "stop after this many passing candidates without a new best; 0: never")
      ->capture_default_str();
  sub->add_option("--max-candidates", f->search.max_candidates,
                  "cap on candidates evaluated per problem, not counting variants refused before "
                  "any build (default: none)");
  sub->add_option(
      "--shard", f->shard,
      "i/n: this process takes shard i of n of the grid (--strategy grid); auto or auto/n: i "
      "(and n) from a SLURM job array or a Kubernetes indexed Job (docs/fleet.md)");
  sub->add_option("--kernel", f->kernel_file,
                  "your CUDA kernel's .cu file (with --spec; see examples/user-kernel)");
  sub->add_option("--spec", f->spec_file,
                  "the YAML spec of your kernel: knobs, launch, arguments, reference");
  sub->add_option(
      "--pin", f->search.pins,
      "knob=value every searched config must have (repeatable); the baseline is still measured");
  sub->add_option(
      "--strategy-option", f->search.strategy_options,
      "NAME=VALUE: an option of the strategy (repeatable); 'help' lists the strategy's options");
  sub->add_option("--deploy-band", f->search.deploy_band,
                  "re-measure in the deploy regime candidates within this fraction of the best "
                  "rank-regime time")
      ->check(finite_number())
      ->capture_default_str();
  sub->add_option("--retime-best", f->search.retime_best,
                  "after the search, time the configs with the best deploy times again until the "
                  "best N are all re-timed, and keep the new times (their first rows stay in "
                  "the database, discarded); 0: never")
      ->capture_default_str();
  sub->add_option("--anchor-every", f->search.anchor_every,
                  "re-measure the baseline after this many new candidates to catch drift; 0: never")
      ->capture_default_str();
  sub->add_option("--backoff", f->search.backoff_s,
                  "first wait (seconds, doubling) for a drifted device to settle")
      ->check(finite_number())
      ->capture_default_str();
  sub->add_option("--backoff-max-rounds", f->search.backoff_max_rounds,
                  "back-off rounds per problem before it is reported unstable")
      ->capture_default_str();
  sub->add_option("--backoff-max-wait", f->search.backoff_max_wait_s,
                  "seconds of back-off per problem before it is reported unstable")
      ->check(finite_number())
      ->capture_default_str();
  sub->add_option("--time-limit", f->search.time_limit_s,
                  "seconds for the whole run, shared by its problems; it stops at a candidate "
                  "boundary, starts no candidate it does not expect to finish in time (but a "
                  "problem's first guess after its baseline), and reports what it did; a candidate "
                  "answered from the database is "
                  "charged what it cost when measured, so a re-run with the same limit measures "
                  "nothing new (default: none)")
      ->check(finite_number());
  sub->add_option("--timeout", f->search.timeout_s,
                  "seconds before a candidate's worker is killed (default: the backend's)")
      ->check(finite_number());
  add_device_option(sub, &f->device, "to tune on (default: cuda $ATTUNE_DEVICE, else 0)");
  sub->add_option("--model", f->model.model,
                  "a model config (models/*.json): tune its decoder layers' kernels and fusions");
  sub->add_option("--layer", f->model.layer, "with --model: the layer N, or all (default 0)");
  sub->add_option("--batch", f->model.batch, "with --model: sequences (default 1)");
  sub->add_option("--tokens", f->model.tokens, "with --model: a prefill's tokens per sequence");
  sub->add_flag("--decode", f->model.decode,
                "with --model: one decode step (one new token per sequence) instead of a prefill");
  sub->add_option("--kv", f->model.kv, "with --model --decode: the KV cache depth after the step");
  sub->add_option("--gpus", f->model.gpus,
                  "with --model: tune on the first N devices, one kernel at a time each");
  sub->add_option("--devices", f->model.devices,
                  "with --model: tune on these devices (indexes, e.g. 0,2), one kernel at a time "
                  "each");
  sub->add_flag("--enqueue", f->enqueue,
                "record one work item per problem in --db for a fleet's workers (attune worker) "
                "instead of tuning here");
  sub->add_option("--for", f->enqueue_for,
                  "with --enqueue: the device key (attune device) or kind (backend:name, e.g. "
                  "'cuda:NVIDIA H200') the items are for (default: this device)");
  return {sub, [&g, f] { return run_tune(g, *f); }};
}

}  // namespace attune::cli
