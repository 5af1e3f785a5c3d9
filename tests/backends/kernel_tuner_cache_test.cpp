#include "backends/replay/kernel_tuner_cache.h"

#include <set>

#include <gtest/gtest.h>

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
                      BadCase{"unknown_field.json", "unknown field 'extra_field'"},
                      BadCase{"missing_field.json", "missing field 'tune_params'"},
                      BadCase{"config_not_an_option.json", "'4' is not an option of knob 'a'"},
                      BadCase{"config_wrong_arity.json", "has 3 values"},
                      BadCase{"config_field_mismatch.json", "its field 'a' is 3"},
                      BadCase{"unknown_failure.json", "unknown failure 'WeirdFailure'"},
                      BadCase{"config_without_time.json", "has no 'time'"}));

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
