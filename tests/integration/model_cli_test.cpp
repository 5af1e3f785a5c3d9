// attune tune --model on the sim from the command line: bad input refused in one line, a layer
// tuned in two levels with its report, an identical rerun that measures nothing, --layer all
// costing what one layer does, and --gpus/--devices giving the results of one device while one
// device is slower and another's worker crashes.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/op.h"
#include "support/run.h"
#include "support/temp_dir.h"

namespace attune {
namespace {

using testing::run_attune;

std::string model(const std::string& file) {
  return std::string(ATTUNE_SOURCE_DIR) + "/models/" + file;
}

TEST(ModelCli, BadInputIsOneLineAndExitTwo) {
  testing::TempDir dir;
  const std::string m = " --model " + model("qwen3-embedding-0.6b.json");
  const std::vector<testing::BadInput> bad = {
      {"tune --backend sim --model nope.json --tokens 8", "model config nope.json does not exist"},
      {"tune --backend sim" + m + " --layer 28 --tokens 8", "--layer 28 is not a layer of"},
      {"tune --backend sim" + m + " --layer x --tokens 8", "--layer 'x' is not a layer"},
      {"tune --backend sim" + m, "a prefill needs --tokens T"},
      {"tune --backend sim" + m + " --decode", "--decode needs --kv L"},
      {"tune --backend sim" + m + " --decode --kv 64 --tokens 8", "--tokens is the prompt"},
      {"tune --backend sim" + m + " --tokens 8 --gpus 5", "--gpus 5: the sim backend has 1 device"},
      {"tune --backend sim" + m + " --tokens 8 --devices 0,x", "--devices 'x' is not an index"},
      {"tune --backend sim" + m + " --tokens 8 --gpus 1 --device 0", "give one of --gpus"},
      {"tune --backend sim" + m + " --tokens 8 --problem rmsnorm",
       "--model tunes a model's layers"},
      {"tune --backend sim --problem rmsnorm --layer 3", "go with --model"},
  };
  for (const auto& b : bad) testing::expect_refused(b, dir, "attune.db");
  EXPECT_FALSE(std::filesystem::exists(dir.file("attune.db")));
}

bool new_families() {
  return find_op("rope") && find_op("silu_mul");
}

nlohmann::json tune_json(const std::string& args, const std::string& cwd,
                         const std::string& env = "") {
  auto r = run_attune("tune --backend sim --patience 8 --json " + args, cwd, env);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  if (r.code != 0) return {};
  return nlohmann::json::parse(r.out);
}

// kernel key -> (best config, median) and grouping -> total: what must not depend on devices.
std::map<std::string, std::string> results(const nlohmann::json& j) {
  std::map<std::string, std::string> out;
  for (const auto& k : j["kernels"]) out[k["key"]] = k["best"].dump();
  for (const auto& g : j["groupings"]) out[g["grouping"].dump()] = g["total_us"].dump();
  out["winner"] = j["winner"].dump();
  return out;
}

TEST(ModelCli, ALayerIsTunedInTwoLevelsAndARerunMeasuresNothing) {
  if (!new_families()) GTEST_SKIP() << "needs the rope and silu_mul families registered";
  testing::TempDir dir;
  const std::string args =
      "--model " + model("qwen3-embedding-0.6b.json") + " --layer 0 --batch 1 --tokens 128";
  const nlohmann::json a = tune_json(args, dir.path());
  ASSERT_FALSE(a.is_null());
  EXPECT_EQ(a["model"]["name"], "Qwen/Qwen3-Embedding-0.6B");
  ASSERT_FALSE(a["winner"].is_null());
  EXPECT_GT(a["kernel_count"].get<int>(), a["distinct_kernels"].get<int>());
  // The winner assembled (on the sim, the sum of its kernels' times: the gap is timing noise).
  ASSERT_TRUE(a["assembled"]["measured"].get<bool>()) << a["assembled"].dump();
  EXPECT_EQ(a["assembled"]["layer"], 0);
  EXPECT_NEAR(a["assembled"]["isolated_sum_us"].get<double>(), a["total_us"].get<double>(),
              1e-9 * a["total_us"].get<double>());
  EXPECT_LT(std::abs(a["assembled"]["gap"].get<double>()), 0.05) << a["assembled"].dump();
  EXPECT_FALSE(a["assembled"]["replayed"].get<bool>());
  // The run's clock in two parts: the searches, then the assembled check.
  EXPECT_GT(a["run"]["elapsed_s"].get<double>(), 0);
  EXPECT_GT(a["run"]["check_s"].get<double>(), 0);
  EXPECT_EQ(a["run"]["check_reserve_s"].get<double>(), 0);  // no --time-limit, nothing kept back
  int measured = 0;
  for (const auto& k : a["kernels"]) measured += k["measured"].get<int>();
  EXPECT_GT(measured, 0);

  const nlohmann::json b = tune_json(args, dir.path());
  for (const auto& k : b["kernels"]) EXPECT_EQ(k["measured"], 0) << k.dump();
  EXPECT_EQ(results(a), results(b));
  EXPECT_TRUE(b["assembled"]["replayed"].get<bool>()) << b["assembled"].dump();
  EXPECT_EQ(b["assembled"]["assembled_us"], a["assembled"]["assembled_us"]);

  // Every layer: the same distinct kernels but one (layer 0's norm adds no residual), 28 times
  // the launches, nothing measured again but that one's search.
  const nlohmann::json all = tune_json(
      "--model " + model("qwen3-embedding-0.6b.json") + " --layer all --batch 1 --tokens 128",
      dir.path());
  ASSERT_FALSE(all.is_null());
  EXPECT_LE(all["distinct_kernels"].get<int>(), a["distinct_kernels"].get<int>() + 1);
  EXPECT_GT(all["kernel_count"].get<int>(), 20 * a["kernel_count"].get<int>());

  auto text = run_attune("tune --backend sim --patience 8 " + args, dir.path());
  EXPECT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find(" kernels ("), std::string::npos) << text.out;
  EXPECT_NE(text.out.find(" distinct"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("<- winner"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("us isolated (gap "), std::string::npos) << text.out;
  // A third identical run: the check answered from the database, which keeps no per-kernel
  // times in the graph, and the text says so.
  EXPECT_NE(text.out.find("not kept by the database"), std::string::npos) << text.out;
  EXPECT_TRUE(b["assembled"]["graph_floor_us"].is_null()) << b["assembled"].dump();
  ASSERT_EQ(a["assembled"]["per_kernel"].size(), a["assembled"]["kernels"].get<std::size_t>());
  EXPECT_TRUE(a["assembled"]["per_kernel"][0]["in_graph_us"].is_number());
}

TEST(ModelCli, ATimeLimitBoundsTheWholeLayerTune) {
  if (!new_families()) GTEST_SKIP() << "needs the rope and silu_mul families registered";
  testing::TempDir dir;
  // So short that every problem's share ends at its first candidate, the baseline: past it a
  // problem measures its op's first guess and no more, and the layer is still scored and
  // assembled.
  const nlohmann::json j =
      tune_json("--time-limit 0.001 --model " + model("qwen3-embedding-0.6b.json") +
                    " --layer 0 --batch 1 --tokens 128",
                dir.path());
  ASSERT_FALSE(j.is_null());
  int limited = 0;
  for (const auto& k : j["kernels"]) {
    limited += k["stopped_by"] == "time_limit";
    EXPECT_LE(k["evaluated"].get<int>(), 2) << k.dump();
  }
  EXPECT_EQ(limited, j["kernels"].size());
  // The searches' share of the limit left out what the assembled check is given.
  EXPECT_DOUBLE_EQ(j["run"]["check_reserve_s"].get<double>(), 0.0002);
  EXPECT_FALSE(j["winner"].is_null());
  EXPECT_TRUE(j["assembled"]["measured"].get<bool>()) << j["assembled"].dump();
}

// Llama-3.1-8B, whose config has rope_scaling (rope_type llama3): its decode step tunes, its rope
// kernel is the problem with Llama 3.1's rewrite, and the winning grouping is assembled.
TEST(ModelCli, LlamaTunesWithItsRopeScaling) {
  if (!new_families()) GTEST_SKIP() << "needs the rope and silu_mul families registered";
  testing::TempDir dir;
  const nlohmann::json j = tune_json("--time-limit 2 --model " + model("llama-3.1-8b.json") +
                                         " --layer 0 --decode --batch 8 --kv 2048",
                                     dir.path());
  ASSERT_FALSE(j.is_null());
  EXPECT_FALSE(j["winner"].is_null());
  int ropes = 0;
  for (const auto& k : j["kernels"]) {
    const std::string problem = k["problem"].get<std::string>();
    if (problem.rfind("rope:", 0) != 0) continue;
    ++ropes;
    EXPECT_NE(problem.find("llama3_scaling=1"), std::string::npos) << problem;
  }
  EXPECT_GE(ropes, 1) << j["kernels"].dump();
  EXPECT_TRUE(j["assembled"]["measured"].get<bool>()) << j["assembled"].dump();
}

TEST(ModelCli, ResultsAreTheSameOnAnyNumberOfDevicesWithASlowAndACrashingOne) {
  if (!new_families()) GTEST_SKIP() << "needs the rope and silu_mul families registered";
  testing::TempDir one, many;
  const std::string args =
      "--model " + model("qwen3-8b.json") + " --layer 0 --decode --batch 8 --kv 2048";
  const nlohmann::json a = tune_json(args, one.path());
  const std::string trace = many.file("trace.txt"), crashed = many.file("crashed");
  const nlohmann::json b = tune_json(args + " --gpus 3", many.path(),
                                     "ATTUNE_SIM_DEVICES=3 ATTUNE_SIM_SLOW_DEVICE=1:5 "
                                     "ATTUNE_SIM_CRASH_DEVICE=2:" +
                                         crashed + " ATTUNE_SIM_TRACE=" + trace);
  ASSERT_FALSE(a.is_null());
  ASSERT_FALSE(b.is_null());
  EXPECT_EQ(results(a), results(b));
  EXPECT_EQ(b["run"]["devices"], nlohmann::json({0, 1, 2}));
  // Device 2's worker died once, and the work still went on there and elsewhere.
  EXPECT_TRUE(std::filesystem::exists(crashed));
  std::ifstream in(trace);
  std::set<std::string> devices;
  for (std::string line; std::getline(in, line);) devices.insert(line.substr(0, line.find(' ')));
  EXPECT_GE(devices.size(), 2u);
  // --devices names the same devices.
  testing::TempDir listed;
  const nlohmann::json c =
      tune_json(args + " --devices 2,0", listed.path(), "ATTUNE_SIM_DEVICES=3");
  ASSERT_FALSE(c.is_null());
  EXPECT_EQ(results(a), results(c));
}

// The sim's planted device faults the multi-device test relies on: device 2's first execution,
// in whichever worker, dies once; the candidate passes on a fresh worker with the death noted.
TEST(ModelCli, ASimDeviceFaultsOnceWherePlanted) {
  testing::TempDir dir;
  const std::string crashed = dir.file("crashed");
  auto r = run_attune(
      "tune --backend sim --problem rmsnorm --device 2 --max-candidates 2 --json", dir.path(),
      "ATTUNE_SIM_DEVICES=3 ATTUNE_SIM_SLOW_DEVICE=2:1 ATTUNE_SIM_CRASH_DEVICE=2:" + crashed);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(std::filesystem::exists(crashed));
  const auto j = nlohmann::json::parse(r.out);
  const auto& p = j["problems"][0];
  EXPECT_EQ(p["baseline"]["verdict"], "ok");
  EXPECT_NE(p["baseline"]["message"].get<std::string>().find("died"), std::string::npos)
      << p["baseline"].dump();
  // Another device of the box is untouched.
  testing::TempDir other;
  const std::string untouched = other.file("crashed");
  auto o = run_attune("tune --backend sim --problem rmsnorm --device 1 --max-candidates 2",
                      other.path(), "ATTUNE_SIM_DEVICES=3 ATTUNE_SIM_CRASH_DEVICE=2:" + untouched);
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_FALSE(std::filesystem::exists(untouched));
}

}  // namespace
}  // namespace attune
