// stack tune against the fake provider run as a real subprocess: the winner, every rejection
// reason, the tie-break, seeds, output normalisation, a failing baseline and the database rows.
// Speeds differ by several times (0.05 s vs 0.15 s vs 0.3 s) and only the winner is asserted.
#include "stack/tune.h"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <thread>

#include <gtest/gtest.h>

#include "platform/process.h"
#include "stack/tuned_file.h"
#include "fixtures.h"

namespace attune::stack {
namespace {

using testing::kFakeProvider;
using testing::MemoryStore;
using testing::TempDir;
using testing::write_file;

// A fixed fingerprint: the tests compare tuned files byte for byte.
HostFingerprint test_host() {
  HostFingerprint h;
  h.cpu_model = "Test CPU 9000";
  h.logical_cpus = 2;
  h.tools[kFakeProvider] = "fake-provider 1.0";
  return h;
}

// One provider over the fake provider, knob `variant` = its profile.
std::string variant_stack(const std::string& state, const std::string& variants,
                          const std::string& extra = "", const std::string& defaults = "variant: base") {
  return "stack: demo\n"
         "telltales: [BackendCompilerFailed, InductorError]\n"
         "providers:\n"
         "  - name: encoder\n"
         "    command: [\"" + kFakeProvider + "\", \"--profile\", \"{variant}\", \"--in\", \"{sample}\", "
         "\"--state\", \"" + state + "\"]\n"
         "    knobs:\n"
         "      variant: [" + variants + "]\n"
         "    defaults: {" + defaults + "}\n"
         "    sample: {file: records.txt, records: 3}\n"
         "    timeout_s: 1\n" + extra;
}

StackFile load(const TempDir& dir, const std::string& text) {
  write_file(dir / "records.txt", "alpha\nbeta\ngamma\ndelta\n");
  write_file(dir / "stack.yaml", text);
  auto s = load_stack(dir / "stack.yaml");
  EXPECT_TRUE(s.ok()) << s.error().message();
  return s.ok() ? *s : StackFile{};
}

const CandidateResult& find(const ProviderResult& p, const std::string& label) {
  auto it = std::find_if(p.candidates.begin(), p.candidates.end(),
                         [&](const CandidateResult& c) { return c.label == label; });
  EXPECT_NE(it, p.candidates.end()) << label;
  return *it;
}

int runs_of(const TempDir& dir, const std::string& profile) {
  return std::stoi(testing::read_file(dir / ("state/count." + profile)));
}

// One tune over every profile (about three seconds, so it is one test: ctest runs each test in
// its own process). Each block checks one rule.
TEST(Tune, TheFastestCorrectCandidateWinsAndEveryFailureIsRejectedForItsReason) {
  TempDir dir;
  MemoryStore store;
  StackFile stack = load(dir, variant_stack(dir / "state",
                                            "base, medium, fast, wrong, crash1, telltale, signal, hang"));
  TuneOptions o;
  o.repeats = 2;
  o.store = &store;
  auto r = tune_stack(stack, test_host(), o);
  ASSERT_TRUE(r.ok()) << r.error().message();
  ASSERT_TRUE(r->ok());
  const ProviderResult& encoder = r->providers.at(0);

  {
    SCOPED_TRACE("the winner");
    EXPECT_TRUE(encoder.baseline_ok);
    EXPECT_EQ(encoder.baseline.label, "variant=base");
    EXPECT_EQ(encoder.baseline.order, 0);  // the baseline runs first
    EXPECT_EQ(encoder.winner.label, "variant=fast");
    EXPECT_GT(encoder.speedup(), 1.0);
    EXPECT_TRUE(find(encoder, "variant=medium").eligible());
    EXPECT_EQ(encoder.candidates.size(), 8u);
    EXPECT_EQ(encoder.rejected().size(), 5u);
  }
  {
    SCOPED_TRACE("a crash only on the first timed run");
    const auto& c = find(encoder, "variant=crash1");
    ASSERT_TRUE(c.rejection);
    EXPECT_EQ(*c.rejection, Rejection::kCrash);
    EXPECT_NE(c.detail.find("exit code 3"), std::string::npos) << c.detail;
    EXPECT_NE(c.detail.find("on the timed run 1"), std::string::npos) << c.detail;
    EXPECT_EQ(runs_of(dir, "crash1"), 2);  // the warm-up passed; the first timed run crashed
  }
  {
    SCOPED_TRACE("a telltale printed by a run that exits 0");
    const auto& c = find(encoder, "variant=telltale");
    ASSERT_TRUE(c.rejection);
    EXPECT_EQ(*c.rejection, Rejection::kTelltale);
    EXPECT_NE(c.detail.find("'BackendCompilerFailed' in stderr (exit code 0) on the timed run 1"),
              std::string::npos) << c.detail;
    EXPECT_EQ(runs_of(dir, "telltale"), 2);
  }
  {
    SCOPED_TRACE("a changed output");
    const auto& c = find(encoder, "variant=wrong");
    ASSERT_TRUE(c.rejection);
    EXPECT_EQ(*c.rejection, Rejection::kOutputChanged);
    EXPECT_EQ(c.detail,
              "output differs from the baseline's on the warm-up: line 3: 'ok:CHANGED:gamma', the "
              "baseline has 'ok:gamma'");
  }
  {
    SCOPED_TRACE("a timeout");
    const auto& c = find(encoder, "variant=hang");
    ASSERT_TRUE(c.rejection);
    EXPECT_EQ(*c.rejection, Rejection::kTimeout);
  }
  {
    SCOPED_TRACE("death by a signal");
    const auto& c = find(encoder, "variant=signal");
    ASSERT_TRUE(c.rejection);
    EXPECT_EQ(*c.rejection, Rejection::kSignal);
    EXPECT_NE(c.detail.find("SIGSEGV"), std::string::npos) << c.detail;
  }
  {
    SCOPED_TRACE("the database rows");
    ASSERT_EQ(store.run_rows.size(), 1u);
    EXPECT_EQ(store.run_rows[0].command, "stack tune");
    EXPECT_EQ(store.run_rows[0].strategy, "grid");
    EXPECT_EQ(store.run_rows[0].status, "done");
    ASSERT_EQ(store.device_rows.size(), 1u);
    EXPECT_EQ(store.device_rows[0].backend, "host");
    EXPECT_EQ(store.run_rows[0].device_key, store.device_rows[0].key());
    ASSERT_EQ(store.problem_rows.size(), 1u);
    EXPECT_EQ(store.problem_rows[0].op(), "stack");
    EXPECT_EQ(*store.problem_rows[0].attr("provider"), "encoder");
    EXPECT_EQ(store.problem_rows[0].name(), "demo/encoder");

    std::map<std::string, const MeasurementRow*> by_config;
    for (const auto& row : store.rows) by_config[row.config] = &row;
    ASSERT_EQ(by_config.size(), 8u);
    auto verdict = [&](const std::string& c) { return by_config.at(c)->outcome.verdict; };
    EXPECT_EQ(verdict("variant=base"), Verdict::kOk);
    EXPECT_EQ(verdict("variant=fast"), Verdict::kOk);
    EXPECT_EQ(verdict("variant=crash1"), Verdict::kCrashed);
    EXPECT_EQ(verdict("variant=signal"), Verdict::kCrashed);
    EXPECT_EQ(verdict("variant=telltale"), Verdict::kCrashed);
    EXPECT_EQ(verdict("variant=hang"), Verdict::kTimeout);
    EXPECT_EQ(verdict("variant=wrong"), Verdict::kWrongOutput);
    EXPECT_EQ(by_config.at("variant=telltale")->outcome.message.rfind("telltale: ", 0), 0u);
    EXPECT_EQ(by_config.at("variant=hang")->outcome.message.rfind("timeout: ", 0), 0u);
    for (const auto& row : store.rows) {
      EXPECT_EQ(row.backend, "command");
      EXPECT_EQ(row.regime, Regime::kDeploy);
      EXPECT_EQ(row.problem_key, store.problem_rows[0].structural_key());
      EXPECT_EQ(row.run_id, 1);
    }
    // Microseconds per record, so lower is better as for kernels: fast beats base.
    const auto& fast = *by_config.at("variant=fast")->outcome.measurement;
    const auto& base = *by_config.at("variant=base")->outcome.measurement;
    EXPECT_EQ(fast.samples, 2);
    EXPECT_LT(fast.median_us, base.median_us);
    EXPECT_FALSE(by_config.at("variant=wrong")->outcome.measurement.has_value());
  }
  {
    SCOPED_TRACE("the tuned file and the report");
    std::string yaml = tuned_yaml(*r);
    EXPECT_NE(yaml.find("status: tuned"), std::string::npos) << yaml;
    EXPECT_NE(yaml.find("knobs: {variant: \"fast\"}"), std::string::npos) << yaml;
    for (const char* reason : {"reason: crash", "reason: signal", "reason: timeout",
                               "reason: telltale", "reason: output_changed"})
      EXPECT_NE(yaml.find(reason), std::string::npos) << reason << "\n" << yaml;
    std::string report = format_report(*r);
    EXPECT_NE(report.find("tuned     variant=fast"), std::string::npos) << report;
    EXPECT_NE(report.find("rejected  variant=hang  timeout"), std::string::npos) << report;
  }
}

TEST(Tune, AProviderWhoseEveryChangeIsRejectedShipsItsBaseline) {
  TempDir dir;
  StackFile stack = load(dir, variant_stack(dir / "state", "base, wrong, crash1, fail"));
  TuneOptions o;
  o.repeats = 1;
  auto r = tune_stack(stack, test_host(), o);
  ASSERT_TRUE(r.ok()) << r.error().message();
  ASSERT_TRUE(r->ok());
  const auto& p = r->providers[0];
  EXPECT_EQ(p.rejected().size(), 3u);
  EXPECT_EQ(p.winner.label, "variant=base");
  EXPECT_DOUBLE_EQ(p.speedup(), 1.0);
  EXPECT_NE(tuned_yaml(*r).find("status: baseline"), std::string::npos);
}

TEST(Tune, AFailingBaselineStopsTheProviderAndFailsTheRun) {
  TempDir dir;
  StackFile stack = load(dir, variant_stack(dir / "state", "fail, fast", "", "variant: fail"));
  MemoryStore store;
  TuneOptions o;
  o.repeats = 1;
  o.store = &store;
  auto r = tune_stack(stack, test_host(), o);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_FALSE(r->ok());
  const auto& p = r->providers[0];
  EXPECT_FALSE(p.baseline_ok);
  EXPECT_EQ(p.candidates.size(), 1u);  // nothing but the baseline ran: there is no reference
  EXPECT_EQ(p.winner.label, "variant=fail");
  EXPECT_NE(tuned_yaml(*r).find("status: baseline_failed"), std::string::npos);
  EXPECT_EQ(store.rows.size(), 1u);
  EXPECT_EQ(store.run_rows[0].status, "failed");
}

// rps comes from the knob (--rps {rps}), so throughputs are exact and ties are real.
std::string rps_stack(const std::string& state) {
  return "stack: demo\n"
         "providers:\n"
         "  - name: ranker\n"
         "    command: [\"" + kFakeProvider + "\", \"--profile\", \"instant\", \"--in\", \"{sample}\", "
         "\"--rps\", \"{rps}\", \"--state\", \"" + state + "\"]\n"
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
  StackFile stack = load(dir, rps_stack(dir / "state"));
  TuneOptions o;
  o.repeats = 1;
  auto r = tune_stack(stack, test_host(), o);
  ASSERT_TRUE(r.ok()) << r.error().message();
  const auto& p = r->providers[0];
  EXPECT_EQ(p.records, 4);  // the whole file when records is not given
  // 3 * 2 * 2 = 12, less the two with rps=150 and pad=b.
  EXPECT_EQ(p.candidates.size(), 10u);
  // The rps=... line is dropped before the outputs are compared, so nothing is rejected.
  EXPECT_TRUE(p.rejected().empty());
  // Four configs reach 200 records/s; rps=200 alone changes one knob.
  EXPECT_EQ(p.winner.label, "rps=200,pad=a,mode=x");
  EXPECT_DOUBLE_EQ(p.winner.throughput, 200);
  EXPECT_DOUBLE_EQ(p.speedup(), 2);
}

TEST(Tune, RankingIsTotal) {
  CandidateResult a, b;
  a.throughput = b.throughput = 10;
  a.changed = b.changed = 1;
  a.label = "k=a";
  b.label = "k=b";
  EXPECT_TRUE(ranks_before(a, b));
  EXPECT_FALSE(ranks_before(b, a));
  b.changed = 0;
  EXPECT_TRUE(ranks_before(b, a));
  a.throughput = 11;
  EXPECT_TRUE(ranks_before(a, b));
  EXPECT_FALSE(ranks_before(a, a));
}

TEST(Tune, TheSameSeedGivesTheSameResult) {
  auto tune = [](std::uint64_t seed) {
    TempDir dir;
    StackFile stack = load(dir, rps_stack(dir / "state"));
    TuneOptions o;
    o.repeats = 1;
    o.seed = seed;
    auto r = tune_stack(stack, test_host(), o);
    EXPECT_TRUE(r.ok());
    std::vector<int> order;
    for (const auto& c : r->providers[0].candidates) order.push_back(c.order);
    return std::make_pair(tuned_yaml(*r), order);
  };
  auto [yaml5, order5] = tune(5);
  auto [again5, again_order5] = tune(5);
  EXPECT_EQ(yaml5, again5);
  EXPECT_EQ(order5, again_order5);
  // Another seed runs the candidates in another order and reaches the same tuned knobs.
  auto [yaml6, order6] = tune(6);
  EXPECT_NE(order5, order6);
  auto strip_seed = [](std::string y) { return y.erase(y.find("seed:"), y.find('\n', y.find("seed:")) - y.find("seed:")); };
  EXPECT_EQ(strip_seed(yaml5), strip_seed(yaml6));
}

std::string json_stack(const std::string& state, bool normalize) {
  return "stack: demo\n"
         "providers:\n"
         "  - name: writer\n"
         "    command: [\"" + kFakeProvider + "\", \"--profile\", \"{variant}\", \"--in\", \"{sample}\", "
         "\"--out\", \"{workdir}/out.json\", \"--state\", \"" + state + "\"]\n"
         "    knobs: {variant: [json]}\n"
         "    defaults: {variant: json}\n"
         "    sample: {file: records.txt, records: 2}\n"
         "    output: {file: \"{workdir}/out.json\"" +
         (normalize ? std::string(", normalize: {json_fields: [id, text]}") : "") + "}\n";
}

TEST(Tune, NormalizedJsonFieldsIgnoreWhatVariesBetweenRuns) {
  TempDir dir;
  auto r = tune_stack(load(dir, json_stack(dir / "state", true)), test_host(), TuneOptions{});
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_TRUE(r->providers[0].baseline_ok) << r->providers[0].baseline.detail;
}

TEST(Tune, ABaselineWhoseOutputVariesCannotBeTheReference) {
  TempDir dir;
  auto r = tune_stack(load(dir, json_stack(dir / "state", false)), test_host(), TuneOptions{});
  ASSERT_TRUE(r.ok()) << r.error().message();
  const auto& p = r->providers[0];
  EXPECT_FALSE(p.baseline_ok);
  ASSERT_TRUE(p.baseline.rejection);
  EXPECT_EQ(*p.baseline.rejection, Rejection::kOutputChanged);
  EXPECT_NE(p.baseline.detail.find("nondeterministic"), std::string::npos) << p.baseline.detail;
}

TEST(Tune, AnInterruptKillsTheProgramInFlightAndClosesTheRunAsInterrupted) {
  TempDir dir;
  // timeout_s 600: only the interrupt can end the hanging candidate.
  std::string text = variant_stack(dir / "state", "instant, hang", "", "variant: instant");
  text.replace(text.find("timeout_s: 1"), 12, "timeout_s: 600");
  StackFile stack = load(dir, text);
  MemoryStore store;
  std::atomic<bool> interrupted{false};
  TuneOptions o;
  o.repeats = 1;
  o.store = &store;
  o.interrupted = &interrupted;
  std::optional<Result<TuneResult>> result;
  std::thread tune([&] { result.emplace(tune_stack(stack, test_host(), o)); });
  // What a SIGINT handler does, once the hanging candidate has started.
  for (int i = 0; i < 3000 && !std::filesystem::exists(dir / "state/count.hang"); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  interrupted = true;
  platform::kill_running_programs();
  tune.join();
  ASSERT_TRUE(result.has_value());
  ASSERT_FALSE(result->ok());
  EXPECT_NE(result->error().message().find("interrupted while running encoder variant=hang"),
            std::string::npos) << result->error().message();
  ASSERT_EQ(store.run_rows.size(), 1u);
  EXPECT_EQ(store.run_rows[0].status, "interrupted");
  ASSERT_EQ(store.rows.size(), 1u);  // the baseline; the killed candidate is not a verdict
  EXPECT_EQ(store.rows[0].config, "variant=instant");
}

TEST(Tune, AProviderWithoutKnobsIsMeasuredAsItsBaselineOnly) {
  TempDir dir;
  StackFile stack = load(dir,
                         "stack: plain\n"
                         "providers:\n"
                         "  - name: only\n"
                         "    command: [\"" + kFakeProvider + "\", \"--profile\", \"instant\", \"--in\", \"{sample}\"]\n"
                         "    sample: {file: records.txt, records: 1}\n");
  TuneOptions o;
  o.repeats = 1;
  auto r = tune_stack(stack, test_host(), o);
  ASSERT_TRUE(r.ok()) << r.error().message();
  ASSERT_TRUE(r->ok());
  EXPECT_EQ(r->providers[0].candidates.size(), 1u);
  EXPECT_EQ(r->providers[0].winner.label, "");
  EXPECT_NE(format_report(*r).find("baseline  (no knobs)"), std::string::npos);
}

TEST(Tune, SampleAndRepeatsAreChecked) {
  TempDir dir;
  StackFile stack = load(dir, variant_stack(dir / "state", "base"));
  TuneOptions o;
  o.sample = 5;  // the file holds 4
  auto r = tune_stack(stack, test_host(), o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("--sample 5: provider 'encoder' has only 4 records"), std::string::npos);
  o.sample.reset();
  o.repeats = 0;
  EXPECT_FALSE(tune_stack(stack, test_host(), o).ok());
}

}  // namespace
}  // namespace attune::stack
