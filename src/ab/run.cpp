#include "ab/run.h"

#include <string.h>

#include <charconv>
#include <cmath>
#include <tuple>
#include <variant>

#include <fmt/format.h>

#include "platform/process.h"

namespace attune::ab {

namespace {

bool identifier_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// The last 200 bytes of a program's output on one line, for an error message.
std::string tail(const std::string& s) {
  std::size_t end = s.find_last_not_of(" \t\r\n");
  if (end == std::string::npos) return "(empty)";
  std::string t = s.substr(0, end + 1);
  if (t.size() > 200) t = "..." + t.substr(t.size() - 200);
  for (char& c : t)
    if (c == '\n' || c == '\r') c = ' ';
  return "'" + t + "'";
}

// Runs one command; its value, or the reason it does not count.
Result<std::variant<AbRun, std::string>> run_one(const AbOptions& o, AbRun run) {
  platform::ProcessSpec spec;
  spec.argv = {"/bin/sh", "-c", run.arm == Arm::kRef ? o.ref : o.cand};
  spec.timeout = std::chrono::milliseconds(static_cast<long long>(std::ceil(o.timeout_s * 1000)));
  ATTUNE_ASSIGN(platform::ProcessResult r, platform::run_process(spec));
  using Outcome = std::variant<AbRun, std::string>;
  if (!r.spawned) return Outcome{r.spawn_error};
  if (o.interrupted && o.interrupted->load()) return Outcome{std::string("interrupted")};
  if (r.timed_out)
    return Outcome{fmt::format("timed out after {:g} s (--timeout) and was killed; stderr: {}",
                               o.timeout_s, tail(r.err))};
  if (r.signaled) {
    const char* name = ::sigabbrev_np(r.signal);
    return Outcome{fmt::format("was killed by signal {} (SIG{}); stderr: {}", r.signal,
                               name ? name : "?", tail(r.err))};
  }
  if (r.exit_code != 0)
    return Outcome{fmt::format("exited with code {}; stderr: {}", r.exit_code, tail(r.err))};
  run.wall_s = r.wall_s;
  run.value = r.wall_s;
  if (!o.metric.empty()) {
    std::optional<double> v = find_metric(r.out, o.metric);
    if (!v)
      return Outcome{fmt::format("printed no {0}=<number> or {0}: <number> on stdout; stdout: {1}",
                                 o.metric, tail(r.out))};
    if (!std::isfinite(*v))
      return Outcome{fmt::format("printed {}={}, not a finite number", o.metric, *v)};
    run.value = *v;
  }
  return Outcome{run};
}

}  // namespace

std::string_view to_string(Arm a) {
  return a == Arm::kRef ? "ref" : "cand";
}

std::string AbRun::name() const {
  return fmt::format("{}{} run {}/{}", warmup ? "warm-up " : "", to_string(arm), index, of);
}

Status check_options(const AbOptions& o) {
  if (o.ref.find_first_not_of(" \t\n") == std::string::npos)
    return Error::invalid_argument("--ref is empty: give the reference command line");
  if (o.cand.find_first_not_of(" \t\n") == std::string::npos)
    return Error::invalid_argument("--cand is empty: give the candidate command line");
  if (o.rounds < 1)
    return Error::invalid_argument(fmt::format("--rounds {} must be at least 1", o.rounds));
  if (o.warmup < 0)
    return Error::invalid_argument(fmt::format("--warmup {} must be 0 or more", o.warmup));
  if (!(o.timeout_s > 0) || !std::isfinite(o.timeout_s))
    return Error::invalid_argument(
        fmt::format("--timeout {:g} must be a positive number of seconds", o.timeout_s));
  if (o.metric.find_first_of("=: \t\r\n") != std::string::npos)
    return Error::invalid_argument(fmt::format(
        "--metric '{}' cannot hold '=', ':' or blanks: give the NAME the command prints as "
        "NAME=<number>",
        o.metric));
  return Status::success();
}

std::optional<double> find_metric(std::string_view out, std::string_view name) {
  if (name.empty()) return std::nullopt;
  std::optional<double> last;
  for (std::size_t at = out.find(name); at != std::string_view::npos; at = out.find(name, at + 1)) {
    if (at > 0 && identifier_char(out[at - 1])) continue;
    std::size_t p = at + name.size();
    if (p >= out.size() || (out[p] != '=' && out[p] != ':')) continue;
    ++p;
    while (p < out.size() && (out[p] == ' ' || out[p] == '\t')) ++p;
    double v = 0;
    auto [end, ec] = std::from_chars(out.data() + p, out.data() + out.size(), v);
    if (ec != std::errc() || end == out.data() + p) continue;
    // "t=information" is not infinity.
    if (!std::isfinite(v) && end != out.data() + out.size() && identifier_char(*end)) continue;
    last = v;
  }
  return last;
}

Result<AbReport> run_ab(const AbOptions& options) {
  if (auto s = check_options(options); !s) return s.error();
  AbReport report;
  report.options = options;
  report.options.log = nullptr;
  report.options.interrupted = nullptr;

  // The order: W warm-up rounds of ref, cand; then ref, cand, ..., cand, ref.
  std::vector<AbRun> plan;
  for (int w = 1; w <= options.warmup; ++w)
    for (Arm arm : {Arm::kRef, Arm::kCand}) plan.push_back({arm, true, w, options.warmup});
  for (int i = 1; i <= options.rounds; ++i) {
    plan.push_back({Arm::kRef, false, i, options.rounds + 1});
    plan.push_back({Arm::kCand, false, i, options.rounds});
  }
  plan.push_back({Arm::kRef, false, options.rounds + 1, options.rounds + 1});

  std::vector<double> ref, cand;
  for (const AbRun& planned : plan) {
    if (options.interrupted && options.interrupted->load()) {
      report.failure = RunFailure{planned, "interrupted before it started"};
      return report;
    }
    ATTUNE_ASSIGN(auto outcome, run_one(options, planned));
    if (auto* why = std::get_if<std::string>(&outcome)) {
      report.failure = RunFailure{planned, *why};
      return report;
    }
    const AbRun& run = std::get<AbRun>(outcome);
    if (options.log)
      options.log(
          fmt::format("{}: {:.6g}{}", run.name(), run.value, options.metric.empty() ? " s" : ""));
    report.runs.push_back(run);
    if (!run.warmup) (run.arm == Arm::kRef ? ref : cand).push_back(run.value);
  }
  ATTUNE_ASSIGN(report.comparison, compare(std::move(ref), std::move(cand), options.better));
  return report;
}

std::string format_failure(const RunFailure& f) {
  return fmt::format("ab: {} {}", f.run.name(), f.detail);
}

std::string format_report(const AbReport& report) {
  const AbOptions& o = report.options;
  const Comparison& c = *report.comparison;
  const std::string metric = o.metric.empty() ? "wall time (s)" : o.metric;
  std::string out =
      fmt::format("{}, {} is better; {} rounds (ref first and last) after {} warm-up round(s)\n",
                  metric, to_string(o.better), o.rounds, o.warmup);
  out += fmt::format("{:<5}{:>5}{:>12}{:>12}{:>12}{:>12}  command\n", "", "n", "median", "IQR",
                     "min", "max");
  for (const auto& [label, d, cmd] :
       {std::tuple{"ref", &c.ref, &o.ref}, std::tuple{"cand", &c.cand, &o.cand}})
    out += fmt::format("{:<5}{:>5}{:>12.5g}{:>12.5g}{:>12.5g}{:>12.5g}  {}\n", label, d->n,
                       d->median, d->iqr(), d->min, d->max, *cmd);
  out += fmt::format("ratio ref/cand of medians: {:.4f} (speedup {:.4f}x)\n", c.ratio, c.speedup);
  out += fmt::format(
      "ref-to-ref drift: {:+.2f}% (median of the last {} ref runs against the first {})\n",
      100 * c.drift, c.ref.n / 2, c.ref.n / 2);
  const double pct = 100 * (c.speedup - 1);
  switch (c.verdict) {
    case Verdict::kGain:
      out += fmt::format("verdict: gain: cand is {:.2f}% better, more than the {:.2f}% drift\n",
                         pct, 100 * std::fabs(c.drift));
      break;
    case Verdict::kLoss:
      out += fmt::format("verdict: loss: cand is {:.2f}% worse, more than the {:.2f}% drift\n",
                         -pct, 100 * std::fabs(c.drift));
      break;
    case Verdict::kWithinDrift:
      out += fmt::format(
          "verdict: no gain (within drift): cand differs by {:+.2f}%, no more than the {:.2f}% "
          "drift\n",
          pct, 100 * std::fabs(c.drift));
      break;
  }
  return out;
}

nlohmann::json report_json(const AbReport& report) {
  const AbOptions& o = report.options;
  const Comparison& c = *report.comparison;
  auto side = [](const Distribution& d, const std::string& command) {
    return nlohmann::json{{"command", command}, {"n", d.n},       {"median", d.median},
                          {"min", d.min},       {"max", d.max},   {"q1", d.q1},
                          {"q3", d.q3},         {"iqr", d.iqr()}, {"values", d.values}};
  };
  nlohmann::json runs = nlohmann::json::array();
  for (const AbRun& r : report.runs)
    runs.push_back({{"arm", to_string(r.arm)},
                    {"warmup", r.warmup},
                    {"index", r.index},
                    {"value", r.value},
                    {"wall_s", r.wall_s}});
  return {{"metric", o.metric.empty() ? "wall_s" : o.metric},
          {"better", to_string(o.better)},
          {"rounds", o.rounds},
          {"warmup", o.warmup},
          {"timeout_s", o.timeout_s},
          {"ref", side(c.ref, o.ref)},
          {"cand", side(c.cand, o.cand)},
          {"ratio", c.ratio},
          {"speedup", c.speedup},
          {"drift", c.drift},
          {"drift_definition",
           "median of the second half of the ref runs / median of the first half - 1 (the middle "
           "run left out when their count is odd)"},
          {"verdict", to_string(c.verdict)},
          {"runs", runs}};
}

}  // namespace attune::ab
