// attune import kernel-tuner, tune --backend replay, export --format kernel-tuner and prior
// fit|show, as a user runs them.
#include <filesystem>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "backends/replay/kernel_tuner_cache.h"
#include "support/run.h"

namespace attune {
namespace {

using testing::run_attune;
using testing::TempDir;

std::string fixture(const std::string& name) {
  return std::string(ATTUNE_SOURCE_DIR) + "/tests/backends/fixtures/" + name;
}

TEST(ReplayCli, ImportThenTuneThenExportRoundTrips) {
  TempDir dir;
  auto imp =
      run_attune("import kernel-tuner '" + fixture("tiny_all_failures.json.gz") + "' --name tiny",
                 dir.path().string());
  ASSERT_EQ(imp.code, 0) << imp.err;
  EXPECT_EQ(imp.out, "tiny\n");

  auto tune = run_attune("tune --backend replay --problem tiny --strategy mcts --patience 0 --json",
                         dir.path().string());
  ASSERT_EQ(tune.code, 0) << tune.err;
  auto j = nlohmann::json::parse(tune.out);
  const auto& p = j["problems"][0];
  EXPECT_EQ(j["device"]["name"], "Test GPU 1");
  EXPECT_EQ(p["evaluated"], 6);  // every recorded config, each once
  EXPECT_EQ(p["best"]["config"], "a=3,b=16");
  EXPECT_DOUBLE_EQ(p["best"]["median_us"].get<double>(), 500.0);
  EXPECT_EQ(p["verdicts"]["launch_failed"], 1);
  EXPECT_EQ(p["verdicts"]["build_failed"], 1);
  EXPECT_EQ(p["verdicts"]["unsupported"], 1);
  EXPECT_EQ(p["verdicts"]["ok"], 3);

  auto exp =
      run_attune("export --format kernel-tuner --problem tiny -o out.json", dir.path().string());
  ASSERT_EQ(exp.code, 0) << exp.err;
  auto back = replay::load_kernel_tuner_cache((dir.path() / "out.json").string());
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_EQ(back->points.size(), 6u);
  EXPECT_DOUBLE_EQ(*back->optimum_us(), 500.0);
  EXPECT_EQ(back->device_name, "Test GPU 1");
}

TEST(ReplayCli, BadCacheIsOneLineExitTwoAndNothingImported) {
  TempDir dir;
  ASSERT_EQ(run_attune("import kernel-tuner '" + fixture("tiny.json") + "' --name good",
                       dir.path().string())
                .code,
            0);
  for (const char* bad :
       {"truncated.json.gz", "not_json.json", "unknown_field.json", "config_not_an_option.json"}) {
    auto r =
        run_attune("import kernel-tuner '" + fixture(bad) + "' --name bad", dir.path().string());
    EXPECT_EQ(r.code, 2) << bad;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(r.out, "");
  }
  // Only the good one is there: tuning 'bad' is refused, 'good' still works.
  EXPECT_EQ(run_attune("tune --backend replay --problem bad", dir.path().string()).code, 2);
  EXPECT_EQ(
      run_attune("tune --backend replay --problem good --patience 0", dir.path().string()).code, 0);
}

TEST(ReplayCli, BadCacheCreatesNoDatabase) {
  TempDir dir;
  auto r = run_attune("import kernel-tuner '" + fixture("missing_field.json") + "'",
                      dir.path().string());
  EXPECT_EQ(r.code, 2);
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "attune.db"));
}

TEST(ReplayCli, PriorShowIsColdThenFitReportsCalibration) {
  TempDir dir;
  ASSERT_EQ(run_attune("import kernel-tuner '" + fixture("tiny.json") + "' --name tiny",
                       dir.path().string())
                .code,
            0);
  auto show = run_attune("prior show --json", dir.path().string());
  ASSERT_EQ(show.code, 0) << show.err;
  EXPECT_EQ(nlohmann::json::parse(show.out)["state"], "cold");
  // Five configs are far too few rows for a model: fit says so and fails.
  ASSERT_EQ(
      run_attune("tune --backend replay --problem tiny --patience 0", dir.path().string()).code, 0);
  auto fit = run_attune("prior fit", dir.path().string());
  EXPECT_EQ(fit.code, 1);
  EXPECT_NE(fit.err.find("stays cold"), std::string::npos) << fit.err;
}

TEST(ReplayCli, PriorFitOnARealSpaceStoresACheckpoint) {
  TempDir dir;
  std::string file = std::string(ATTUNE_SOURCE_DIR) +
                     "/../shared/datasets/kernel-tuner-caches/pnpoly_RTX_3090.json.gz";
  if (!std::filesystem::exists(file)) GTEST_SKIP() << "dataset not present";
  ASSERT_EQ(run_attune("import kernel-tuner '" + file + "'", dir.path().string()).code, 0);
  // Every result within 15% of the best so far is re-measured in the deploy regime:
  // enough deploy rows for a model.
  auto tune = run_attune(
      "tune --backend replay --problem pnpoly_RTX_3090 --strategy random "
      "--patience 0 --max-candidates 1500",
      dir.path().string());
  ASSERT_EQ(tune.code, 0) << tune.err;
  auto fit = run_attune("prior fit --json", dir.path().string());
  ASSERT_EQ(fit.code, 0) << fit.err;
  auto f = nlohmann::json::parse(fit.out);
  EXPECT_GT(f["rows"].get<int>(), 24);
  auto show = run_attune("prior show --json", dir.path().string());
  ASSERT_EQ(show.code, 0) << show.err;
  auto s = nlohmann::json::parse(show.out);
  EXPECT_EQ(s["rows"], f["rows"]);
  EXPECT_GT(s["model_bytes"].get<int>(), 0);
}

}  // namespace
}  // namespace attune
