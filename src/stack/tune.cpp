#include "stack/tune.h"

#include <fmt/format.h>
#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/hash.h"

#ifndef ATTUNE_VERSION
#define ATTUNE_VERSION "unknown"
#endif

namespace attune::stack {

namespace {

namespace fs = std::filesystem;

// A private scratch directory for sample files and work directories, removed when done.
class ScratchDir {
 public:
  static Result<ScratchDir> make() {
    std::string tmpl = (fs::temp_directory_path() / "attune-stack-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) return Error::io("cannot create a directory under " + tmpl);
    return ScratchDir(tmpl);
  }
  ScratchDir(ScratchDir&& o) noexcept : path_(std::move(o.path_)) { o.path_.clear(); }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  ScratchDir& operator=(ScratchDir&&) = delete;
  ~ScratchDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  explicit ScratchDir(std::string p) : path_(std::move(p)) {}
  std::string path_;
};

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs one candidate: a warm-up and `repeats` timed runs, stopping at the first rejection.
// `reference` is the baseline's normalised output; nullptr while measuring the baseline itself,
// whose runs must then agree with each other (its output is left in `output`).
Status measure(CandidateResult& c, const RunRequest& base, const std::string& root, int repeats,
               const std::string* reference, std::string* output) {
  std::string first;
  for (int run = 0; run <= repeats; ++run) {
    std::string which = run == 0 ? "warm-up" : fmt::format("timed run {}", run);
    RunRequest req = base;
    req.point = c.point;
    req.workdir =
        (fs::path(root) / fmt::format("{}-{}-{}", base.provider->name, c.order, run)).string();
    std::error_code ec;
    fs::remove_all(req.workdir, ec);
    if (!fs::create_directories(req.workdir, ec))
      return Error::io("cannot create work directory " + req.workdir);
    auto outcome = run_once(req);
    fs::remove_all(req.workdir, ec);
    if (!outcome) return outcome.error();
    if (outcome->rejection) {
      c.rejection = outcome->rejection;
      c.detail = outcome->detail + " on the " + which;
      return Status::success();
    }
    if (reference && outcome->normalized != *reference) {
      c.rejection = Rejection::kOutputChanged;
      c.detail = fmt::format("output differs from the baseline's on the {}: {}", which,
                             first_difference(outcome->normalized, *reference));
      return Status::success();
    }
    if (!reference && run > 0 && outcome->normalized != first) {
      c.rejection = Rejection::kOutputChanged;
      c.detail = fmt::format(
          "its output changed between the warm-up and the {} ({}): a nondeterministic output "
          "cannot be a reference",
          which, first_difference(outcome->normalized, first));
      return Status::success();
    }
    if (run == 0) {
      c.digest = outcome->digest;
      first = std::move(outcome->normalized);
    }
    if (run > 0) c.throughputs.push_back(outcome->throughput);
  }
  c.throughput = median(c.throughputs);
  if (output) *output = std::move(first);
  return Status::success();
}

MeasurementRow row_for(const ProviderResult& pr, const CandidateResult& c, const Config& config,
                       const std::string& device_key, std::int64_t run_id, int repeats) {
  MeasurementRow row;
  row.run_id = run_id;
  row.device_key = device_key;
  row.problem_key = pr.problem.structural_key();
  row.backend = "command";
  row.config = config.text();
  row.config_hash = config.hash_hex();
  // The whole program on its real inputs is the production path: deploy regime.
  row.regime = Regime::kDeploy;
  if (c.rejection) {
    row.outcome.verdict = verdict_of(*c.rejection);
    row.outcome.message = std::string(to_string(*c.rejection)) + ": " + c.detail;
    if (*c.rejection == Rejection::kOutputChanged)
      row.outcome.check = ErrorCheck{"output_digest_differs", 1, 0};
    return row;
  }
  // Lower is better in the database, as for kernels: microseconds per record.
  std::vector<double> us;
  for (double t : c.throughputs) us.push_back(1e6 / t);
  Measurement m;
  m.regime = Regime::kDeploy;
  m.cache = CacheState::kWarm;  // a warm-up run precedes the timed runs
  m.samples = static_cast<int>(us.size());
  m.median_us = median(us);
  m.min_us = *std::min_element(us.begin(), us.end());
  m.max_us = *std::max_element(us.begin(), us.end());
  std::vector<double> dev;
  for (double u : us) dev.push_back(std::abs(u - m.median_us));
  double mad = median(dev);
  m.noise = m.median_us > 0
                ? 1.2533 * 1.4826 * mad / std::sqrt(static_cast<double>(us.size())) / m.median_us
                : 0;
  row.outcome.verdict = Verdict::kOk;
  row.outcome.measurement = m;
  row.outcome.check = ErrorCheck{"output_digest_differs", 0, 0};
  row.outcome.message =
      fmt::format("{:.4g} records/s (median of {} timed runs over {} records); output digest {}",
                  c.throughput, repeats, pr.records, c.digest);
  return row;
}

}  // namespace

std::vector<const CandidateResult*> ProviderResult::rejected() const {
  std::vector<const CandidateResult*> out;
  for (const auto& c : candidates)
    if (c.rejection) out.push_back(&c);
  return out;
}

bool TuneResult::ok() const {
  return std::all_of(providers.begin(), providers.end(),
                     [](const ProviderResult& p) { return p.baseline_ok; });
}

bool ranks_before(const CandidateResult& a, const CandidateResult& b) {
  if (a.throughput != b.throughput) return a.throughput > b.throughput;
  if (a.changed != b.changed) return a.changed < b.changed;
  return a.label < b.label;
}

Problem provider_problem(const StackFile& stack, const Provider& provider, int records,
                         const std::string& sample_digest) {
  std::string command;
  for (const auto& a : provider.command) command += a + '\x1f';
  for (const auto& [k, v] : provider.env) command += k + '=' + v + '\x1f';
  return Problem("stack",
                 {{"stack", stack.name},
                  {"provider", provider.name},
                  {"command", hex64(fnv1a64(command))},
                  {"sample", sample_digest},
                  {"records", std::to_string(records)}},
                 stack.name + "/" + provider.name);
}

Status check_tune_options(const StackFile& stack, const TuneOptions& o) {
  if (o.repeats < 1) return Error::invalid_argument("--repeats must be at least 1");
  if (o.sample) {
    if (*o.sample < 1) return Error::invalid_argument("--sample must be at least 1");
    for (const auto& p : stack.providers)
      if (*o.sample > p.sample.available)
        return Error::invalid_argument(
            fmt::format("--sample {}: provider '{}' has only {} records in {}", *o.sample, p.name,
                        p.sample.available, p.sample.file));
  }
  return Status::success();
}

Result<TuneResult> tune_stack(const StackFile& stack, const HostFingerprint& host,
                              const TuneOptions& options) {
  ATTUNE_TRY(check_tune_options(stack, options));
  auto log = [&](const std::string& line) {
    if (options.log) options.log(line);
  };
  TuneResult result;
  result.stack = stack.name;
  result.fingerprint = host;
  result.seed = options.seed;
  result.repeats = options.repeats;

  const DeviceFingerprint device = host.device();
  Store* store = options.store;
  if (store) {
    ATTUNE_TRY(store->put_device(device));
    RunInfo run;
    run.command = "stack tune";
    run.arguments = options.arguments;
    run.strategy = "grid";
    run.seed = options.seed;
    run.version = ATTUNE_VERSION;
    run.device_key = device.key();
    ATTUNE_ASSIGN(result.run_id, store->begin_run(run));
  }
  auto fail_run = [&](const Error& e) -> Error {
    if (store) (void)store->finish_run(result.run_id, "failed");
    return e;
  };

  auto scratch = ScratchDir::make();
  if (!scratch) return fail_run(scratch.error());

  for (const Provider& p : stack.providers) {
    ProviderResult pr;
    pr.name = p.name;
    pr.records = options.sample.value_or(p.sample.records);
    std::string sample = (fs::path(scratch->path()) /
                          (p.name + ".sample" + fs::path(p.sample.file).extension().string()))
                             .string();
    if (auto s = write_sample(p.sample, pr.records, sample); !s) return fail_run(s.error());
    pr.problem = provider_problem(stack, p, pr.records, hex64(fnv1a64(read_file(sample))));
    if (store)
      if (auto s = store->put_problem(pr.problem); !s) return fail_run(s.error());

    // The grid: baseline first, then the other legal configs in enumeration order.
    std::vector<Point> grid;
    for (auto e = p.space.enumerate(); auto point = e.next();) grid.push_back(*point);
    // Run order: the baseline, then a seeded Fisher-Yates shuffle of the rest (splitmix64, so
    // the order is the same on every platform for a seed).
    std::vector<std::size_t> order(grid.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    for (std::size_t i = order.size() - 1; i > 1; --i) {
      std::size_t j = 1 + mix64(options.seed * 0x9e3779b97f4a7c15ULL + i) % i;
      std::swap(order[i], order[j]);
    }

    pr.candidates.resize(grid.size());
    for (std::size_t g = 0; g < grid.size(); ++g) {
      CandidateResult& c = pr.candidates[g];
      c.point = grid[g];
      Config config = p.space.config(c.point);
      c.label = config.text();
      c.changed = p.changed_knobs(c.point);
      for (std::size_t k = 0; k < p.space.depth(); ++k)
        c.knobs.emplace_back(p.space.knobs()[k].name, p.option_text[k][c.point[k]]);
    }

    std::string baseline_output;  // normalised: what every candidate must reproduce
    RunRequest base;
    base.provider = &p;
    base.telltales = stack.telltales;
    base.sample = sample;
    base.records = pr.records;
    for (std::size_t pos = 0; pos < order.size(); ++pos) {
      CandidateResult& c = pr.candidates[order[pos]];
      c.order = static_cast<int>(pos);
      const std::string* reference = pos == 0 ? nullptr : &baseline_output;
      if (auto s = measure(c, base, scratch->path(), options.repeats, reference,
                           pos == 0 ? &baseline_output : nullptr);
          !s)
        return fail_run(s.error());
      if (options.interrupted && options.interrupted->load()) {
        if (store) (void)store->finish_run(result.run_id, "interrupted");
        return Error::internal(fmt::format(
            "interrupted while running {} {}; what was measured before is in the database", p.name,
            c.label));
      }
      if (c.rejection)
        log(fmt::format("{}: [{}/{}] {} rejected: {} ({})", p.name, pos + 1, order.size(), c.label,
                        to_string(*c.rejection), c.detail));
      else
        log(fmt::format("{}: [{}/{}] {} {:.4g} records/s", p.name, pos + 1, order.size(), c.label,
                        c.throughput));
      if (store) {
        auto row =
            row_for(pr, c, p.space.config(c.point), device.key(), result.run_id, options.repeats);
        if (auto id = store->record(std::move(row)); !id) return fail_run(id.error());
      }
      if (pos == 0) {
        pr.baseline = c;
        pr.baseline_ok = !c.rejection;
        if (!pr.baseline_ok) {
          log(fmt::format(
              "{}: the baseline (the defaults) failed, so there is no reference output; "
              "nothing else is run",
              p.name));
          // Only the baseline was run: the other configs are not candidates of this result.
          CandidateResult b = c;
          pr.candidates = {b};
          break;
        }
      }
    }
    pr.winner = pr.baseline;
    if (pr.baseline_ok)
      for (const auto& c : pr.candidates)
        if (c.eligible() && ranks_before(c, pr.winner)) pr.winner = c;
    result.providers.push_back(std::move(pr));
  }
  if (store) ATTUNE_TRY(store->finish_run(result.run_id, result.ok() ? "done" : "failed"));
  return result;
}

}  // namespace attune::stack
