// `attune ab` as a user runs it, on shell commands that print their own metric (so no test here
// depends on timing).
#include <algorithm>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/run.h"

namespace attune {
namespace {

using testing::run_attune;
using testing::TempDir;

using testing::lines;

TEST(AbCli, JsonReportsBothDistributionsTheRatioTheDriftAndTheVerdict) {
  TempDir dir;
  auto r = run_attune(
      "ab --ref 'echo t=100' --cand 'echo step; echo t: 80' --metric t --rounds 3 --json",
      dir.path());
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["metric"], "t");
  EXPECT_EQ(j["better"], "lower");
  EXPECT_EQ(j["ref"]["n"], 4);
  EXPECT_EQ(j["cand"]["n"], 3);
  EXPECT_EQ(j["ref"]["median"], 100.0);
  EXPECT_EQ(j["cand"]["median"], 80.0);
  EXPECT_EQ(j["cand"]["iqr"], 0.0);
  EXPECT_EQ(j["cand"]["command"], "echo step; echo t: 80");
  EXPECT_DOUBLE_EQ(j["ratio"].get<double>(), 1.25);
  EXPECT_DOUBLE_EQ(j["speedup"].get<double>(), 1.25);
  EXPECT_EQ(j["drift"], 0.0);
  EXPECT_EQ(j["verdict"], "gain");
  EXPECT_EQ(j["runs"].size(), 9u);  // 1 warm-up round (2 runs), then 4 ref and 3 cand runs
  EXPECT_EQ(j["runs"][0]["warmup"], true);
  EXPECT_EQ(j["runs"][8]["arm"], "ref");
}

TEST(AbCli, AGainSmallerThanTheRefDriftIsReportedAsNoGain) {
  TempDir dir;
  // ref prints 100 (warm-up), 110, 120, 130, 140: its halves drift +17.4%; cand is 8.7% better.
  const std::string climbing =
      "'n=$(cat n 2>/dev/null || echo 0); echo $((n + 1)) > n; echo t=$((100 + 10 * n))'";
  auto r =
      run_attune("ab --ref " + climbing + " --cand 'echo t=115' --metric t --rounds 3", dir.path());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("verdict: no gain (within drift)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ref-to-ref drift: +17.39%"), std::string::npos) << r.out;
}

TEST(AbCli, HigherIsBetterForThroughputs) {
  TempDir dir;
  auto r = run_attune(
      "ab --ref 'echo tok_s=100' --cand 'echo tok_s=125' --metric tok_s --higher-is-better "
      "--rounds 2 --json",
      dir.path());
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["better"], "higher");
  EXPECT_DOUBLE_EQ(j["ratio"].get<double>(), 0.8);
  EXPECT_DOUBLE_EQ(j["speedup"].get<double>(), 1.25);
  EXPECT_EQ(j["verdict"], "gain");
  auto lower = run_attune(
      "ab --ref 'echo tok_s=100' --cand 'echo tok_s=125' --metric tok_s --rounds 2 --json",
      dir.path());
  ASSERT_EQ(lower.code, 0) << lower.err;
  EXPECT_EQ(nlohmann::json::parse(lower.out)["verdict"], "loss");
}

TEST(AbCli, WallTimeByDefaultWithATextReport) {
  TempDir dir;
  auto r = run_attune("ab --ref true --cand true --rounds 2 --warmup 0", dir.path());
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* s : {"wall time (s), lower is better", "ref ", "cand ",
                        "ratio ref/cand of medians", "ref-to-ref drift", "verdict: "})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << " not in:\n" << r.out;
}

struct Case {
  std::string args;
  std::string says;
};

class AbCliRunFails : public ::testing::TestWithParam<Case> {};

TEST_P(AbCliRunFails, OneLineNamingTheRunExitOneAndNoReport) {
  TempDir dir;
  auto r = run_attune(GetParam().args + " --json", dir.path());
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find(GetParam().says), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
}

INSTANTIATE_TEST_SUITE_P(
    AbCli, AbCliRunFails,
    ::testing::Values(
        Case{"ab --ref 'echo t=1' --cand 'echo no such file >&2; exit 3' --metric t",
             "attune: ab: warm-up cand run 1/1 exited with code 3; stderr: 'no such file'"},
        Case{"ab --ref 'echo t=1' --cand 'echo t=1; exit 1' --metric t --warmup 0",
             "ab: cand run 1/10 exited with code 1"},
        Case{"ab --ref 'echo t=1' --cand 'echo took 3 ms' --metric t --warmup 0",
             "ab: cand run 1/10 printed no t=<number> or t: <number> on stdout; stdout: 'took 3 "
             "ms'"},
        Case{"ab --ref 'kill -9 $$' --cand 'echo t=1' --metric t",
             "ab: warm-up ref run 1/1 was killed by signal 9"},
        Case{"ab --ref 'echo t=1' --cand 'sleep 30' --metric t --timeout 2",
             "cand run 1/1 timed out after 2 s"}),
    [](const ::testing::TestParamInfo<Case>& info) { return "case" + std::to_string(info.index); });

class AbCliBadFlags : public ::testing::TestWithParam<Case> {};

TEST_P(AbCliBadFlags, OneLineExitTwoAndNothingRun) {
  TempDir dir;
  auto r = run_attune(GetParam().args, dir.path());
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find(GetParam().says), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir.file("ran")));
}

INSTANTIATE_TEST_SUITE_P(
    AbCli, AbCliBadFlags,
    ::testing::Values(
        Case{"ab --ref 'touch ran'", "--cand is required"},
        Case{"ab --ref 'touch ran' --cand 'touch ran' --rounds 0", "--rounds 0 must be at least 1"},
        Case{"ab --ref 'touch ran' --cand 'touch ran' --rounds x", "--rounds = x"},
        Case{"ab --ref 'touch ran' --cand 'touch ran' --warmup -1", "--warmup -1"},
        Case{"ab --ref 'touch ran' --cand 'touch ran' --timeout 0", "--timeout 0"},
        Case{"ab --ref 'touch ran' --cand 'touch ran' --metric 'a=b'", "--metric 'a=b'"},
        Case{"ab --ref 'touch ran' --cand ''", "--cand is empty"},
        Case{"ab --ref 'touch ran' --cand 'touch ran' --frobnicate", "not expected: --frobnicate"}),
    [](const ::testing::TestParamInfo<Case>& info) { return "case" + std::to_string(info.index); });

}  // namespace
}  // namespace attune
