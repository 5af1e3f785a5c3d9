// attune import kernel-tuner, problems and tune --backend replay, export --format kernel-tuner
// and prior fit|show, as a user runs them. (tests/interop checks the same files against the real
// Kernel Tuner.)
#include <filesystem>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "backends/replay/kernel_tuner_cache.h"
#include "core/config.h"
#include "kernels/user/spec.h"
#include "store/sqlite/sqlite_store.h"
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
  for (const char* bad : {"truncated.json.gz", "not_json.json", "left_open_inside_a_config.json",
                          "objective_not_time.json", "config_not_an_option.json"}) {
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

TEST(ReplayCli, ProblemsListsTheImportedSpaces) {
  TempDir dir;
  const std::string cwd = dir.path().string();
  EXPECT_EQ(run_attune("problems --backend replay", cwd).code, 2);  // no database
  ASSERT_EQ(run_attune("tune --backend sim --problem rmsnorm --max-candidates 1", cwd).code, 0);
  auto none = run_attune("problems --backend replay", cwd);
  EXPECT_EQ(none.code, 0) << none.err;
  EXPECT_EQ(none.out, "");
  EXPECT_NE(none.err.find("no recorded spaces"), std::string::npos) << none.err;
  ASSERT_EQ(run_attune("import kernel-tuner '" + fixture("tiny.json") + "' --name tiny", cwd).code,
            0);
  auto text = run_attune("problems --backend replay", cwd);
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("tiny"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("5 configs  tiny_kernel on Test GPU 1"), std::string::npos) << text.out;
  auto j = run_attune("problems --backend replay --json", cwd);
  ASSERT_EQ(j.code, 0) << j.err;
  auto list = nlohmann::json::parse(j.out);
  ASSERT_EQ(list.size(), 1u);  // the sim's rmsnorm is not a recorded space
  EXPECT_EQ(list[0]["name"], "tiny");
  EXPECT_EQ(list[0]["configs"], 5);
  EXPECT_EQ(list[0]["kernel"], "tiny_kernel");
  EXPECT_EQ(list[0]["device"], "Test GPU 1");
  // The name listed is the name tune takes.
  EXPECT_EQ(run_attune("tune --backend replay --problem tiny --patience 0", cwd).code, 0);
}

TEST(ReplayCli, ImportsACacheLeftOpenByACrashAndSaysSo) {
  TempDir dir;
  auto r = run_attune("import kernel-tuner '" + fixture("kt15_vector_add_crashed.json") + "'",
                      dir.path().string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "kt15_vector_add_crashed\n");
  EXPECT_NE(r.err.find("left open"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("imported 14 recorded configs"), std::string::npos) << r.err;
  auto j = run_attune("import kernel-tuner '" + fixture("kt15_vector_add.json") + "' --json",
                      dir.path().string());
  ASSERT_EQ(j.code, 0) << j.err;
  EXPECT_EQ(nlohmann::json::parse(j.out)["left_open"], false);
}

TEST(ReplayCli, KernelTunerExportOfASimProblemIsTheWholeSpaceOrSaysWhatIsMissing) {
  TempDir dir;
  const std::string cwd = dir.path().string();
  ASSERT_EQ(run_attune("tune --backend sim --problem rmsnorm --max-candidates 5", cwd).code, 0);
  auto part = run_attune("export --format kernel-tuner --problem rmsnorm -o part.json", cwd);
  ASSERT_EQ(part.code, 0) << part.err;
  EXPECT_NE(part.err.find("of 216 configs of the space measured; Kernel Tuner's simulation mode "
                          "needs every one: `attune tune --backend sim --problem "),
            std::string::npos)
      << part.err;
  auto j = nlohmann::ordered_json::parse(testing::read_bytes(dir.file("part.json")));
  EXPECT_EQ(j["problem_size"], nlohmann::json({4096, 4096}));  // rows x hidden
  EXPECT_EQ(j["tune_params"]["threads"], nlohmann::json({32, 64, 128, 256, 512, 1024}));
  EXPECT_EQ(j.items().begin().key(), "device_name");
  EXPECT_EQ((--j.end()).key(), "cache");
  EXPECT_LT(j["cache"].size(), 216u);

  ASSERT_EQ(
      run_attune("tune --backend sim --problem rmsnorm --strategy grid --patience 0", cwd).code, 0);
  auto full = run_attune("export --format kernel-tuner --problem rmsnorm -o full.json", cwd);
  ASSERT_EQ(full.code, 0) << full.err;
  EXPECT_EQ(full.err.find("warn"), std::string::npos) << full.err;
  EXPECT_NE(full.err.find("wrote 216 configs"), std::string::npos) << full.err;
}

// A user kernel's measurements, written as the CUDA backend writes them (no GPU here): the
// spec's vector_add, two of its 19 configs, one failed.
void user_kernel_rows(const std::string& db, user::UserKernelSpec* spec) {
  auto loaded =
      user::load_spec(std::string(ATTUNE_SOURCE_DIR) + "/examples/user-kernel/vector_add.yaml");
  ASSERT_TRUE(loaded) << loaded.error().message();
  *spec = *loaded;
  auto store = SqliteStore::open(db);
  ASSERT_TRUE(store.ok());
  DeviceFingerprint d{"cuda", "NVIDIA H200", "sm_90", 132, 150ull << 30};
  Problem p = user::make_problem(*spec);
  p.set_name("vector_add");
  ASSERT_TRUE((*store)->put_device(d).ok());
  ASSERT_TRUE((*store)->put_problem(p).ok());
  for (auto [config, us] : {std::pair<std::string, double>{"block_size=256,items_per_thread=1", 40},
                            {"block_size=1024,items_per_thread=4", 0}}) {
    MeasurementRow r;
    r.device_key = d.key();
    r.problem_key = p.structural_key();
    r.backend = "cuda";
    r.config = config;
    r.config_hash = Config::parse(config)->hash_hex();
    if (us > 0) {
      Measurement m;
      m.median_us = us;
      r.outcome.measurement = m;
    } else {
      r.outcome.verdict = Verdict::kLaunchFailed;
    }
    ASSERT_TRUE((*store)->record(r).ok());
  }
}

TEST(ReplayCli, KernelTunerExportOfAUserKernelTakesItsSpaceFromTheSpec) {
  TempDir dir;
  const std::string cwd = dir.path().string();
  user::UserKernelSpec spec;
  user_kernel_rows(dir.file("attune.db"), &spec);
  const std::string yaml = std::string(ATTUNE_SOURCE_DIR) + "/examples/user-kernel/vector_add.yaml";
  // Without the spec the space is not known: the values measured only, and a warning says why.
  auto bare = run_attune("export --format kernel-tuner --problem vector_add -o bare.json", cwd);
  ASSERT_EQ(bare.code, 0) << bare.err;
  EXPECT_NE(bare.err.find("give --spec FILE"), std::string::npos) << bare.err;
  auto b = nlohmann::json::parse(testing::read_bytes(dir.file("bare.json")));
  EXPECT_EQ(b["tune_params"]["block_size"], nlohmann::json({256, 1024}));
  EXPECT_EQ(b["problem_size"], spec.problem.front().second);  // its sizes, not its hashes

  auto r = run_attune(
      "export --format kernel-tuner --problem vector_add --spec '" + yaml + "' -o out.json", cwd);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("2 of 19 configs of the space measured"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--spec " + yaml), std::string::npos) << r.err;
  auto j = nlohmann::json::parse(testing::read_bytes(dir.file("out.json")));
  EXPECT_EQ(j["kernel_name"], "vector_add");
  EXPECT_EQ(j["device_name"], "NVIDIA H200");
  EXPECT_EQ(j["problem_size"], spec.problem.front().second);  // one size: a number
  EXPECT_EQ(j["tune_params"]["block_size"], nlohmann::json({64, 128, 256, 512, 1024}));
  EXPECT_EQ(j["tune_params"]["items_per_thread"], nlohmann::json({1, 2, 4, 8}));
  EXPECT_DOUBLE_EQ(j["cache"]["256,1"]["time"].get<double>(), 0.04);
  EXPECT_EQ(j["cache"]["1024,4"]["__error__"], "RuntimeFailedConfig");
  // A spec of another kernel, or a spec for a problem that is no user kernel, is refused.
  ASSERT_EQ(run_attune("tune --backend sim --problem rmsnorm --max-candidates 1", cwd).code, 0);
  auto other = run_attune(
      "export --format kernel-tuner --problem rmsnorm --spec '" + yaml + "' -o x.json", cwd);
  EXPECT_EQ(other.code, 2);
  EXPECT_NE(other.err.find("describes a user kernel"), std::string::npos) << other.err;
  auto lone = run_attune("export --format kernel-tuner --problem vector_add --kernel a.cu", cwd);
  EXPECT_EQ(lone.code, 2);
  EXPECT_NE(lone.err.find("--kernel goes with --spec"), std::string::npos) << lone.err;
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
