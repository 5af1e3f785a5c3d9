// The reports with user metrics: the renderer shows what the CLI's per-problem metrics give for
// the baseline and the best, and nothing new for a problem without any.
#include "report/report.h"

#include <gtest/gtest.h>

namespace attune {
namespace {

TuneReport two_problems() {
  TuneReport r;
  r.strategy = "grid";
  for (const char* name : {"matmul", "plain"}) {
    ProblemReport p;
    p.problem = Problem("user", {{"kernel", name}, {"n", "100"}}, name);
    p.backend = "cuda";
    p.baseline = CandidateResult{"bs=16", Verdict::kOk, 20.0, 20.0, "", false};
    p.best = CandidateResult{"bs=32", Verdict::kOk, 10.0, 10.0, "", false};
    p.speedup = 2;
    r.problems.push_back(p);
  }
  return r;
}

// gflops = 2e6 / time_us (2 n^3 flops at n = 100); per "matmul" only.
ReportOptions matmul_metrics() {
  ReportOptions o;
  o.metrics_of = [](const Problem& p) -> std::optional<ProblemMetrics> {
    if (p.name() != "matmul") return std::nullopt;
    ProblemMetrics m;
    m.at = [](double us) {
      return std::vector<std::pair<std::string, double>>{{"gflops", 2e6 / (us * 1e3)},
                                                         {"us_twice", 2 * us}};
    };
    m.objective = "gflops";
    m.higher_is_better = true;
    return m;
  };
  return o;
}

TEST(Report, JsonCarriesMetricsAndTheObjectiveForTheBaselineAndTheBest) {
  auto j = report_json(two_problems(), matmul_metrics());
  EXPECT_EQ(j["report_version"], 2);  // fields added, none changed
  const auto& p = j["problems"][0];
  EXPECT_DOUBLE_EQ(p["baseline"]["metrics"]["gflops"].get<double>(), 100.0);
  EXPECT_DOUBLE_EQ(p["best"]["metrics"]["gflops"].get<double>(), 200.0);
  EXPECT_DOUBLE_EQ(p["best"]["metrics"]["us_twice"].get<double>(), 20.0);
  EXPECT_EQ(p["objective"]["metric"], "gflops");
  EXPECT_EQ(p["objective"]["higher_is_better"], true);
  EXPECT_DOUBLE_EQ(p["objective"]["baseline"].get<double>(), 100.0);
  EXPECT_DOUBLE_EQ(p["objective"]["best"].get<double>(), 200.0);
  // The other problem has none: its entry is as before.
  const auto& q = j["problems"][1];
  EXPECT_FALSE(q.contains("objective"));
  EXPECT_FALSE(q["best"].contains("metrics"));
  // Without options, the report is the Tuner's alone.
  auto plain = report_json(two_problems());
  EXPECT_FALSE(plain["problems"][0].contains("objective"));
  EXPECT_FALSE(plain["problems"][0]["baseline"].contains("metrics"));
}

TEST(Report, TextShowsMetricsBesideTheTimesAndTheObjectiveLine) {
  const std::string t = report_text(two_problems(), matmul_metrics());
  EXPECT_NE(t.find("baseline      20.00 us  bs=16  (100 gflops, 40 us_twice)"), std::string::npos)
      << t;
  EXPECT_NE(t.find("best          10.00 us  bs=32  (200 gflops, 20 us_twice)"), std::string::npos)
      << t;
  EXPECT_NE(t.find("objective gflops (higher is better): 100 -> 200"), std::string::npos) << t;
  // One objective line: the plain problem has none.
  EXPECT_EQ(t.find("objective", t.find("objective") + 1), std::string::npos) << t;
  EXPECT_EQ(report_text(two_problems()).find("gflops"), std::string::npos);
}

TEST(Report, ATimeObjectiveReportsTheTimeAndNoObjectiveLine) {
  ReportOptions o;
  o.metrics_of = [](const Problem&) -> std::optional<ProblemMetrics> {
    ProblemMetrics m;
    m.at = [](double us) { return std::vector<std::pair<std::string, double>>{{"gbs", 1 / us}}; };
    return m;
  };
  auto j = report_json(two_problems(), o);
  EXPECT_EQ(j["problems"][0]["objective"]["metric"], "time");
  EXPECT_EQ(j["problems"][0]["objective"]["higher_is_better"], false);
  EXPECT_DOUBLE_EQ(j["problems"][0]["objective"]["best"].get<double>(), 10.0);
  EXPECT_EQ(report_text(two_problems(), o).find("objective"), std::string::npos);
}

// Issue 15: the text report did not say at which evaluation the best was found.
TEST(Report, TheTextSaysAtWhichEvaluationTheBestWasFound) {
  TuneReport r = two_problems();
  r.problems[0].evaluated = 60;
  r.problems[0].best_at = 17;
  const std::string t = report_text(r);
  EXPECT_NE(t.find("  speedup   2.000x\n  best found at evaluation 17 of 60\n"), std::string::npos)
      << t;
  EXPECT_EQ(t.find("best found", t.find("best found") + 1), std::string::npos) << t;  // one
}

// Issue 15: a second run with another seed went on from the first run's tree and results and
// said nothing; the report now says what it continued from.
TEST(Report, AContinuedSearchSaysWhatItWentOnFromInBothReports) {
  TuneReport r = two_problems();
  r.strategy = "mcts";
  ProblemReport& p = r.problems[0];
  p.continued_state = true;
  p.stored_first = 54;
  p.stored_runs = {1, 3};
  auto j = report_json(r);
  EXPECT_EQ(j["report_version"], 2);  // fields added, none changed
  EXPECT_EQ(j["problems"][0]["continued"], true);
  EXPECT_EQ(j["problems"][0]["continued_from"],
            (nlohmann::json{{"state", true}, {"stored_results", 54}, {"runs", {1, 3}}}));
  EXPECT_EQ(j["problems"][1]["continued"], false);
  EXPECT_TRUE(j["problems"][1]["continued_from"].is_null());
  const std::string t = report_text(r);
  EXPECT_NE(t.find("  continued: mcts's stored search state and 54 stored results of runs 1 and "
                   "3, evaluated first (--fresh-search starts a new search)\n"),
            std::string::npos)
      << t;
  EXPECT_EQ(t.find("continued", t.find("continued") + 1), std::string::npos) << t;  // one line

  // A strategy without state continues from the stored results alone.
  p.continued_state = false;
  p.stored_first = 1;
  p.stored_runs = {2};
  EXPECT_NE(report_text(r).find("  continued: 1 stored result of run 2, evaluated first"),
            std::string::npos)
      << report_text(r);
  EXPECT_EQ(report_json(r)["problems"][0]["continued_from"]["state"], false);
}

}  // namespace
}  // namespace attune
