// attune space as a user runs it, and attune tune's spec check before its backend: both with no
// GPU and no CUDA plugin (ATTUNE_PLUGIN_DIR points where there is none).
#include <dlfcn.h>

#include <filesystem>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/run.h"

namespace attune {
namespace {

using testing::lines;
using testing::run_attune;
using testing::TempDir;
using testing::write_bytes;

const std::string kRoot = ATTUNE_SOURCE_DIR;
const std::string kExamples = kRoot + "/examples/user-kernel/";
const std::string kMatmul = kRoot + "/tests/integration/fixtures/kernel_tuner_matmul.yaml";
// No plugin there: what a laptop or a CI runner without a GPU has.
const std::string kNoPlugin = "ATTUNE_PLUGIN_DIR=/nonexistent/attune-plugins";

nlohmann::json space_json(const std::string& args, const TempDir& dir) {
  auto r = run_attune("space " + args + " --json", dir.path(), kNoPlugin);
  EXPECT_EQ(r.code, 0) << r.err;
  return r.code == 0 ? nlohmann::json::parse(r.out) : nlohmann::json();
}

TEST(SpaceCli, CountsTheExamplesWithoutAGpu) {
  TempDir dir;
  auto v = space_json("--spec " + kExamples + "vector_add.yaml", dir);
  EXPECT_EQ(v["cartesian"], 20);
  EXPECT_EQ(v["removed_by_constraints"], 1);  // 1024 x 8 > 4096
  EXPECT_EQ(v["legal"], 19);
  EXPECT_EQ(v["unlaunchable"], 0);
  EXPECT_EQ(v["configs"], 19);
  EXPECT_EQ(v["baseline"], "block_size=256,items_per_thread=1");
  EXPECT_EQ(v["problem"]["n"], 10000000);
  EXPECT_EQ(v["knobs"][0]["name"], "block_size");
  EXPECT_EQ(v["knobs"][0]["default"], 256);
  EXPECT_EQ(v["objective"]["metric"], "time");
  auto t = space_json(
      "--spec " + kExamples + "transpose.yaml --kernel " + kExamples + "transpose.cu", dir);
  EXPECT_EQ(t["cartesian"], 36);
  EXPECT_EQ(t["configs"], 32);
  EXPECT_EQ(t["baseline"], "tile=32,block_rows=8,pad=1");

  auto text = run_attune("space --spec " + kExamples + "vector_add.yaml", dir.path(), kNoPlugin);
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("19 to tune: 20 in the knobs' product, 1 removed by the constraints, 0 "
                          "more refused by the launch check"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("baseline  block_size=256,items_per_thread=1"), std::string::npos);
}

TEST(SpaceCli, KernelTunersMatmulSpaceHasItsFortyConfigs) {
  TempDir dir;
  auto j = space_json("--spec " + kMatmul, dir);
  EXPECT_EQ(j["cartesian"], 288);
  EXPECT_EQ(j["legal"], 44);
  EXPECT_EQ(j["removed_by_constraints"], 244);
  EXPECT_EQ(j["unlaunchable"], 4);  // 64 x 32 threads per block
  EXPECT_EQ(j["configs"], 40);      // Kernel Tuner's count
  EXPECT_EQ(j["metrics"]["gflops"], "2.0 * n ** 3 / (time_s * 1e9)");
  EXPECT_EQ(j["objective"]["metric"], "gflops");
  EXPECT_EQ(j["objective"]["higher_is_better"], true);

  auto list = run_attune("space --spec " + kMatmul + " --list", dir.path(), kNoPlugin);
  ASSERT_EQ(list.code, 0) << list.err;
  EXPECT_EQ(lines(list.out), 40u) << list.out;
  EXPECT_EQ(list.out.substr(0, list.out.find('\n')),
            "block_size_x=16,block_size_y=16,tile_size_x=1,tile_size_y=1");  // the baseline first
  EXPECT_EQ(list.out.find("block_size_y=32,tile_size_x=1,tile_size_y=2"), std::string::npos);

  auto lj = space_json("--spec " + kMatmul + " --list", dir);
  ASSERT_EQ(lj["list"].size(), 40u);
  ASSERT_EQ(lj["refused"].size(), 4u);
  EXPECT_EQ(lj["refused"][0]["config"],
            "block_size_x=64,block_size_y=32,tile_size_x=1,tile_size_y=2");
  EXPECT_NE(lj["refused"][0]["reason"].get<std::string>().find("2048 threads"), std::string::npos);

  // Sizes from --problem: a smaller n keeps the space (no constraint reads it).
  auto small = space_json("--spec " + kMatmul + " --problem n=512", dir);
  EXPECT_EQ(small["problem"]["n"], 512);
  EXPECT_EQ(small["configs"], 40);
}

TEST(SpaceCli, BadSpecsAreOneLineAndExitTwo) {
  TempDir dir;
  write_bytes(dir.file("k.cu"),
              "extern \"C\" __global__ void k(float* o, int n) {}\n"
              "extern \"C\" __global__ void k_ref(float* o, int n) {}\n");
  auto spec = [&](const std::string& knobs, const std::string& extra = "") {
    return "kernel: k\nsource: k.cu\nproblem: {n: 1000}\nknobs:\n" + knobs +
           "grid: [\"ceil_div(n, bs)\"]\nblock: [bs]\n"
           "args:\n  - {name: o, type: float32, buffer: output, size: n}\n"
           "  - {name: n, type: int32, scalar: n}\n"
           "reference: {kernel: {name: k_ref, grid: [\"ceil_div(n, 256)\"], block: [256]}}\n" +
           extra;
  };
  struct Bad {
    std::string yaml;
    std::string args;
    std::string says;
  };
  const Bad cases[] = {
      {spec("  bs: {values: [64, 128], defualt: 64}\n"), "", "x.yaml:5:"},
      {spec("  bs: {values: [64, 128], default: 96}\n"), "", "default 96 is not among its values"},
      {spec("  bs: [64, 128]\n", "constraints: \"bs <= nn\"\n"), "", "unknown name 'nn'"},
      {spec("  bs: [2048, 64]\n"), "", "the defaults (bs=2048) cannot be launched"},
      {spec("  bs: [64]\n",
            "metrics: {g: \"n * time_s\"}\nobjective: {metric: g, "
            "higher_is_better: true}\n"),
       "", "does not fall strictly as the time grows"},
      {spec("  bs: [64]\n"), "--problem m=4", "'m' is not a problem size"},
      {spec("  bs: [64]\n"), "--kernel nope.cu", "kernel source nope.cu does not exist"},
  };
  for (const auto& c : cases) {
    write_bytes(dir.file("x.yaml"), c.yaml);
    auto r = run_attune("space --spec x.yaml " + c.args, dir.path(), kNoPlugin);
    EXPECT_EQ(r.code, 2) << c.says << ": " << r.out << r.err;
    EXPECT_EQ(lines(r.err), 1u) << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
  auto none = run_attune("space --spec nope.yaml", dir.path(), kNoPlugin);
  EXPECT_EQ(none.code, 2);
  EXPECT_EQ(lines(none.err), 1u) << none.err;
  EXPECT_NE(none.err.find("spec nope.yaml does not exist"), std::string::npos) << none.err;
}

TEST(TuneCli, AUserSpecsErrorsComeBeforeAnythingAboutTheBackend) {
  TempDir dir;
  write_bytes(dir.file("bad.yaml"), "kernel: vector_add\nsource: " + kExamples +
                                        "vector_add.cu\nproblem: {n: 10}\nknobs:\n"
                                        "  block_size: {values: [64], default: 32}\n");
  auto r = run_attune("tune --spec bad.yaml", dir.path(), kNoPlugin);
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("bad.yaml:5:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("default 32 is not among its values"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("backend"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir.file("attune.db")));

  // A valid spec without a GPU: say so, and where a spec can be checked without one.
  auto ok = run_attune("tune --kernel " + kExamples + "vector_add.cu --spec " + kExamples +
                           "vector_add.yaml --problem n=1000",
                       dir.path(), kNoPlugin);
  EXPECT_EQ(ok.code, 2) << ok.out << ok.err;
  EXPECT_EQ(lines(ok.err), 1u) << ok.err;
  EXPECT_NE(ok.err.find("is valid, but no GPU can run it here"), std::string::npos) << ok.err;
  EXPECT_NE(ok.err.find("the cuda backend is unavailable"), std::string::npos) << ok.err;
  EXPECT_NE(ok.err.find("attune space --spec"), std::string::npos) << ok.err;
  EXPECT_FALSE(std::filesystem::exists(dir.file("attune.db")));

  // The real plugin loads without a driver (it loads the driver itself), so on a host without
  // one the line names what is missing instead.
  if (void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) {
    dlclose(driver);
  } else {
    auto real = run_attune("tune --kernel " + kExamples + "vector_add.cu --spec " + kExamples +
                               "vector_add.yaml --problem n=1000",
                           dir.path());
    EXPECT_EQ(real.code, 2) << real.out << real.err;
    EXPECT_EQ(lines(real.err), 1u) << real.err;
    EXPECT_NE(real.err.find("is valid, but no GPU can run it here"), std::string::npos) << real.err;
    EXPECT_NE(real.err.find("no NVIDIA driver"), std::string::npos) << real.err;
    EXPECT_FALSE(std::filesystem::exists(dir.file("attune.db")));
  }

  // --problem sizes are checked with the spec.
  auto size = run_attune("tune --spec " + kExamples + "vector_add.yaml --problem m=4", dir.path(),
                         kNoPlugin);
  EXPECT_EQ(size.code, 2);
  EXPECT_NE(size.err.find("'m' is not a problem size"), std::string::npos) << size.err;
}

}  // namespace
}  // namespace attune
