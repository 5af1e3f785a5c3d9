// The A/B runner on small shell commands that print their own metric, so that nothing here
// depends on how long anything takes.
#include "ab/run.h"

#include <cmath>

#include <gtest/gtest.h>

#include "support/temp_dir.h"

namespace attune::ab {
namespace {

using testing::read_bytes;
using testing::TempDir;

TEST(AbMetric, TheLastOccurrenceInEitherFormWins) {
  EXPECT_EQ(find_metric("t=100\n", "t"), 100);
  EXPECT_EQ(find_metric("t: 2.5\n", "t"), 2.5);
  EXPECT_EQ(find_metric("step_ms=3\nwarming up\nstep_ms: 4.25 ms\n", "step_ms"), 4.25);
  EXPECT_EQ(find_metric("t=1 t=2 t=3", "t"), 3);
  EXPECT_EQ(find_metric("t=\t-1.5e3", "t"), -1500);
  EXPECT_EQ(find_metric("t=12.5ms", "t"), 12.5);  // a unit after the number is ignored
}

TEST(AbMetric, OnlyAWholeNameFollowedByASeparatorAndANumberCounts) {
  EXPECT_FALSE(find_metric("at=3", "t"));  // part of another name
  EXPECT_FALSE(find_metric("step_t=3", "t"));
  EXPECT_FALSE(find_metric("t = 3", "t"));   // no blank before the separator
  EXPECT_FALSE(find_metric("t=fast", "t"));  // no number
  EXPECT_FALSE(find_metric("time=3", "t"));
  EXPECT_FALSE(find_metric("", "t"));
  EXPECT_EQ(find_metric("t=4 then t=unknown", "t"), 4);  // an occurrence without a number skipped
  EXPECT_EQ(find_metric("gpu.t=7", "t"), 7);             // '.' is not part of a name
  EXPECT_FALSE(find_metric("t=information", "t"));       // not "inf"
  EXPECT_TRUE(std::isnan(find_metric("t=nan\n", "t").value_or(0)));  // refused by the runner
}

TEST(AbOptions, EachBadOptionIsNamed) {
  auto says = [](AbOptions o) {
    auto s = check_options(o);
    EXPECT_FALSE(s.ok());
    EXPECT_EQ(s.ok() ? Error::Kind::kInternal : s.error().kind(), Error::Kind::kInvalidArgument);
    return s.ok() ? std::string() : s.error().message();
  };
  AbOptions good;
  good.ref = "true";
  good.cand = "true";
  EXPECT_TRUE(check_options(good).ok());
  AbOptions o = good;
  o.ref = " ";
  EXPECT_NE(says(o).find("--ref"), std::string::npos);
  o = good;
  o.cand = "";
  EXPECT_NE(says(o).find("--cand"), std::string::npos);
  o = good;
  o.rounds = 0;
  EXPECT_NE(says(o).find("--rounds 0"), std::string::npos);
  o = good;
  o.warmup = -1;
  EXPECT_NE(says(o).find("--warmup -1"), std::string::npos);
  o = good;
  o.timeout_s = 0;
  EXPECT_NE(says(o).find("--timeout 0"), std::string::npos);
  o = good;
  o.metric = "t=";
  EXPECT_NE(says(o).find("--metric 't='"), std::string::npos);
}

AbOptions metric_options(std::string ref, std::string cand, int rounds) {
  AbOptions o;
  o.ref = std::move(ref);
  o.cand = std::move(cand);
  o.rounds = rounds;
  o.metric = "t";
  o.timeout_s = 30;
  return o;
}

TEST(AbRun, RefAndCandAlternateWithEveryCandBetweenTwoRefsAfterTheWarmUp) {
  TempDir dir;
  const std::string order = dir.file("order");
  AbOptions o = metric_options("echo r >> '" + order + "'; echo t=100",
                               "echo c >> '" + order + "'; echo t: 80", 3);
  o.warmup = 1;
  std::vector<std::string> logged;
  o.log = [&](const std::string& line) { logged.push_back(line); };
  auto r = run_ab(o);
  ASSERT_TRUE(r.ok()) << r.error().message();
  ASSERT_FALSE(r->failure) << format_failure(*r->failure);
  EXPECT_EQ(read_bytes(order),
            "r\nc\n"
            "r\nc\nr\nc\nr\nc\nr\n");
  ASSERT_EQ(r->runs.size(), 9u);
  EXPECT_TRUE(r->runs[0].warmup);
  EXPECT_TRUE(r->runs[1].warmup);
  EXPECT_FALSE(r->runs[2].warmup);
  EXPECT_EQ(r->runs.back().name(), "ref run 4/4");
  EXPECT_EQ(r->runs[1].name(), "warm-up cand run 1/1");
  EXPECT_EQ(logged.size(), 9u);
  ASSERT_TRUE(r->comparison);
  const Comparison& c = *r->comparison;
  EXPECT_EQ(c.ref.n, 4);  // the warm-up runs are not counted
  EXPECT_EQ(c.cand.n, 3);
  EXPECT_DOUBLE_EQ(c.ratio, 1.25);
  EXPECT_DOUBLE_EQ(c.drift, 0);
  EXPECT_EQ(c.verdict, Verdict::kGain);
  auto j = report_json(*r);
  EXPECT_EQ(j["verdict"], "gain");
  EXPECT_EQ(j["ref"]["values"].size(), 4u);
  EXPECT_NE(format_report(*r).find("verdict: gain"), std::string::npos) << format_report(*r);
}

// A ref whose own number climbs by 10 each run: 100 (warm-up), then 110, 120, 130, 140. Its
// halves' medians are 115 and 135: a drift of +17.4%, its median 125.
std::string climbing_ref(const TempDir& dir) {
  const std::string n = "'" + dir.file("n") + "'";
  return "n=$(cat " + n + " 2>/dev/null || echo 0); echo $((n + 1)) > " + n +
         "; echo t=$((100 + 10 * n))";
}

TEST(AbRun, AGainSmallerThanTheRefDriftIsNoGain) {
  TempDir dir;
  auto r = run_ab(metric_options(climbing_ref(dir), "echo t=115", 3));  // 8.7% better
  ASSERT_TRUE(r.ok()) << r.error().message();
  ASSERT_TRUE(r->comparison);
  EXPECT_EQ(r->comparison->ref.values, (std::vector<double>{110, 120, 130, 140}));
  EXPECT_NEAR(r->comparison->drift, 135.0 / 115 - 1, 1e-12);
  EXPECT_EQ(r->comparison->verdict, Verdict::kWithinDrift);
  EXPECT_NE(format_report(*r).find("no gain (within drift)"), std::string::npos);

  TempDir again;
  auto g = run_ab(metric_options(climbing_ref(again), "echo t=100", 3));  // 25% better
  ASSERT_TRUE(g.ok()) << g.error().message();
  EXPECT_EQ(g->comparison->verdict, Verdict::kGain);
}

TEST(AbRun, WallTimeIsTheDefaultMeasure) {
  AbOptions o;
  o.ref = "true";
  o.cand = "true";
  o.rounds = 2;
  o.warmup = 0;
  auto r = run_ab(o);
  ASSERT_TRUE(r.ok()) << r.error().message();
  ASSERT_TRUE(r->comparison);
  EXPECT_EQ(r->comparison->ref.n, 3);
  EXPECT_GT(r->comparison->ref.min, 0);
  for (const AbRun& run : r->runs) EXPECT_EQ(run.value, run.wall_s);
  EXPECT_EQ(report_json(*r)["metric"], "wall_s");
}

struct Failing {
  std::string cand;
  int warmup;
  std::string run;   // the run named
  std::string says;  // in its detail
  double timeout_s = 30;
};

class AbRunFailure : public ::testing::TestWithParam<Failing> {};

TEST_P(AbRunFailure, StopsAtTheRunAndSaysWhy) {
  AbOptions o = metric_options("echo t=100", GetParam().cand, 2);
  o.warmup = GetParam().warmup;
  o.timeout_s = GetParam().timeout_s;
  auto r = run_ab(o);
  ASSERT_TRUE(r.ok()) << r.error().message();
  ASSERT_TRUE(r->failure);
  EXPECT_FALSE(r->comparison);
  const std::string line = format_failure(*r->failure);
  EXPECT_EQ(r->failure->run.name(), GetParam().run);
  EXPECT_NE(line.find(GetParam().says), std::string::npos) << line;
  EXPECT_EQ(line.find('\n'), std::string::npos) << line;
}

INSTANTIATE_TEST_SUITE_P(
    Ab, AbRunFailure,
    ::testing::Values(Failing{"echo out of memory >&2; exit 3", 1, "warm-up cand run 1/1",
                              "exited with code 3; stderr: 'out of memory'"},
                      Failing{"echo line one >&2; echo line two >&2; exit 3", 0, "cand run 1/2",
                              "stderr: 'line one line two'"},
                      Failing{"echo time=5", 0, "cand run 1/2",
                              "printed no t=<number> or t: <number> on stdout; stdout: 'time=5'"},
                      Failing{"echo t=nan", 0, "cand run 1/2", "not a finite number"},
                      Failing{"kill -9 $$", 0, "cand run 1/2", "killed by signal 9 (SIGKILL)"},
                      Failing{"sleep 30", 0, "cand run 1/2", "timed out after 2 s", 2}),
    [](const ::testing::TestParamInfo<Failing>& info) {
      return "case" + std::to_string(info.index);
    });

TEST(AbRun, AnInterruptedAbStopsBeforeTheNextRun) {
  std::atomic<bool> interrupted{true};
  AbOptions o = metric_options("echo t=1", "echo t=1", 2);
  o.interrupted = &interrupted;
  auto r = run_ab(o);
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(r->failure);
  EXPECT_EQ(r->failure->run.name(), "warm-up ref run 1/1");
  EXPECT_NE(r->failure->detail.find("interrupted"), std::string::npos);
}

}  // namespace
}  // namespace attune::ab
