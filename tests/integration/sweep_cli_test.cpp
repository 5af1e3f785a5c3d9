// attune sweep as a user runs it, on the simulated device: rows only on stdout (JSON lines or C++
// rows), the log on stderr, shards that concatenate to one run's bytes, a cell that cannot
// settle dropped and named, and bad flags refused in one line with nothing stored.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/run.h"
#include "table/sweep.h"

namespace attune {
namespace {

using testing::lines;
using testing::read_bytes;
using testing::run_attune;
using testing::TempDir;

// Small searches: the sim answers in microseconds, the worker round trips are what cost.
const std::string kSearch = " --backend sim --seed 7 --patience 8 --max-candidates 16";

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

TEST(SweepCli, RowsOnStdoutAreJsonLinesAndTheLogIsOnStderr) {
  TempDir dir;
  auto r =
      run_attune("sweep rmsnorm --hidden 1024,8192 --rows 1,2,4,8,64,512" + kSearch, dir.path());
  ASSERT_EQ(r.code, 0) << r.err;
  const auto rows = split_lines(r.out);
  ASSERT_FALSE(rows.empty()) << r.err;
  auto device = run_attune("device --backend sim --json", dir.path());
  const std::string key = nlohmann::json::parse(device.out)["key"].get<std::string>();
  for (const auto& line : rows) {
    auto j = nlohmann::json::parse(line);  // throws (fails) on anything but a JSON row
    EXPECT_EQ(j["format"], "attune.sweep");
    EXPECT_EQ(j["device"]["key"], key);
    EXPECT_EQ(j["op"], "rmsnorm");
    EXPECT_EQ(j["dtype"], "bf16");
    EXPECT_EQ(j["axis"], "rows");
    EXPECT_TRUE(j["kind"] == "default" || j["kind"] == "exception") << line;
    EXPECT_TRUE(j["sizes"].contains("hidden")) << line;
    EXPECT_LT(j["median_us"].get<double>(), j["baseline_us"].get<double>()) << line;
    EXPECT_GE(j["max_regret"].get<double>(), 0) << line;
    EXPECT_GT(j["measured"].get<int>(), 0) << line;
    EXPECT_FALSE(j["covers"].empty()) << line;
  }
  for (const char* says :
       {"info cell bf16 hidden=1024 rows=1: ", "stopped by ", "noise bf16 hidden=1024: noise floor",
        "bucket bf16 hidden=", " rows (", " dropped; tuning "})
    EXPECT_NE(r.err.find(says), std::string::npos) << says << "\n" << r.err;
  // The rows load as the tuned table libattune-rt reads.
  auto parsed = table::parse_sweep_rows(r.out);
  ASSERT_TRUE(parsed) << parsed.error().message();
  auto t = table::table_from_sweep_rows(*parsed, "test", "");
  ASSERT_TRUE(t) << t.error().message();
  EXPECT_EQ(t->device.key(), key);

  // A rerun on the same database measures nothing new and prints the same bytes.
  auto again =
      run_attune("sweep rmsnorm --hidden 1024,8192 --rows 1,2,4,8,64,512" + kSearch, dir.path());
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_EQ(again.out, r.out);
  EXPECT_NE(again.err.find("0 measured"), std::string::npos) << again.err;

  auto cpp = run_attune(
      "sweep rmsnorm --hidden 1024,8192 --rows 1,2,4,8,64,512 --format cpp" + kSearch, dir.path());
  ASSERT_EQ(cpp.code, 0) << cpp.err;
  std::size_t covers = 0;
  for (const auto& row : *parsed) covers += row.covers.size();
  EXPECT_EQ(lines(cpp.out), covers);
  for (const auto& line : split_lines(cpp.out)) {
    EXPECT_EQ(line.rfind("{\"" + key + "\", \"rmsnorm\", \"bf16\", ", 0), 0u) << line;
    EXPECT_EQ(line.substr(line.size() - 2), "},") << line;
  }
}

// Shards on --dtype and on the group's size, run on separate databases and on a shared one,
// concatenate to the bytes of the whole run.
TEST(SweepCli, ShardsConcatenateToTheWholeRunsBytes) {
  TempDir dir;
  const std::string grid = " --rows 1,2,3,4,16";
  auto whole = run_attune(
      "--db whole.db sweep rmsnorm --dtype bf16,fp16 --hidden 1024,4096" + grid + kSearch,
      dir.path());
  ASSERT_EQ(whole.code, 0) << whole.err;
  ASSERT_FALSE(whole.out.empty()) << whole.err;
  for (const std::string db : {"separate", "shared"}) {
    std::string cat;
    int shard = 0;
    for (const char* dtype : {"bf16", "fp16"})
      for (const char* hidden : {"1024", "4096"}) {
        const std::string file =
            db == "shared" ? "shared.db" : "s" + std::to_string(shard++) + ".db";
        auto r = run_attune("--db " + file + " sweep rmsnorm --dtype " + dtype + " --hidden " +
                                hidden + grid + kSearch,
                            dir.path());
        ASSERT_EQ(r.code, 0) << r.err;
        cat += r.out;
      }
    EXPECT_EQ(cat, whole.out) << db;
  }
  // The whole run again on the shards' shared database: the same bytes.
  auto on_shared = run_attune(
      "--db shared.db sweep rmsnorm --dtype bf16,fp16 --hidden 1024,4096" + grid + kSearch,
      dir.path());
  ASSERT_EQ(on_shared.code, 0) << on_shared.err;
  EXPECT_EQ(on_shared.out, whole.out);
}

// gemm groups by (n, k): a shard per weight matrix concatenates too.
TEST(SweepCli, GemmShardsOnAWeightMatrixConcatenate) {
  TempDir dir;
  auto whole =
      run_attune("--db w.db sweep gemm --m 1,8,16,64 --n 1024,4096 --k 4096" + kSearch, dir.path());
  ASSERT_EQ(whole.code, 0) << whole.err;
  std::string cat;
  for (const char* n : {"1024", "4096"}) {
    auto r = run_attune(
        std::string("--db s") + n + ".db sweep gemm --m 1,8,16,64 --n " + n + " --k 4096" + kSearch,
        dir.path());
    ASSERT_EQ(r.code, 0) << r.err;
    cat += r.out;
  }
  EXPECT_EQ(cat, whole.out);
}

// A cell whose device does not settle within the back-off bound is dropped and named; the
// sweep goes on with the others.
TEST(SweepCli, ACellThatCannotSettleIsDroppedAndNamed) {
  TempDir dir;
  auto r = run_attune(
      "sweep rmsnorm --hidden 4096 --rows 1,2,4 --strategy grid --patience 0 --max-candidates 30 "
      "--anchor-every 4 --backoff 0.01 --backoff-max-wait 0.02 --backend sim",
      dir.path(), "ATTUNE_SIM_DRIFT=12:1000000:1.5");
  EXPECT_NE(r.err.find("dropped bf16 hidden=4096 rows=1: the device did not settle"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("cooldown bf16 hidden=4096 rows=1: tuning: 1 drift events"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.code, 0) << r.err;  // the other cells were swept
  for (const auto& line : split_lines(r.out)) {
    auto j = nlohmann::json::parse(line);
    for (const auto& c : j["covers"])
      for (const auto& p : c["points"]) EXPECT_NE(p.get<int>(), 1) << line;
  }
}

TEST(SweepCli, BadFlagsAreOneLineAndExitTwoWithNothingStored) {
  TempDir dir;
  for (const auto& [args, says] : std::vector<std::pair<std::string, std::string>>{
           {"sweep rmsnorm --backend sim --hidden 1024 --rows 1,x",
            "--rows '1,x': 'x' is not a positive integer"},
           {"sweep rmsnorm --backend sim --hidden 1024 --rows 1,0",
            "'0' is not a positive integer"},
           {"sweep rmsnorm --backend sim --hidden 1024 --rows 1 --m 4",
            "--m is not a size of rmsnorm"},
           {"sweep rmsnorm --backend sim --hidden 1024 --rows 1 --bogus 4", "--bogus"},
           {"sweep rmsnorm --backend sim --rows 1", "needs --hidden"},
           {"sweep rmsnorm --backend sim --hidden 1024 --rows 1 --dtype fp8",
            "rmsnorm takes bf16, fp16"},
           {"sweep nosuchop --backend sim --rows 1", "no op 'nosuchop'"},
           {"sweep rmsnorm --backend sim --hidden 1024 --rows 1 --format csv",
            "json (JSON lines) or cpp"},
           {"sweep rmsnorm --backend sim --hidden 1024 --rows 1 --patience -1", "--patience -1"},
       }) {
    auto r = run_attune(args, dir.path());
    EXPECT_EQ(r.code, 2) << args << ": " << r.err;
    EXPECT_EQ(lines(r.err), 1u) << args << ": " << r.err;
    EXPECT_NE(r.err.find(says), std::string::npos) << args << ": " << r.err;
    EXPECT_TRUE(r.out.empty()) << args;
  }
  EXPECT_FALSE(std::filesystem::exists(dir.file("attune.db")));  // nothing was created
}

}  // namespace
}  // namespace attune

namespace attune {
namespace {

// The grid form on attention_decode (its defaults fill q_heads, kv_heads and q_len): a
// winner at a deep KV cache can break a constraint at a shallow one (splits that leave a split
// without a KV tile), and the sweep measures it only where it is legal instead of failing; its
// rows become a tuned table through attune export --from-sweep.
TEST(SweepCli, AttentionDecodeCandidatesAreMeasuredOnlyWhereLegalAndRowsExportAsATable) {
  testing::TempDir dir;
  auto r = testing::run_attune(
      "sweep attention_decode --dtype bf16 --head 64,128 --kv 512,4096 --batch 1,2,4,8 "
      "--backend sim --seed 7 --patience 8 --max-candidates 24 --db s.db",
      dir.path());
  ASSERT_EQ(r.code, 0) << r.err;
  ASSERT_FALSE(r.out.empty()) << r.err;
  for (const auto& line : split_lines(r.out)) {
    auto j = nlohmann::json::parse(line);
    EXPECT_EQ(j["op"], "attention_decode");
    EXPECT_EQ(j["axis"], "batch");
    EXPECT_EQ(j["covers"][0]["sizes"]["q_heads"], 32) << line;
  }
  { std::ofstream(dir.file("rows.jsonl")) << r.out; }
  auto e =
      testing::run_attune("export --format json --from-sweep rows.jsonl -o tuned/", dir.path());
  ASSERT_EQ(e.code, 0) << e.err;
  EXPECT_NE(e.err.find("wrote tuned/"), std::string::npos) << e.err;
  auto bad = testing::run_attune("export --format json --from-sweep missing.jsonl", dir.path());
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("--from-sweep missing.jsonl does not exist"), std::string::npos)
      << bad.err;
}

}  // namespace
}  // namespace attune
