#include "backends/command/command_backend.h"

#include <fmt/format.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "backends/command/program_run.h"
#include "core/hash.h"
#include "measure/stats.h"

namespace attune::command {

namespace {

namespace fs = std::filesystem;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

Status check_options(const StackFile& stack, const CommandOptions& o) {
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

Result<std::unique_ptr<CommandBackend>> CommandBackend::open(const StackFile& stack,
                                                             platform::HostFingerprint host,
                                                             const CommandOptions& options) {
  ATTUNE_TRY(check_options(stack, options));
  std::string tmpl = (fs::temp_directory_path() / "attune-stack-XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) return Error::io("cannot create a directory under " + tmpl);
  std::unique_ptr<CommandBackend> b(new CommandBackend(stack, std::move(host), options, tmpl));
  for (const Provider& p : stack.providers) {
    Entry e;
    e.provider = &p;
    e.records = options.sample.value_or(p.sample.records);
    e.sample =
        (fs::path(tmpl) / (p.name + ".sample" + fs::path(p.sample.file).extension().string()))
            .string();
    ATTUNE_TRY(write_sample(p.sample, e.records, e.sample));
    e.problem = provider_problem(stack, p, e.records, hex64(fnv1a64(read_file(e.sample))));
    b->entries_.push_back(std::move(e));
  }
  return b;
}

CommandBackend::CommandBackend(const StackFile& stack, platform::HostFingerprint host,
                               CommandOptions options, std::string scratch)
    : stack_(stack), host_(std::move(host)), options_(options), scratch_(std::move(scratch)) {}

CommandBackend::~CommandBackend() {
  std::error_code ec;
  fs::remove_all(scratch_, ec);
}

std::vector<ProblemInfo> CommandBackend::problems() const {
  std::vector<ProblemInfo> out;
  for (const auto& e : entries_)
    out.push_back(
        {e.problem, fmt::format("provider {} of stack {}: {} over {} records", e.provider->name,
                                stack_.name, e.provider->program(), e.records)});
  return out;
}

Result<Problem> CommandBackend::resolve(const std::string& spec) const {
  for (const auto& e : entries_)
    if (spec == e.provider->name || spec == e.problem.name()) return e.problem;
  return Error::invalid_argument(fmt::format("stack {} has no provider '{}'", stack_.name, spec));
}

Result<Space> CommandBackend::space(const Problem& problem) const {
  const Entry* e = entry(problem);
  if (!e)
    return Error::invalid_argument("not a provider of stack " + stack_.name + ": " +
                                   problem.text());
  return e->provider->space;
}

std::vector<Problem> CommandBackend::stack_problems() const {
  std::vector<Problem> out;
  for (const auto& e : entries_) out.push_back(e.problem);
  return out;
}

const CommandBackend::Entry* CommandBackend::entry(const Problem& problem) const {
  const std::string key = problem.structural_key();
  for (const auto& e : entries_)
    if (e.problem.structural_key() == key) return &e;
  return nullptr;
}

const Provider* CommandBackend::provider_of(const Problem& problem) const {
  const Entry* e = entry(problem);
  return e ? e->provider : nullptr;
}

int CommandBackend::records(const Problem& problem) const {
  const Entry* e = entry(problem);
  return e ? e->records : 0;
}

Outcome CommandBackend::measure(const Entry& e, const Point& point, const std::string* reference,
                                std::string* output) {
  std::string first, digest;
  std::vector<double> us;  // per timed run: microseconds per record, so lower is better
  for (int run = 0; run <= options_.repeats; ++run) {
    const std::string which = run == 0 ? "warm-up" : fmt::format("timed run {}", run);
    RunRequest req;
    req.provider = e.provider;
    req.point = point;
    req.telltales = stack_.telltales;
    req.sample = e.sample;
    req.records = e.records;
    req.workdir = (fs::path(scratch_) / fmt::format("{}-{}", e.provider->name, runs_++)).string();
    std::error_code ec;
    fs::remove_all(req.workdir, ec);
    if (!fs::create_directories(req.workdir, ec))
      return rejected(Rejection::kCrash, "attune cannot create the work directory " + req.workdir);
    auto outcome = run_once(req);
    fs::remove_all(req.workdir, ec);
    if (!outcome)
      return rejected(Rejection::kCrash, "attune could not run it: " + outcome.error().message());
    if (outcome->rejection)
      return rejected(*outcome->rejection, outcome->detail + " on the " + which);
    if (reference && outcome->normalized != *reference)
      return rejected(Rejection::kOutputChanged,
                      fmt::format("output differs from the baseline's on the {}: {}", which,
                                  first_difference(outcome->normalized, *reference)));
    if (!reference && run > 0 && outcome->normalized != first)
      return rejected(Rejection::kOutputChanged,
                      fmt::format("its output changed between the warm-up and the {} ({}): a "
                                  "nondeterministic output cannot be a reference",
                                  which, first_difference(outcome->normalized, first)));
    if (run == 0) {
      digest = outcome->digest;
      first = std::move(outcome->normalized);
    } else {
      us.push_back(1e6 / outcome->throughput);
    }
  }
  Outcome o;
  o.verdict = Verdict::kOk;
  o.measurement = measurement_of(summarize(us), Regime::kDeploy);
  o.measurement->cache = CacheState::kWarm;  // a warm-up run precedes the timed runs
  o.check = ErrorCheck{kDigestCheck, 0, 0};
  o.message =
      fmt::format("{:.4g} records/s (median of {} timed runs over {} records); output digest {}",
                  1e6 / o.measurement->median_us, options_.repeats, e.records, digest);
  if (output) *output = std::move(first);
  return o;
}

bool CommandBackend::reference_lost(const Problem& problem) const {
  const Entry* e = entry(problem);
  return e && e->reference_lost;
}

Outcome CommandBackend::execute(const Problem& problem, const Config& config, Regime) {
  const Entry* found = entry(problem);
  if (!found)
    return Outcome::failed(Verdict::kUnsupported, "not a provider of stack " + stack_.name);
  Entry& e = entries_[static_cast<std::size_t>(found - entries_.data())];
  const Space& space = e.provider->space;
  auto point = space.point(config);
  if (!point) return Outcome::failed(Verdict::kUnsupported, point.error().message());
  const bool is_baseline = *point == space.baseline();
  if (e.reference_lost && !is_baseline)
    return rejected(Rejection::kCrash, "the baseline gave no reference output in this run");
  if (!e.reference) {
    // The reference comes from the baseline's first clean measurement; when the store answered
    // the baseline, it is measured now, before the first candidate that needs it.
    std::string output;
    Outcome base = measure(e, space.baseline(), nullptr, &output);
    if (base.verdict != Verdict::kOk) {
      if (is_baseline) return base;
      e.reference_lost = true;  // the tuner records none of this and stops the problem
      auto why = rejection_of(base.message);
      return rejected(Rejection::kCrash, "the baseline gave no reference output now (" +
                                             (why ? why->second : base.message) + ")");
    }
    e.reference = std::move(output);
    if (is_baseline) return base;
  }
  return measure(e, *point, &*e.reference, nullptr);
}

}  // namespace attune::command
