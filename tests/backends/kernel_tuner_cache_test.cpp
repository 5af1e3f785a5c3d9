#include "backends/replay/kernel_tuner_cache.h"

#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "backends/replay/replay_backend.h"

namespace attune::replay {
namespace {

std::string fixture(const std::string& name) {
  return std::string(ATTUNE_SOURCE_DIR) + "/tests/backends/fixtures/" + name;
}
std::string dataset(const std::string& name) {
  return std::string(ATTUNE_SOURCE_DIR) + "/../shared/datasets/kernel-tuner-caches/" + name;
}

TEST(KernelTunerCache, ReadsTheRecordedSpaceOnly) {
  auto rs = load_kernel_tuner_cache(fixture("tiny.json"));
  ASSERT_TRUE(rs) << rs.error().message();
  EXPECT_EQ(rs->device_name, "Test GPU 1");
  EXPECT_EQ(rs->kernel_name, "tiny_kernel");
  EXPECT_EQ(rs->problem_size, "64x32");
  ASSERT_EQ(rs->space.depth(), 2u);
  EXPECT_EQ(rs->space.knobs()[0].name, "a");
  EXPECT_EQ(rs->space.knobs()[1].name, "b");
  // a=3,b=8 is absent from the cache, so it is not part of the space.
  EXPECT_EQ(rs->space.count(), 5u);
  std::set<std::string> seen;
  for (auto e = rs->space.enumerate(); auto p = e.next();) {
    EXPECT_NE(rs->find(*p), nullptr);
    seen.insert(rs->space.config(*p).text());
  }
  EXPECT_EQ(seen.size(), 5u);
  EXPECT_FALSE(seen.count("a=3,b=8"));
  EXPECT_FALSE(rs->space.parse("a=3,b=8"));
}

TEST(KernelTunerCache, MapsFailureStringsToVerdicts) {
  auto rs = load_kernel_tuner_cache(fixture("tiny_all_failures.json.gz"));
  ASSERT_TRUE(rs) << rs.error().message();
  auto verdict = [&](const std::string& text) {
    auto p = rs->space.point(rs->space.parse(text).value()).value();
    return rs->find(p)->verdict;
  };
  EXPECT_EQ(verdict("a=1,b=8"), Verdict::kLaunchFailed);
  EXPECT_EQ(verdict("a=2,b=16"), Verdict::kBuildFailed);
  EXPECT_EQ(verdict("a=3,b=8"), Verdict::kUnsupported);
  EXPECT_EQ(verdict("a=2,b=8"), Verdict::kOk);
  EXPECT_EQ(verdict_from_kernel_tuner("InvalidConfig"), Verdict::kUnsupported);
  EXPECT_FALSE(verdict_from_kernel_tuner("SomethingElse"));
}

TEST(KernelTunerCache, BaselineIsTheFirstOptionsOrTheFirstConfigWithATime) {
  auto rs = load_kernel_tuner_cache(fixture("tiny.json"));
  ASSERT_TRUE(rs);
  // a=1,b=8 (the first options) failed, so the baseline is the first config recorded with a time.
  EXPECT_EQ(rs->space.config(rs->space.baseline()).text(), "a=1,b=16");
  EXPECT_TRUE(rs->space.prefix_legal(rs->space.baseline()));
  EXPECT_DOUBLE_EQ(*rs->optimum_us(), 500.0);  // 0.5 ms
  auto p = rs->space.point(rs->space.parse("a=1,b=16").value()).value();
  EXPECT_DOUBLE_EQ(rs->find(p)->time_us, 2000.0);
  EXPECT_EQ(rs->find(p)->samples_us.size(), 3u);
}

TEST(KernelTunerCache, CompactPayloadParsesBackToTheSameSpace) {
  auto rs = load_kernel_tuner_cache(fixture("tiny_all_failures.json.gz"));
  ASSERT_TRUE(rs);
  auto back = parse_kernel_tuner_cache(rs->compact_json());
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_EQ(back->points, rs->points);
  EXPECT_EQ(back->problem().structural_key(), rs->problem().structural_key());
  EXPECT_EQ(back->digest, rs->digest);
  // A different recording of the same kernel on the same device is another problem.
  auto other = load_kernel_tuner_cache(fixture("tiny.json"));
  ASSERT_TRUE(other);
  EXPECT_NE(other->problem().structural_key(), rs->problem().structural_key());
  for (std::size_t i = 0; i < rs->points.size(); ++i) {
    EXPECT_EQ(back->results[i].verdict, rs->results[i].verdict);
    EXPECT_NEAR(back->results[i].time_us, rs->results[i].time_us, 1e-9);
  }
}

struct BadCase {
  const char* file;
  const char* says;
};

class BadCache : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadCache, IsOneClearInvalidArgumentLine) {
  auto rs = load_kernel_tuner_cache(fixture(GetParam().file));
  ASSERT_FALSE(rs) << GetParam().file << " was accepted";
  EXPECT_EQ(rs.error().kind(), Error::Kind::kInvalidArgument) << rs.error().message();
  EXPECT_NE(rs.error().message().find(GetParam().says), std::string::npos) << rs.error().message();
  EXPECT_EQ(rs.error().message().find('\n'), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, BadCache,
    ::testing::Values(BadCase{"truncated.json.gz", "gzip"},
                      BadCase{"truncated.json", "not valid JSON"},
                      BadCase{"not_json.json", "not valid JSON"},
                      BadCase{"left_open_inside_a_config.json", "not valid JSON"},
                      BadCase{"objective_not_time.json", "objective [\"GFLOP/s\"]"},
                      BadCase{"two_objectives.json", "objective [\"time\",\"energy\"]"},
                      BadCase{"missing_field.json", "missing field 'tune_params'"},
                      BadCase{"config_not_an_option.json", "'4' is not an option of knob 'a'"},
                      BadCase{"config_wrong_arity.json", "has 3 values"},
                      BadCase{"config_field_mismatch.json", "its field 'a' is 3"},
                      BadCase{"unknown_failure.json", "unknown failure 'WeirdFailure'"},
                      BadCase{"config_without_time.json", "has no 'time'"}));

// kt15_vector_add.json and kt15_vector_add_crashed.json were written by Kernel Tuner 1.5.0
// itself, tuning tests/interop/vector_add.c with its C backend (tests/interop/common.py): the
// second by a run the kernel aborted part-way, so it ends in a config's comma, left open.
TEST(KernelTunerCache, ReadsACacheKernelTuner15Wrote) {
  auto rs = load_kernel_tuner_cache(fixture("kt15_vector_add.json"));
  ASSERT_TRUE(rs) << rs.error().message();
  EXPECT_FALSE(rs->was_open);
  EXPECT_EQ(rs->kernel_name, "vector_add");
  EXPECT_EQ(rs->problem_size, "100000");  // a number there
  EXPECT_EQ(rs->points.size(), 20u);
  std::size_t ok = 0, build_failed = 0;
  for (const auto& r : rs->results) {
    ok += r.verdict == Verdict::kOk;
    build_failed += r.verdict == Verdict::kBuildFailed;  // "__error__": "CompilationFailedConfig"
    if (r.verdict == Verdict::kOk) {
      EXPECT_EQ(r.samples_us.size(), 3u);
    }
  }
  EXPECT_EQ(ok, 16u);
  EXPECT_EQ(build_failed, 4u);
  EXPECT_DOUBLE_EQ(*rs->optimum_us(), 0.2190476655960083 * 1000.0);
}

// The cache Kernel Tuner 1.5 (CuPy backend) wrote on an H200 tuning its own matmul example in
// bench/kernel_tuner_duel (bench/results/kernel_tuner_duel-h200-2026-12-01.md): 40 configs, 4
// that CuPy failed to compile, the fastest 32,4,4,8.
TEST(KernelTunerCache, ReadsACacheKernelTuner15WroteOnAGpu) {
  auto rs = load_kernel_tuner_cache(fixture("kt15_h200_matmul.json"));
  ASSERT_TRUE(rs) << rs.error().message();
  EXPECT_EQ(rs->device_name, "NVIDIA H200");
  EXPECT_EQ(rs->kernel_name, "matmul_kernel");
  EXPECT_EQ(rs->points.size(), 40u);
  std::size_t ok = 0, build_failed = 0;
  const RecordedResult* best = nullptr;
  for (std::size_t i = 0; i < rs->results.size(); ++i) {
    const auto& r = rs->results[i];
    ok += r.verdict == Verdict::kOk;
    build_failed += r.verdict == Verdict::kBuildFailed;
    if (r.verdict == Verdict::kOk && (!best || r.time_us < best->time_us)) best = &r;
    if (r.verdict == Verdict::kOk) {
      EXPECT_EQ(r.samples_us.size(), 7u);  // its 7 iterations
    }
  }
  EXPECT_EQ(ok, 36u);
  EXPECT_EQ(build_failed, 4u);
  ASSERT_NE(best, nullptr);
  EXPECT_DOUBLE_EQ(*rs->optimum_us(), best->time_us);
  const Point& p = rs->points[static_cast<std::size_t>(best - rs->results.data())];
  EXPECT_EQ(rs->space.config(p).text(),
            "block_size_x=32,block_size_y=4,tile_size_x=4,tile_size_y=8");
}

TEST(KernelTunerCache, ReadsACacheLeftOpenByACrashAsKernelTunerDoes) {
  auto rs = load_kernel_tuner_cache(fixture("kt15_vector_add_crashed.json"));
  ASSERT_TRUE(rs) << rs.error().message();
  EXPECT_TRUE(rs->was_open);
  EXPECT_EQ(rs->points.size(), 14u);  // the configs written before the abort
  EXPECT_DOUBLE_EQ(*rs->optimum_us(), 0.23344433307647705 * 1000.0);
}

TEST(KernelTunerCache, ClosesAnOpenCacheAsCorrectOpenCacheDoes) {
  EXPECT_EQ(close_open_cache("{\n\"cache\": {\n\"1\": {\"time\": 1.0},\n"),
            "{\n\"cache\": {\n\"1\": {\"time\": 1.0}}\n}");
  EXPECT_EQ(close_open_cache("{\n\"cache\": {"), "{\n\"cache\": {}\n}");  // crashed before any
  // Closed files are left as they are, but for surrounding white space.
  EXPECT_EQ(close_open_cache("  {\"cache\": {\"1\": {}}\n}\n"), "{\"cache\": {\"1\": {}}\n}");
  EXPECT_EQ(close_open_cache("{\"cache\": {\"1\": {}}}"), "{\"cache\": {\"1\": {}}}");
}

// tiny.json's space with one field of the file changed.
std::string tiny_with(const std::string& field, const nlohmann::json& value) {
  auto j = nlohmann::json::parse(read_maybe_gzipped(fixture("tiny.json")).value());
  j[field] = value;
  return j.dump();
}

TEST(KernelTunerCache, ObjectiveIsTimeAsAStringOrAListOfOne) {
  for (const auto& o : {nlohmann::json("time"), nlohmann::json::array({"time"})}) {
    auto rs = parse_kernel_tuner_cache(tiny_with("objective", o));
    EXPECT_TRUE(rs) << o.dump() << ": " << rs.error().message();
  }
  for (const auto& o : {nlohmann::json("GFLOP/s"), nlohmann::json::array({"time", "energy"}),
                        nlohmann::json::array(), nlohmann::json(3)}) {
    auto rs = parse_kernel_tuner_cache(tiny_with("objective", o));
    ASSERT_FALSE(rs) << o.dump();
    EXPECT_NE(rs.error().message().find("objective " + o.dump() + " is not supported"),
              std::string::npos)
        << rs.error().message();
  }
}

TEST(KernelTunerCache, ProblemSizeIsANumberOrAList) {
  auto number = parse_kernel_tuner_cache(tiny_with("problem_size", 4096));
  ASSERT_TRUE(number);
  EXPECT_EQ(number->problem_size, "4096");
  auto list = parse_kernel_tuner_cache(tiny_with("problem_size", {4096, 1024, 2}));
  ASSERT_TRUE(list);
  EXPECT_EQ(list->problem_size, "4096x1024x2");
  EXPECT_EQ(problem_size_numbers("4096x1024x2"), (std::vector<std::int64_t>{4096, 1024, 2}));
  EXPECT_EQ(problem_size_numbers("100000"), (std::vector<std::int64_t>{100000}));
  EXPECT_TRUE(problem_size_numbers("callable").empty());
  EXPECT_TRUE(problem_size_numbers("64xk").empty());
  EXPECT_TRUE(problem_size_numbers("").empty());
}

TEST(KernelTunerCache, FieldsAttuneDoesNotUseAreIgnored) {
  // At the top level (the next field a Kernel Tuner version adds) ...
  auto rs = load_kernel_tuner_cache(fixture("unknown_field.json"));
  ASSERT_TRUE(rs) << rs.error().message();
  EXPECT_EQ(rs->points.size(), 5u);
  // ... and in a config (metrics, observers' readings, timings).
  auto j = nlohmann::json::parse(read_maybe_gzipped(fixture("tiny.json")).value());
  j["cache"]["3,16"]["GFLOP/s"] = 812.5;
  j["cache"]["3,16"]["nvml_power"] = {1, 2};
  j["cache"]["1,8"]["compile_time"] = 12.0;
  j["schema_version"] = "1.1.0";
  auto more = parse_kernel_tuner_cache(j.dump());
  ASSERT_TRUE(more) << more.error().message();
  EXPECT_DOUBLE_EQ(*more->optimum_us(), 500.0);
}

TEST(KernelTunerCache, AFailureIsItsErrorFieldOrItsTime) {
  auto j = nlohmann::json::parse(read_maybe_gzipped(fixture("tiny.json")).value());
  j["cache"]["1,8"] = {{"a", 1}, {"b", 8}, {"__error__", "InvalidConfig"}, {"compile_time", 0}};
  j["cache"]["2,16"] = {{"a", 2}, {"b", 16}, {"time", "CompilationFailedConfig"}};
  auto rs = parse_kernel_tuner_cache(j.dump());
  ASSERT_TRUE(rs) << rs.error().message();
  auto verdict = [&](const std::string& text) {
    return rs->find(rs->space.point(rs->space.parse(text).value()).value())->verdict;
  };
  EXPECT_EQ(verdict("a=1,b=8"), Verdict::kUnsupported);
  EXPECT_EQ(verdict("a=2,b=16"), Verdict::kBuildFailed);
  j["cache"]["1,8"]["__error__"] = 7;
  EXPECT_FALSE(parse_kernel_tuner_cache(j.dump()));
}

// ---- the writer ---------------------------------------------------------------------------

// a in {1, 2, 3} x b in {8, 16}, a * b <= 32: 5 legal configs.
Space small_space() {
  return Space::make({{"a", {1, 2, 3}, 0}, {"b", {8, 16}, 0}},
                     {{"a * b <= 32",
                       {"a", "b"},
                       [](const Assignment& x) { return x.i("a") * x.i("b") <= 32; }}})
      .value();
}

ExportRow row(const std::string& config, Verdict verdict, std::optional<double> us) {
  ExportRow r;
  r.config = Config::parse(config).value();
  r.verdict = verdict;
  r.time_us = us;
  r.measured_at = "2026-11-30T14:53:54.123Z";
  return r;
}

TEST(KernelTunerCacheWriter, WritesKernelTunersFieldOrderWithTheCacheLast) {
  CacheHeader h;
  h.device_name = "NVIDIA H200";
  h.kernel_name = "tiny_kernel";
  h.problem_size = {64, 32};
  h.space = small_space();
  std::vector<ExportRow> rows = {row("a=1,b=8", Verdict::kOk, 2000.0),
                                 row("a=2,b=16", Verdict::kBuildFailed, std::nullopt)};
  rows[0].samples_us = {1900.0, 2000.0, 2100.0};
  auto w = write_kernel_tuner_cache(h, rows);
  ASSERT_TRUE(w) << w.error().message();
  EXPECT_EQ(w->configs, 2u);
  EXPECT_EQ(w->space_configs, 5u);
  EXPECT_EQ(w->outside_space, 0u);
  // Closed as close_cache closes a cache: Kernel Tuner cuts these three characters off to append.
  EXPECT_TRUE(w->text.ends_with("}}\n}")) << w->text;
  auto j = nlohmann::ordered_json::parse(w->text);
  std::vector<std::string> order;
  for (const auto& [k, v] : j.items()) order.push_back(k);
  EXPECT_EQ(order, (std::vector<std::string>{"device_name", "kernel_name", "problem_size",
                                             "tune_params_keys", "tune_params", "objective",
                                             "attune_baseline", "cache"}));
  EXPECT_EQ(j["attune_baseline"], "1,8");  // the space's baseline, a=1,b=8, is among the rows
  EXPECT_EQ(j["problem_size"], nlohmann::json({64, 32}));
  EXPECT_EQ(j["objective"], nlohmann::json::array({"time"}));
  // Every option of every knob, measured or not (a=3 never was).
  EXPECT_EQ(j["tune_params"].dump(), R"({"a":[1,2,3],"b":[8,16]})");
  // One config per line, as store_cache appends them.
  EXPECT_NE(w->text.find("\n\"1,8\": {\"a\": 1, \"b\": 8, \"time\": 2.0, \"times\": [1.9,2.0,2.1], "
                         "\"compile_time\": 0, \"verification_time\": 0, \"benchmark_time\": 0, "
                         "\"strategy_time\": 0, \"framework_time\": 0, "
                         "\"timestamp\": \"2026-11-30 14:53:54.123000+00:00\"},\n"),
            std::string::npos)
      << w->text;
  const auto& failed = j["cache"]["2,16"];
  EXPECT_EQ(failed["__error__"], "CompilationFailedConfig");
  EXPECT_FALSE(failed.contains("time"));  // Kernel Tuner 1.x writes no time for a failure
  // attune reads it back the same.
  auto back = parse_kernel_tuner_cache(w->text);
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_EQ(back->points.size(), 2u);
  EXPECT_DOUBLE_EQ(*back->optimum_us(), 2000.0);
}

// A replay starts where a real run starts: from the baseline the file names, whichever option of
// each knob it is; without the field, from the first options (tiny.json: the first config with a
// time, since the first options failed).
TEST(KernelTunerCache, BaselineIsTheOneTheFileNames) {
  CacheHeader h;
  h.kernel_name = "k";
  h.problem_size = {64};
  h.space = Space::make({{"a", {1, 2, 3}, 2}, {"b", {8, 16}, 1}}).value();  // baseline a=3,b=16
  std::vector<ExportRow> rows = {row("a=1,b=8", Verdict::kOk, 9.0),
                                 row("a=3,b=16", Verdict::kOk, 5.0)};
  auto w = write_kernel_tuner_cache(h, rows);
  ASSERT_TRUE(w) << w.error().message();
  EXPECT_EQ(nlohmann::json::parse(w->text)["attune_baseline"], "3,16");
  auto back = parse_kernel_tuner_cache(w->text);
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_EQ(back->space.config(back->space.baseline()).text(), "a=3,b=16");

  // Not among the rows: not written, and the replay falls back to the first options.
  auto without = write_kernel_tuner_cache(h, {rows[0]});
  ASSERT_TRUE(without);
  EXPECT_FALSE(nlohmann::json::parse(without->text).contains("attune_baseline"));
  auto first = parse_kernel_tuner_cache(without->text);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->space.config(first->space.baseline()).text(), "a=1,b=8");

  // A field naming a config the cache does not hold, or not a key, is one line.
  auto j = nlohmann::json::parse(w->text);
  j["attune_baseline"] = "2,8";
  auto unknown = parse_kernel_tuner_cache(j.dump());
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message().find("'attune_baseline' names config '2,8'"),
            std::string::npos)
      << unknown.error().message();
  j["attune_baseline"] = 3;
  EXPECT_FALSE(parse_kernel_tuner_cache(j.dump()));
}

// A space attune recorded names the problem it came from (bench/spaces/record.py's
// attune_recorded), which bench/search_replay takes the op's first guesses at.
TEST(KernelTunerCache, KeepsTheProblemAttuneRecordedItFrom) {
  CacheHeader h;
  h.kernel_name = "k";
  h.problem_size = {64};
  h.space = Space::make({{"a", {1, 2, 3}, 0}}).value();
  auto w = write_kernel_tuner_cache(h, {row("a=1", Verdict::kOk, 9.0)});
  ASSERT_TRUE(w) << w.error().message();
  auto plain = parse_kernel_tuner_cache(w->text);
  ASSERT_TRUE(plain) << plain.error().message();
  EXPECT_EQ(plain->attune_problem, "");
  auto j = nlohmann::json::parse(w->text);
  j["attune_recorded"] = {{"what", "a test"}, {"problem", "rmsnorm:hidden=64,rows=2"}};
  auto recorded = parse_kernel_tuner_cache(j.dump());
  ASSERT_TRUE(recorded) << recorded.error().message();
  EXPECT_EQ(recorded->attune_problem, "rmsnorm:hidden=64,rows=2");
  j["attune_recorded"]["problem"] = 3;
  auto bad = parse_kernel_tuner_cache(j.dump());
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("'attune_recorded'"), std::string::npos)
      << bad.error().message();
}

TEST(KernelTunerCacheWriter, SurvivesKernelTunerAppendingToIt) {
  CacheHeader h;
  h.kernel_name = "tiny_kernel";
  h.problem_size = {100000};
  h.space = small_space();
  auto w = write_kernel_tuner_cache(h, {row("a=1,b=8", Verdict::kOk, 2000.0)});
  ASSERT_TRUE(w);
  EXPECT_EQ(nlohmann::json::parse(w->text)["problem_size"], 100000);  // one size: a number
  // What Kernel Tuner does to continue tuning from a cache: read_cache(open_cache=True) cuts
  // "}\n}" and adds a comma, store_cache appends a line per config, and a crash leaves it so.
  std::string appended = w->text.substr(0, w->text.size() - 3) + "," +
                         "\n\"3,8\": {\"a\": 3, \"b\": 8, \"time\": 0.5},";
  auto back = parse_kernel_tuner_cache(appended);
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_TRUE(back->was_open);
  EXPECT_EQ(back->points.size(), 2u);
  EXPECT_DOUBLE_EQ(*back->optimum_us(), 500.0);
}

TEST(KernelTunerCacheWriter, CountsTheSpaceAndLeavesOutConfigsOutsideIt) {
  CacheHeader h;
  h.kernel_name = "k";
  h.problem_size_text = "callable";
  h.space = small_space();
  auto w = write_kernel_tuner_cache(
      h, {row("a=1,b=8", Verdict::kOk, 10.0), row("a=3,b=16", Verdict::kOk, 1.0),  // a * b > 32
          row("a=1,b=8", Verdict::kOk, 99.0)});                                    // first row wins
  ASSERT_TRUE(w);
  EXPECT_EQ(w->configs, 1u);
  EXPECT_EQ(w->space_configs, 5u);
  EXPECT_EQ(w->outside_space, 1u);
  auto j = nlohmann::json::parse(w->text);
  EXPECT_EQ(j["problem_size"], "callable");
  EXPECT_DOUBLE_EQ(j["cache"]["1,8"]["time"].get<double>(), 0.01);
  EXPECT_FALSE(j["cache"]["1,8"].contains("times"));  // no samples known: none written
  // Without a space the knobs are the values seen; the space cannot be counted.
  h.space.reset();
  auto seen = write_kernel_tuner_cache(
      h, {row("a=2,b=8", Verdict::kOk, 10.0), row("a=1,b=8", Verdict::kUnsupported, std::nullopt)});
  ASSERT_TRUE(seen);
  EXPECT_FALSE(seen->space_configs);
  auto js = nlohmann::json::parse(seen->text);
  EXPECT_EQ(js["tune_params"]["a"], nlohmann::json({1, 2}));
  EXPECT_EQ(js["cache"]["1,8"]["__error__"], "InvalidConfig");
}

TEST(KernelTunerCache, MissingFileIsAnIoError) {
  auto rs = load_kernel_tuner_cache(fixture("no_such_file.json"));
  ASSERT_FALSE(rs);
  EXPECT_EQ(rs.error().kind(), Error::Kind::kIo);
}

struct RealCase {
  const char* file;
  std::size_t configs;
  std::size_t ok;
  double optimum_ms;
};

class RealCache : public ::testing::TestWithParam<RealCase> {};

TEST_P(RealCache, EnumeratesExactlyTheRecordedConfigs) {
  auto rs = load_kernel_tuner_cache(dataset(GetParam().file));
  if (!rs && rs.error().kind() == Error::Kind::kIo) GTEST_SKIP() << "dataset not present";
  ASSERT_TRUE(rs) << rs.error().message();
  EXPECT_EQ(rs->points.size(), GetParam().configs);
  std::size_t ok = 0;
  for (const auto& r : rs->results) ok += r.verdict == Verdict::kOk;
  EXPECT_EQ(ok, GetParam().ok);
  EXPECT_NEAR(*rs->optimum_us(), GetParam().optimum_ms * 1000.0, 1e-6);
  std::size_t n = 0;
  for (auto e = rs->space.enumerate(); auto p = e.next();) {
    ASSERT_NE(rs->find(*p), nullptr) << rs->space.config(*p).text();
    ++n;
  }
  EXPECT_EQ(n, GetParam().configs);
  EXPECT_EQ(rs->find(rs->space.baseline())->verdict, Verdict::kOk);
}

INSTANTIATE_TEST_SUITE_P(
    Datasets, RealCache,
    ::testing::Values(RealCase{"convolution_milo_A4000.json.gz", 4362, 4201, 1.021171996369958},
                      RealCase{"convolution_milo_A6000.json.gz", 4362, 3889, 0.6030377962291835},
                      RealCase{"dedispersion_milo_A4000.json.gz", 11130, 11130, 147.6977825164795},
                      RealCase{"pnpoly_RTX_2080_Ti.json.gz", 4092, 3734, 0.015913600102066994},
                      RealCase{"pnpoly_RTX_3090.json.gz", 4092, 3774, 8.714240169525146}));

TEST(ReplayBackend, ServesRecordedResultsAndCountsDistinctConfigs) {
  auto rs = load_kernel_tuner_cache(fixture("tiny.json"));
  ASSERT_TRUE(rs);
  ReplayBackend b(std::make_shared<const RecordedSpace>(std::move(rs).value()));
  EXPECT_FALSE(b.isolated());
  auto problem = b.resolve(b.problems().front().problem.name());
  ASSERT_TRUE(problem) << problem.error().message();
  auto space = b.space(*problem);
  ASSERT_TRUE(space);
  auto fast = space->parse("a=3,b=16").value();
  auto failed = space->parse("a=1,b=8").value();
  Outcome o = b.execute(*problem, fast, Regime::kRank);
  EXPECT_EQ(o.verdict, Verdict::kOk);
  ASSERT_TRUE(o.measurement);
  EXPECT_DOUBLE_EQ(o.measurement->median_us, 500.0);
  EXPECT_EQ(o.measurement->samples, 3);
  EXPECT_EQ(b.execute(*problem, failed, Regime::kRank).verdict, Verdict::kLaunchFailed);
  EXPECT_EQ(b.execute(*problem, fast, Regime::kDeploy).verdict, Verdict::kOk);
  EXPECT_EQ(b.evaluations(), 2u);  // the repeat is not a new evaluation; the failure is one
  // A config outside the recorded space is refused before "running".
  Config absent({{"a", Value(3)}, {"b", Value(8)}});
  EXPECT_TRUE(b.can_implement(*problem, absent));
  EXPECT_EQ(b.execute(*problem, absent, Regime::kRank).verdict, Verdict::kUnsupported);
  EXPECT_EQ(b.evaluations(), 2u);
  EXPECT_FALSE(b.resolve("other"));
}

TEST(ReplayBackend, BuildsFromAStoredPayload) {
  auto rs = load_kernel_tuner_cache(fixture("tiny.json"));
  ASSERT_TRUE(rs);
  auto b = ReplayBackend::from_payload(rs->compact_json(), "tiny");
  ASSERT_TRUE(b) << b.error().message();
  EXPECT_TRUE((*b)->resolve("tiny"));
  EXPECT_FALSE(ReplayBackend::from_payload("{\"cache\": {}}"));
}

}  // namespace
}  // namespace attune::replay
