#include "tune/layer_tune.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/hash.h"
#include "core/layer_problem.h"
#include "core/op.h"

namespace attune {

std::int64_t GroupingResult::launches() const {
  std::int64_t n = 0;
  for (const auto& [_, count] : kernels) n += count;
  return n;
}

double time_share(double limit_s, double elapsed_s, std::size_t devices, std::size_t problems_left,
                  double weight, double weights_left) {
  // Past the limit, a moment: the Tuner measures a problem's baseline before it looks at the
  // clock again, so every kernel still gets a time.
  constexpr double kLateShare = 0.001;
  const double left = limit_s - elapsed_s;
  const double n = static_cast<double>(std::max<std::size_t>(problems_left, 1));
  // Weights that say nothing (none given, or all zero) leave equal parts.
  const double part = weights_left > 0 ? 0.5 / n + 0.5 * weight / weights_left : 1 / n;
  const double share = left * static_cast<double>(devices) * part;
  return std::max(kLateShare, std::min(left, share));
}

double check_reserve(double limit_s) {
  return std::min({5.0, std::max(1.0, 0.05 * limit_s), 0.2 * limit_s});
}

double estimated_us(const Problem& problem, const graph::OpLookup& ops) {
  constexpr double kLaunchUs = 3;
  constexpr double kBytesPerUs = 3e6;  // 3 TB/s
  constexpr double kFlopsPerUs = 6e8;  // 600 TFLOP/s
  const OpSignature* op = ops(problem.op());
  if (!op || !op->work) return kLaunchUs;
  const OpWork w = op->work(problem);
  return kLaunchUs + std::max(w.bytes / kBytesPerUs, w.flops / kFlopsPerUs);
}

Result<LayerTuneReport> plan_layers(const LayerRequest& request, Backend& backend,
                                    const graph::OpLookup& ops) {
  ATTUNE_TRY(request.shape.check());
  if (request.layers.empty()) return Error::invalid_argument("no layer to tune");
  for (std::int64_t layer : request.layers)
    if (layer < 0 || layer >= request.model.num_hidden_layers)
      return Error::invalid_argument(fmt::format("--layer {} is not a layer of {} (0..{}, or all)",
                                                 layer, request.model.name,
                                                 request.model.num_hidden_layers - 1));
  LayerTuneReport report;
  report.request = request;
  ATTUNE_ASSIGN(report.device, backend.fingerprint());
  std::vector<graph::LayerGraph> graphs;
  for (std::int64_t layer : request.layers)
    graphs.push_back(graph::build_layer(request.model, layer, request.shape));

  // The assembled check's layer: a later layer when one is tuned (every later layer has the
  // same kernels, the input residual add among them), else the first.
  report.assembled.layer = request.layers.front();
  for (std::int64_t layer : request.layers)
    if (layer > 0) {
      report.assembled.layer = layer;
      break;
    }

  std::map<std::string, std::size_t> by_key;
  // The first kernel the backend refused as out of its op's range: when no grouping lowers, the
  // sizes asked for are the user's error, not the backend's limitation.
  std::string refused_size;
  for (const graph::Grouping& grouping : graph::all_groupings(graph::layer_forks(request.model))) {
    GroupingResult g;
    g.grouping = grouping;
    // The grouping's kernels over every layer, resolved, before any joins the distinct list.
    std::vector<std::pair<KernelResult, std::int64_t>> found;
    std::vector<std::pair<std::string, std::string>> one_layer;  // key, role
    for (const graph::LayerGraph& layer : graphs) {
      graph::Lowering lowered = graph::lower(layer, grouping, ops);
      if (!lowered.available()) {
        g.unavailable = lowered.unavailable;
        break;
      }
      for (graph::Kernel& k : lowered.kernels) {
        auto resolved = backend.resolve(k.problem.text());
        if (!resolved) {
          g.unavailable = fmt::format("{}: {}", k.problem.text(), resolved.error().message());
          if (refused_size.empty() && resolved.error().kind() == Error::Kind::kInvalidArgument)
            refused_size = resolved.error().message();
          break;
        }
        KernelResult r;
        r.problem = *resolved;
        r.key = hex64(fnv1a64(r.problem.text() + "|" + k.form.text()));
        if (layer.layer == report.assembled.layer) one_layer.emplace_back(r.key, k.nodes.front());
        r.kernel = std::move(k);
        auto same = std::find_if(found.begin(), found.end(),
                                 [&](const auto& f) { return f.first.key == r.key; });
        if (same != found.end())
          ++same->second;
        else
          found.emplace_back(std::move(r), 1);
      }
      if (!g.unavailable.empty()) break;
    }
    if (g.unavailable.empty()) {
      for (auto& [kernel, count] : found) {
        auto [it, fresh] = by_key.emplace(kernel.key, report.kernels.size());
        if (fresh) report.kernels.push_back(std::move(kernel));
        g.kernels.emplace_back(it->second, count);
        report.kernel_count += count;
      }
      for (const auto& [key, role] : one_layer) g.one_layer.emplace_back(by_key.at(key), role);
    }
    report.groupings.push_back(std::move(g));
  }
  if (report.kernels.empty() && !refused_size.empty())
    return Error::invalid_argument(fmt::format("{}'s layer at {}: {}", request.model.name,
                                               request.shape.text(), refused_size));
  if (report.kernels.empty()) {
    std::set<std::string> why;
    for (const GroupingResult& g : report.groupings) why.insert(g.unavailable);
    std::string all;
    for (const std::string& w : why) all += (all.empty() ? "" : "; ") + w;
    return Error::unsupported(fmt::format("no grouping of {}'s layer lowers to kernels here: {}",
                                          request.model.name, all));
  }
  return report;
}

namespace {

// The fastest passing config of `form` among a search's results, by deploy time (then config
// text, so the pick does not depend on visit order); with deploy_only false, by ranking time
// among those never measured in deploy.
const CandidateResult* fastest(const std::vector<CandidateResult>& results, const graph::Form& form,
                               bool deploy) {
  const CandidateResult* best = nullptr;
  for (const CandidateResult& r : results) {
    if (r.verdict != Verdict::kOk) continue;
    const std::optional<double>& t = deploy ? r.deploy_us : r.rank_us;
    if (!t) continue;
    auto config = Config::parse(r.config);
    if (!config || !form.admits(*config)) continue;
    const std::optional<double>& bt = best ? (deploy ? best->deploy_us : best->rank_us) : t;
    if (!best || *t < *bt || (*t == *bt && r.config < best->config)) best = &r;
  }
  return best;
}

// One distinct problem's inner search and the forms its kernels take.
struct ProblemWork {
  Problem problem;
  std::vector<std::size_t> kernels;  // indexes into LayerTuneReport::kernels
  bool done = false;
  int device = -1;
  ProblemReport report;
  std::map<std::size_t, CandidateResult> best;  // by kernel index
};

// The inner search of one problem on a lane, and each of its forms' best in the deploy regime:
// a form whose fastest config was never timed in deploy (outside the deploy band of a faster
// form's config) gets it timed there, through the same Tuner.
Status search_problem(ProblemWork& work, const std::vector<KernelResult>& kernels, DeviceLane& lane,
                      const TuneOptions& options, const TuneObserver& observer, bool* interrupted,
                      double* charged_s) {
  Tuner tuner(*lane.store, *lane.backend, *lane.runner);
  ATTUNE_ASSIGN(TuneReport r, tuner.run({work.problem}, options, observer));
  *interrupted = r.interrupted;
  *charged_s = tuner.charged_s();
  if (r.problems.empty()) return Error::internal("the tuner reported no problem");
  work.report = std::move(r.problems.front());
  for (std::size_t k : work.kernels) {
    const graph::Form& form = kernels[k].kernel.form;
    if (const CandidateResult* b = fastest(work.report.results, form, true)) {
      work.best[k] = *b;
      continue;
    }
    const CandidateResult* ranked = fastest(work.report.results, form, false);
    if (!ranked || r.interrupted) continue;
    ATTUNE_ASSIGN(Config config, Config::parse(ranked->config));
    const std::vector<std::pair<Problem, std::vector<Config>>> listed = {{work.problem, {config}}};
    ATTUNE_ASSIGN(TuneReport m, tuner.measure(listed, options, observer));
    if (m.problems.empty()) continue;
    for (const CandidateResult& c : m.problems.front().results)
      if (c.config == ranked->config && c.verdict == Verdict::kOk && c.deploy_us) work.best[k] = c;
  }
  return Status::success();
}

// The assembled check (AssembledCheck): the winner's kernels of one layer, with their chosen
// configs, as one problem of op "layer", measured through the Tuner on `device`. A backend that
// cannot run it, or a run that fails, leaves the check unmeasured with the reason; only an error
// of the store or the lane ends the tune.
Status check_assembled(LayerTuneReport& report, int device, const LaneFactory& make_lane,
                       const TuneOptions& options, const TuneObserver& observer) {
  AssembledCheck& a = report.assembled;
  const GroupingResult& winner = report.groupings[*report.winner];
  std::vector<LayerStep> steps;
  double isolated = 0;
  for (const auto& [k, role] : winner.one_layer) {
    const KernelResult& kr = report.kernels[k];
    ATTUNE_ASSIGN(Config config, Config::parse(kr.best->config));
    steps.push_back(LayerStep{role, kr.problem, std::move(config)});
    isolated += *kr.best->deploy_us;
    a.per_kernel.push_back({role, kr.problem.text(), *kr.best->deploy_us, std::nullopt});
  }
  a.kernels = static_cast<std::int64_t>(steps.size());
  a.isolated_sum_us = isolated;
  ATTUNE_ASSIGN(Problem spec, layer_problem(steps));
  ATTUNE_ASSIGN(DeviceLane lane, make_lane(device));
  auto problem = lane.backend->resolve(spec.text());
  if (!problem) {
    a.note = fmt::format("not measured: the {} backend cannot run an assembled layer ({})",
                         lane.backend->name(), problem.error().message());
    return Status::success();
  }
  ATTUNE_ASSIGN(Space space, lane.backend->space(*problem));
  Tuner tuner(*lane.store, *lane.backend, *lane.runner);
  const std::vector<std::pair<Problem, std::vector<Config>>> listed = {
      {*problem, {space.config(space.baseline())}}};
  ATTUNE_ASSIGN(TuneReport m, tuner.measure(listed, options, observer));
  const CandidateResult* run = nullptr;
  if (!m.problems.empty())
    for (const CandidateResult& c : m.problems.front().results)
      if (!run || (c.verdict == Verdict::kOk && c.deploy_us)) run = &c;
  if (!run || run->verdict != Verdict::kOk || !run->deploy_us) {
    a.note = run ? fmt::format("not measured: the assembled layer did not run: {}: {}",
                               to_string(run->verdict), run->message)
                 : std::string("not measured: the tuner reported no result for it");
    return Status::success();
  }
  a.measured = true;
  a.assembled_us = *run->deploy_us;
  a.gap = *a.assembled_us / isolated - 1;
  a.replayed = run->replayed;
  if (run->deploy_parts_us.size() == a.per_kernel.size()) {
    for (std::size_t i = 0; i < a.per_kernel.size(); ++i)
      a.per_kernel[i].in_graph_us = run->deploy_parts_us[i];
    a.graph_floor_us = run->deploy_parts_floor_us;
  }
  a.note = fmt::format(
      "layer {}'s {} kernels of the winning grouping run as one chain in the deploy regime{}{}",
      a.layer, a.kernels,
      lane.backend->name() == "sim" ? " (the sim's chain takes the sum of its kernels' times)"
                                    : " (one CUDA graph, L2 flushed before each replay)",
      a.replayed ? "; answered from the store" : "");
  return Status::success();
}

}  // namespace

Status tune_layers(LayerTuneReport& report, const std::vector<int>& devices,
                   const LaneFactory& make_lane, const TuneOptions& options,
                   const TuneObserver& observer) {
  if (devices.empty()) return Error::invalid_argument("no device to tune on");
  const auto start = std::chrono::steady_clock::now();
  report.strategy = options.strategy;
  report.seed = options.seed;
  report.devices = devices;
  if (options.time_limit_s) report.check_reserve_s = check_reserve(*options.time_limit_s);

  // Forms of one problem share its search: one unit of work per problem.
  std::vector<ProblemWork> work;
  std::map<std::string, std::size_t> by_problem;
  for (std::size_t k = 0; k < report.kernels.size(); ++k) {
    const Problem& p = report.kernels[k].problem;
    auto [it, fresh] = by_problem.emplace(p.structural_key(), work.size());
    if (fresh) work.push_back(ProblemWork{p, {}, false, -1, {}, {}});
    work[it->second].kernels.push_back(k);
  }
  report.problems_tuned = static_cast<std::int64_t>(work.size());

  std::mutex mu;
  std::deque<std::size_t> queue;
  for (std::size_t i = 0; i < work.size(); ++i) queue.push_back(i);
  // The time limit goes where the layer's time is likely to be: on a Qwen3-8B decode step the
  // gate/up GEMM (~55 us) and attention (~20 us) against 2 us RMSNorms. In equal parts, 18 s
  // gave attention 2 configs in one H200 run, and its split baseline won.
  std::vector<double> weight(work.size());
  double weights_left = 0;
  for (std::size_t i = 0; i < work.size(); ++i)
    weights_left += weight[i] = estimated_us(work[i].problem);
  bool stop = false;
  std::size_t finished = 0;
  // What replays were charged beyond their wall time, over every lane: the limit's clock runs
  // that much ahead, so an identical re-run shares out the time as the first run did.
  double charged_s = 0;
  std::vector<std::string> lane_errors;
  TuneObserver locked = [&](const TuneEvent& e) {
    if (!observer) return;
    std::lock_guard<std::mutex> lock(mu);
    observer(e);
  };

  auto lane_main = [&](int device) {
    auto lane = make_lane(device);
    if (!lane) {
      std::lock_guard<std::mutex> lock(mu);
      lane_errors.push_back(fmt::format("device {}: {}", device, lane.error().message()));
      return;
    }
    // Every kernel's baseline and first guesses go to the backend's builds before any search
    // starts, so on a cold cache the later kernels' first compiles run while the GPU times the
    // earlier ones: a cold 1 x 128 layer's candidates cost 0.3-0.5 s of compile each on the
    // H200, against a share of the time limit of about 1.4 s per kernel. One lane does it: the
    // cache is shared.
    // The baselines go first: every kernel is timed against its own.
    if (device == devices.front() && lane->backend->prefetch_depth() > 0) {
      std::vector<std::pair<const Problem*, Config>> guesses;
      for (const ProblemWork& w : work)
        if (auto space = lane->backend->space(w.problem)) {
          lane->backend->prepare(w.problem, space->config(space->baseline()));
          for (Config& c : first_guesses(w.problem, *space))
            guesses.emplace_back(&w.problem, std::move(c));
        }
      for (const auto& [problem, config] : guesses) lane->backend->prepare(*problem, config);
    }
    for (;;) {
      std::size_t i = 0;
      TuneOptions o = options;
      {
        std::lock_guard<std::mutex> lock(mu);
        if (stop || queue.empty()) return;
        i = queue.front();
        queue.pop_front();
        if (options.time_limit_s)
          o.time_limit_s = time_share(
              *options.time_limit_s - report.check_reserve_s,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() +
                  charged_s / static_cast<double>(devices.size()),
              devices.size(), queue.size() + 1, weight[i], weights_left);
        weights_left -= weight[i];
      }
      bool interrupted = false;
      double charged = 0;
      const auto problem_start = std::chrono::steady_clock::now();
      Status st = search_problem(work[i], report.kernels, *lane, o, locked, &interrupted, &charged);
      const double problem_s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - problem_start).count();
      std::lock_guard<std::mutex> lock(mu);
      charged_s += charged;
      if (!st.ok()) {
        // Another device takes the kernel over; this one tunes no more.
        spdlog::warn("device {} failed on {}: {}; its kernels go to the other devices", device,
                     work[i].problem.name(), st.error().message());
        lane_errors.push_back(fmt::format("device {}: {}", device, st.error().message()));
        queue.push_front(i);
        weights_left += weight[i];
        return;
      }
      work[i].done = true;
      work[i].device = device;
      ++finished;
      // Its wall time beside its share of the limit: where a tune goes past --time-limit.
      spdlog::info("[{}/{}] {} on device {}: {} evaluated, {} measured now, {:.2f} s{}", finished,
                   work.size(), work[i].problem.name(), device, work[i].report.evaluated,
                   work[i].report.measured, problem_s,
                   o.time_limit_s ? fmt::format(" (its share {:.2f} s)", *o.time_limit_s) : "");
      if (interrupted) stop = true;
    }
  };
  std::vector<std::thread> threads;
  threads.reserve(devices.size());
  for (int d : devices) threads.emplace_back(lane_main, d);
  for (std::thread& t : threads) t.join();
  report.interrupted = stop;
  report.elapsed_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  const bool all_done =
      std::all_of(work.begin(), work.end(), [](const ProblemWork& w) { return w.done; });
  if (!all_done && !stop) {
    std::string why;
    for (const auto& e : lane_errors) why += (why.empty() ? "" : "; ") + e;
    return Error::unsupported("no device could tune every kernel: " + why);
  }

  for (const ProblemWork& w : work)
    for (std::size_t k : w.kernels) {
      KernelResult& kr = report.kernels[k];
      kr.device = w.device;
      kr.evaluated = w.report.evaluated;
      kr.measured = w.report.measured;
      kr.replayed = w.report.replayed;
      kr.retimed = w.report.retimed;
      kr.stopped_by = w.done ? w.report.stopped_by : "interrupted";
      auto b = w.best.find(k);
      if (b != w.best.end()) {
        kr.best = b->second;
      } else {
        kr.failure =
            !w.done ? "not tuned: the run was interrupted first"
                    : fmt::format("no passing config{} among the {} evaluated",
                                  kr.kernel.form.any() ? "" : " of form " + kr.kernel.form.text(),
                                  w.report.evaluated);
      }
    }

  // The outer level: each grouping scored by the sum of its kernels' best times.
  for (std::size_t g = 0; g < report.groupings.size(); ++g) {
    GroupingResult& gr = report.groupings[g];
    if (!gr.unavailable.empty()) continue;
    double total = 0;
    for (const auto& [k, count] : gr.kernels) {
      const KernelResult& kr = report.kernels[k];
      if (!kr.best) {
        gr.unscored = fmt::format("{}: {}", kr.problem.text(), kr.failure);
        break;
      }
      total += static_cast<double>(count) * *kr.best->deploy_us;
    }
    if (!gr.unscored.empty()) continue;
    gr.total_us = total;
    if (!report.winner || total < *report.groupings[*report.winner].total_us) report.winner = g;
  }
  if (report.winner && !report.interrupted) {
    const auto check_start = std::chrono::steady_clock::now();
    ATTUNE_TRY(check_assembled(report, devices.front(), make_lane, options, locked));
    report.check_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - check_start).count();
  } else {
    report.assembled.note = report.interrupted ? "not measured: the run was interrupted"
                                               : "not measured: no grouping was scored";
  }
  return Status::success();
}

}  // namespace attune
