// stack tune on the Tuner against the fake provider run as a real subprocess: the winner, every
// rejection reason, the tie-break, seeds, output normalisation, a failing baseline, answers from
// the store, patience and shards, and the database rows. Speeds differ by several times (0.05 s
// vs 0.15 s vs 0.3 s) and only the winner is asserted.
#include "tune/stack.h"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <thread>

#include <gtest/gtest.h>

#include "backends/command/fixtures.h"
#include "backends/command/program_run.h"
#include "platform/process.h"

namespace attune::command {
namespace {

using testing::kFakeProvider;
using testing::TempDir;
using testing::TempStore;
using testing::write_file;

// A fixed fingerprint: the tests compare tuned files byte for byte.
platform::HostFingerprint test_host() {
  platform::HostFingerprint h;
  h.cpu_model = "Test CPU 9000";
  h.logical_cpus = 2;
  h.tools[kFakeProvider] = "fake-provider 1.0";
  return h;
}

// One provider over the fake provider, knob `variant` = its profile.
std::string variant_stack(const std::string& state, const std::string& variants,
                          const std::string& extra = "",
                          const std::string& defaults = "variant: base") {
  return "stack: demo\n"
         "telltales: [BackendCompilerFailed, InductorError]\n"
         "providers:\n"
         "  - name: encoder\n"
         "    command: [\"" +
         kFakeProvider +
         "\", \"--profile\", \"{variant}\", \"--in\", \"{sample}\", "
         "\"--state\", \"" +
         state +
         "\"]\n"
         "    knobs:\n"
         "      variant: [" +
         variants +
         "]\n"
         "    defaults: {" +
         defaults +
         "}\n"
         "    sample: {file: records.txt, records: 3}\n"
         "    timeout_s: 1\n" +
         extra;
}

StackFile load(const TempDir& dir, const std::string& text) {
  write_file(dir / "records.txt", "alpha\nbeta\ngamma\ndelta\n");
  write_file(dir / "stack.yaml", text);
  auto s = load_stack(dir / "stack.yaml");
  EXPECT_TRUE(s.ok()) << s.error().message();
  return s.ok() ? *s : StackFile{};
}

// Options for a test: `repeats` timed runs; no drift anchor unless a test asks (the fake
// provider's sleeps are not a clock to measure drift against on a shared CI machine).
StackTuneOptions options(int repeats, std::uint64_t seed = 0) {
  StackTuneOptions o;
  o.command.repeats = repeats;
  o.tuning.seed = seed;
  o.tuning.drift.anchor_every = 0;
  return o;
}

StackTune tune(const StackFile& stack, Store& store, const StackTuneOptions& o) {
  auto r = tune_stack(stack, test_host(), store, o);
  EXPECT_TRUE(r.ok()) << r.error().message();
  return r.ok() ? std::move(*r) : StackTune{};
}

std::string yaml(const StackTune& r) {
  auto y = table::to_stack_yaml(r.table, r.notes);
  EXPECT_TRUE(y.ok()) << y.error().message();
  return y.ok() ? *y : "";
}

const table::Row& row(const StackTune& r, std::size_t provider = 0) {
  static const table::Row none;
  const table::Row* found = table::stack_row(r.table, r.notes.providers.at(provider));
  EXPECT_NE(found, nullptr);
  return found ? *found : none;
}

const table::StackRejection& rejection(const StackTune& r, const std::string& config) {
  static const table::StackRejection none;
  const auto& all = r.notes.providers.at(0).rejected;
  auto it = std::find_if(all.begin(), all.end(), [&](const auto& c) { return c.config == config; });
  EXPECT_NE(it, all.end()) << config;
  return it == all.end() ? none : *it;
}

// The rows of this run by config (one each: a stack candidate is measured in deploy only).
std::map<std::string, MeasurementRow> rows_of(Store& store,
                                              const std::string& problem = "demo/encoder") {
  MeasurementQuery q;
  q.problem = problem;
  std::map<std::string, MeasurementRow> out;
  auto rows = store.measurements(q);
  EXPECT_TRUE(rows.ok());
  if (!rows.ok()) return out;
  for (auto& r : *rows) {
    EXPECT_FALSE(out.count(r.config)) << r.config << " has two rows";
    out[r.config] = r;
  }
  return out;
}

int runs_of(const TempDir& dir, const std::string& profile) {
  return std::stoi(testing::read_file(dir / ("state/count." + profile)));
}

// One tune over every profile (about three seconds, so it is one test: ctest runs each test in
// its own process). Each block checks one rule.
TEST(Tune, TheFastestCorrectCandidateWinsAndEveryFailureIsRejectedForItsReason) {
  TempDir dir;
  TempStore store;
  StackFile stack = load(
      dir,
      variant_stack(dir / "state", "base, medium, fast, wrong, crash1, telltale, signal, hang"));
  StackTune r = tune(stack, *store, options(2));
  ASSERT_TRUE(r.ok());
  const ProblemReport& encoder = r.report.problems.at(0);
  auto rows = rows_of(*store);

  {
    SCOPED_TRACE("the winner");
    EXPECT_EQ(row(r).baseline_config, "variant=base");
    EXPECT_EQ(row(r).config, "variant=fast");
    EXPECT_EQ(row(r).backend, "command");
    EXPECT_LT(row(r).median_us, row(r).baseline_us);
    EXPECT_EQ(encoder.baseline->config, "variant=base");
    EXPECT_EQ(rows.at("variant=medium").outcome.verdict, Verdict::kOk);
    EXPECT_EQ(encoder.evaluated, 8);
    EXPECT_EQ(encoder.measured, 8);
    EXPECT_EQ(encoder.stopped_by, "exhausted");
    EXPECT_EQ(r.notes.providers[0].rejected.size(), 5u);
    EXPECT_EQ(r.changed[0], "variant=fast");
  }
  {
    SCOPED_TRACE("a crash only on the first timed run");
    const auto& c = rejection(r, "variant=crash1");
    EXPECT_EQ(c.reason, "crash");
    EXPECT_NE(c.detail.find("exit code 3"), std::string::npos) << c.detail;
    EXPECT_NE(c.detail.find("on the timed run 1"), std::string::npos) << c.detail;
    EXPECT_EQ(runs_of(dir, "crash1"), 2);  // the warm-up passed; the first timed run crashed
  }
  {
    SCOPED_TRACE("a telltale printed by a run that exits 0");
    const auto& c = rejection(r, "variant=telltale");
    EXPECT_EQ(c.reason, "telltale");
    EXPECT_NE(c.detail.find("'BackendCompilerFailed' in stderr (exit code 0) on the timed run 1"),
              std::string::npos)
        << c.detail;
    EXPECT_EQ(runs_of(dir, "telltale"), 2);
  }
  {
    SCOPED_TRACE("a changed output");
    const auto& c = rejection(r, "variant=wrong");
    EXPECT_EQ(c.reason, "output_changed");
    EXPECT_EQ(c.detail,
              "output differs from the baseline's on the warm-up: line 3: 'ok:CHANGED:gamma', the "
              "baseline has 'ok:gamma'");
  }
  {
    SCOPED_TRACE("a timeout");
    EXPECT_EQ(rejection(r, "variant=hang").reason, "timeout");
  }
  {
    SCOPED_TRACE("death by a signal");
    const auto& c = rejection(r, "variant=signal");
    EXPECT_EQ(c.reason, "signal");
    EXPECT_NE(c.detail.find("SIGSEGV"), std::string::npos) << c.detail;
  }
  {
    SCOPED_TRACE("the database rows");
    auto runs = store->runs().value();
    ASSERT_EQ(runs.size(), 1u);
    EXPECT_EQ(runs[0].command, "stack tune");
    EXPECT_EQ(runs[0].strategy, "random");
    EXPECT_EQ(runs[0].status, "done");
    auto devices = store->devices().value();
    ASSERT_EQ(devices.size(), 1u);
    EXPECT_EQ(devices[0].backend, "host");
    EXPECT_EQ(runs[0].device_key, devices[0].key());
    auto problem = store->find_problem("demo/encoder").value();
    ASSERT_TRUE(problem.has_value());
    EXPECT_EQ(problem->problem.op(), "stack");
    EXPECT_EQ(*problem->problem.attr("provider"), "encoder");

    ASSERT_EQ(rows.size(), 8u);
    auto verdict = [&](const std::string& c) { return rows.at(c).outcome.verdict; };
    EXPECT_EQ(verdict("variant=base"), Verdict::kOk);
    EXPECT_EQ(verdict("variant=fast"), Verdict::kOk);
    EXPECT_EQ(verdict("variant=crash1"), Verdict::kCrashed);
    EXPECT_EQ(verdict("variant=signal"), Verdict::kCrashed);
    EXPECT_EQ(verdict("variant=telltale"), Verdict::kCrashed);
    EXPECT_EQ(verdict("variant=hang"), Verdict::kTimeout);
    EXPECT_EQ(verdict("variant=wrong"), Verdict::kWrongOutput);
    EXPECT_EQ(rows.at("variant=telltale").outcome.message.rfind("telltale: ", 0), 0u);
    EXPECT_EQ(rows.at("variant=hang").outcome.message.rfind("timeout: ", 0), 0u);
    for (const auto& [config, row] : rows) {
      EXPECT_EQ(row.backend, "command");
      EXPECT_EQ(row.regime, Regime::kDeploy);
      EXPECT_EQ(row.problem_key, problem->problem.structural_key());
      EXPECT_EQ(row.run_id, 1);
    }
    // Microseconds per record, so lower is better as for kernels: fast beats base.
    const auto& fast = *rows.at("variant=fast").outcome.measurement;
    const auto& base = *rows.at("variant=base").outcome.measurement;
    EXPECT_EQ(fast.samples, 2);
    EXPECT_LT(fast.median_us, base.median_us);
    EXPECT_GE(fast.noise, 0);  // measure/'s estimator, not a formula of the stack's own
    EXPECT_FALSE(rows.at("variant=wrong").outcome.measurement.has_value());
    EXPECT_EQ(rows.at("variant=wrong").outcome.check->metric, kDigestCheck);
  }
  {
    SCOPED_TRACE("the tuned file and the report");
    std::string y = yaml(r);
    EXPECT_NE(y.find("status: tuned"), std::string::npos) << y;
    EXPECT_NE(y.find("knobs: {variant: \"fast\"}"), std::string::npos) << y;
    for (const char* reason : {"reason: crash", "reason: signal", "reason: timeout",
                               "reason: telltale", "reason: output_changed"})
      EXPECT_NE(y.find(reason), std::string::npos) << reason << "\n" << y;
    // Rejections are listed in the space's order, not the order the seed ran them in.
    EXPECT_LT(y.find("config: variant=wrong"), y.find("config: variant=crash1"));
    EXPECT_LT(y.find("config: variant=signal"), y.find("config: variant=hang"));
    std::string report = format_stack_report(r);
    EXPECT_NE(report.find("tuned     variant=fast"), std::string::npos) << report;
    EXPECT_NE(report.find("rejected  variant=hang  timeout"), std::string::npos) << report;
  }
}

TEST(Tune, AProviderWhoseEveryChangeIsRejectedShipsItsBaseline) {
  TempDir dir;
  TempStore store;
  StackFile stack = load(dir, variant_stack(dir / "state", "base, wrong, crash1, fail"));
  StackTune r = tune(stack, *store, options(1));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.notes.providers[0].rejected.size(), 3u);
  EXPECT_EQ(row(r).config, "variant=base");
  EXPECT_DOUBLE_EQ(row(r).median_us, row(r).baseline_us);
  EXPECT_NE(yaml(r).find("status: baseline"), std::string::npos);
  EXPECT_NE(yaml(r).find("speedup: 1\n"), std::string::npos) << yaml(r);
}

TEST(Tune, AFailingBaselineStopsTheProviderAndFailsTheRun) {
  TempDir dir;
  TempStore store;
  StackFile stack = load(dir, variant_stack(dir / "state", "fail, fast", "", "variant: fail"));
  StackTune r = tune(stack, *store, options(1));
  EXPECT_FALSE(r.ok());
  const auto& p = r.report.problems[0];
  EXPECT_EQ(p.evaluated, 1);  // nothing but the baseline ran: there is no reference
  EXPECT_EQ(p.stopped_by, "baseline_failed");
  EXPECT_EQ(table::stack_row(r.table, r.notes.providers[0]), nullptr);
  std::string y = yaml(r);
  EXPECT_NE(y.find("status: baseline_failed"), std::string::npos) << y;
  EXPECT_NE(y.find("config: variant=fail\n"), std::string::npos) << y;
  EXPECT_NE(y.find("baseline_failure: \"crash: exit code 1"), std::string::npos) << y;
  EXPECT_EQ(rows_of(*store).size(), 1u);
  EXPECT_EQ(store->runs().value()[0].status, "failed");
  EXPECT_FALSE(std::filesystem::exists(dir / "state/count.fast"));
}

// rps comes from the knob (--rps {rps}), so throughputs are exact and ties are real.
std::string rps_stack(const std::string& state) {
  return "stack: demo\n"
         "providers:\n"
         "  - name: ranker\n"
         "    command: [\"" +
         kFakeProvider +
         "\", \"--profile\", \"instant\", \"--in\", \"{sample}\", "
         "\"--rps\", \"{rps}\", \"--state\", \"" +
         state +
         "\"]\n"
         "    env: {PAD: \"{pad}\", MODE: \"{mode}\"}\n"
         "    knobs:\n"
         "      rps: [100, 200, 150]\n"
         "      pad: [a, b]\n"
         "      mode: [x, y]\n"
         "    defaults: {rps: 100, pad: a, mode: x}\n"
         "    constraints: [\"rps != 150 or pad == 'a'\"]\n"
         "    sample: {file: records.txt}\n"
         "    throughput: {regex: \"rps=([0-9.]+)\"}\n"
         "    output: {stdout: true}\n";
}

TEST(Tune, TiesGoToFewerChangedKnobs) {
  TempDir dir;
  TempStore store;
  StackFile stack = load(dir, rps_stack(dir / "state"));
  // Several seeds visit the tied configs in several orders; the winner is the same.
  for (std::uint64_t seed : {0, 1, 2, 3}) {
    TempStore fresh;
    StackTune r = tune(stack, *fresh, options(1, seed));
    EXPECT_EQ(r.notes.providers[0].records, 4);  // the whole file when records is not given
    // 3 * 2 * 2 = 12, less the two with rps=150 and pad=b.
    EXPECT_EQ(r.report.problems[0].evaluated, 10);
    // The rps=... line is dropped before the outputs are compared, so nothing is rejected.
    EXPECT_TRUE(r.notes.providers[0].rejected.empty());
    // Four configs reach 200 records/s; rps=200 alone changes one knob.
    EXPECT_EQ(row(r).config, "rps=200,pad=a,mode=x") << "seed " << seed;
    EXPECT_DOUBLE_EQ(1e6 / row(r).median_us, 200);
    EXPECT_DOUBLE_EQ(row(r).baseline_us / row(r).median_us, 2);
  }
}

TEST(Tune, TheSameSeedGivesTheSameResult) {
  auto run = [](std::uint64_t seed) {
    TempDir dir;
    TempStore store;
    StackFile stack = load(dir, rps_stack(dir / "state"));
    std::vector<std::string> order;
    StackTuneOptions o = options(1, seed);
    o.log = [&](const std::string& line) {
      order.push_back(line.substr(0, line.rfind(' ', line.rfind(' ') - 1)));
    };
    StackTune r = tune(stack, *store, o);
    return std::make_pair(yaml(r), order);
  };
  auto [yaml5, order5] = run(5);
  auto [again5, again_order5] = run(5);
  EXPECT_EQ(yaml5, again5);
  EXPECT_EQ(order5, again_order5);
  ASSERT_EQ(order5.size(), 10u);
  // Another seed runs the candidates in another order and reaches the same tuned knobs.
  auto [yaml6, order6] = run(6);
  EXPECT_NE(order5, order6);
  auto strip_seed = [](std::string y) {
    return y.erase(y.find("seed:"), y.find('\n', y.find("seed:")) - y.find("seed:"));
  };
  EXPECT_EQ(strip_seed(yaml5), strip_seed(yaml6));
}

TEST(Tune, AnIdenticalRerunIsAnsweredFromTheStoreAndWritesTheSameFile) {
  TempDir dir;
  TempStore store;
  StackFile stack = load(dir, rps_stack(dir / "state"));
  StackTune first = tune(stack, *store, options(1, 7));
  const int runs = std::stoi(testing::read_file(dir / "state/count.instant"));
  StackTune again = tune(stack, *store, options(1, 7));
  EXPECT_EQ(std::stoi(testing::read_file(dir / "state/count.instant")), runs);  // nothing ran
  EXPECT_EQ(again.report.problems[0].measured, 0);
  EXPECT_EQ(again.report.problems[0].replayed, 10);
  EXPECT_EQ(yaml(first), yaml(again));
}

TEST(Tune, PatienceAndMaxCandidatesStopAProviderEarly) {
  TempDir dir;
  TempStore store;
  StackFile stack = load(dir, rps_stack(dir / "state"));
  StackTuneOptions o = options(1);
  o.tuning.max_candidates = 3;
  StackTune capped = tune(stack, *store, o);
  EXPECT_EQ(capped.report.problems[0].evaluated, 3);
  EXPECT_EQ(capped.report.problems[0].stopped_by, "max_candidates");
  EXPECT_NE(yaml(capped).find("evaluated: 3\n"), std::string::npos);

  TempStore other;
  StackTuneOptions p = options(1);
  p.tuning.strategy = "grid";  // enumeration order: rps=100 first, so the 200s come after
  p.tuning.patience = 1;
  StackTune patient = tune(stack, *other, p);
  EXPECT_EQ(patient.report.problems[0].stopped_by, "patience");
  EXPECT_LT(patient.report.problems[0].evaluated, 10);
}

TEST(Tune, ShardsOfTheGridTogetherCoverIt) {
  TempDir dir;
  StackFile stack = load(dir, rps_stack(dir / "state"));
  std::set<std::string> seen;
  std::int64_t evaluated = 0;
  for (std::uint32_t i = 0; i < 2; ++i) {
    TempStore store;
    StackTuneOptions o = options(1);
    o.tuning.strategy = "grid";
    o.tuning.shard_index = i;
    o.tuning.shard_count = 2;
    StackTune r = tune(stack, *store, o);
    for (const auto& [config, row] : rows_of(*store, "demo/ranker")) seen.insert(config);
    evaluated += r.report.problems[0].evaluated;
  }
  EXPECT_EQ(seen.size(), 10u);  // each shard also measures the baseline
  EXPECT_EQ(evaluated, 11);

  StackTuneOptions bad = options(1);
  bad.tuning.shard_count = 2;  // random cannot be sharded
  TempStore store;
  auto r = tune_stack(stack, test_host(), *store, bad);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind(), Error::Kind::kInvalidArgument);
  EXPECT_TRUE(store->runs().value().empty());  // refused before anything was stored
}

TEST(Tune, TheDriftAnchorReRunsTheDefaultsWithoutChangingTheResult) {
  TempDir dir;
  TempStore store;
  StackFile stack = load(dir, rps_stack(dir / "state"));
  StackTuneOptions o = options(1);
  o.tuning.drift.anchor_every = 4;
  StackTune r = tune(stack, *store, o);
  EXPECT_EQ(row(r).config, "rps=200,pad=a,mode=x");
  // 10 candidates of one run each, plus a warm-up each, plus the anchor's readings of the
  // defaults (exact throughputs: they never drift, so nothing is discarded).
  EXPECT_GT(std::stoi(testing::read_file(dir / "state/count.instant")), 20);
  EXPECT_EQ(r.report.problems[0].drift_events, 0);
}

std::string json_stack(const std::string& state, bool normalize) {
  return "stack: demo\n"
         "providers:\n"
         "  - name: writer\n"
         "    command: [\"" +
         kFakeProvider +
         "\", \"--profile\", \"{variant}\", \"--in\", \"{sample}\", "
         "\"--out\", \"{workdir}/out.json\", \"--state\", \"" +
         state +
         "\"]\n"
         "    knobs: {variant: [json]}\n"
         "    defaults: {variant: json}\n"
         "    sample: {file: records.txt, records: 2}\n"
         "    output: {file: \"{workdir}/out.json\"" +
         (normalize ? std::string(", normalize: {json_fields: [id, text]}") : "") + "}\n";
}

TEST(Tune, NormalizedJsonFieldsIgnoreWhatVariesBetweenRuns) {
  TempDir dir;
  TempStore store;
  StackTune r = tune(load(dir, json_stack(dir / "state", true)), *store, options(3));
  EXPECT_TRUE(r.ok()) << r.notes.providers[0].baseline_failure;
}

TEST(Tune, ABaselineWhoseOutputVariesCannotBeTheReference) {
  TempDir dir;
  TempStore store;
  StackTune r = tune(load(dir, json_stack(dir / "state", false)), *store, options(3));
  EXPECT_FALSE(r.ok());
  const auto& failure = r.notes.providers[0].baseline_failure;
  EXPECT_EQ(failure.rfind("output_changed: ", 0), 0u) << failure;
  EXPECT_NE(failure.find("nondeterministic"), std::string::npos) << failure;
}

TEST(Tune, AnInterruptKillsTheProgramInFlightAndClosesTheRunAsInterrupted) {
  TempDir dir;
  // timeout_s 600: only the interrupt can end the hanging candidate.
  std::string text = variant_stack(dir / "state", "instant, hang", "", "variant: instant");
  text.replace(text.find("timeout_s: 1"), 12, "timeout_s: 600");
  StackFile stack = load(dir, text);
  TempStore store;
  std::atomic<bool> interrupted{false};
  StackTuneOptions o = options(1);
  o.tuning.strategy = "grid";  // the baseline, then hang
  o.tuning.interrupted = &interrupted;
  std::optional<Result<StackTune>> result;
  std::thread t([&] { result.emplace(tune_stack(stack, test_host(), *store, o)); });
  // What a SIGINT handler does, once the hanging candidate has started.
  for (int i = 0; i < 3000 && !std::filesystem::exists(dir / "state/count.hang"); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  interrupted = true;
  platform::kill_running_programs();
  t.join();
  ASSERT_TRUE(result.has_value());
  ASSERT_FALSE(result->ok());
  EXPECT_NE(result->error().message().find("interrupted while running demo/encoder variant=hang"),
            std::string::npos)
      << result->error().message();
  auto runs = store->runs().value();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].status, "interrupted");
  auto rows = rows_of(*store);
  ASSERT_EQ(rows.size(), 1u);  // the baseline; the killed candidate is not a verdict
  EXPECT_EQ(rows.begin()->first, "variant=instant");
}

TEST(Tune, AProviderWithoutKnobsIsMeasuredAsItsBaselineOnly) {
  TempDir dir;
  TempStore store;
  StackFile stack = load(dir,
                         "stack: plain\n"
                         "providers:\n"
                         "  - name: only\n"
                         "    command: [\"" +
                             kFakeProvider +
                             "\", \"--profile\", \"instant\", \"--in\", \"{sample}\"]\n"
                             "    sample: {file: records.txt, records: 1}\n");
  StackTune r = tune(stack, *store, options(1));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.report.problems[0].evaluated, 1);
  EXPECT_EQ(row(r).config, "");
  EXPECT_NE(format_stack_report(r).find("baseline  (no knobs)"), std::string::npos);
  EXPECT_NE(yaml(r).find("status: baseline"), std::string::npos);
}

TEST(Tune, SampleRepeatsAndStrategyAreChecked) {
  TempDir dir;
  TempStore store;
  StackFile stack = load(dir, variant_stack(dir / "state", "base"));
  StackTuneOptions o = options(1);
  o.command.sample = 5;  // the file holds 4
  auto r = tune_stack(stack, test_host(), *store, o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("--sample 5: provider 'encoder' has only 4 records"),
            std::string::npos);
  o.command.sample.reset();
  o.command.repeats = 0;
  EXPECT_FALSE(tune_stack(stack, test_host(), *store, o).ok());
  o.command.repeats = 1;
  o.tuning.strategy = "nonesuch";
  auto s = tune_stack(stack, test_host(), *store, o);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("--strategy 'nonesuch' is not one of"), std::string::npos);
  EXPECT_TRUE(store->runs().value().empty());
}

}  // namespace
}  // namespace attune::command
