// attune export as a user runs it: tune on the simulated device, export the tuned table in every
// format, one file per device, and bad input refused with one line and the database untouched.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/config.h"
#include "store/sqlite/sqlite_store.h"
#include "support/run.h"
#include "table/table.h"

namespace attune {
namespace {

namespace fs = std::filesystem;
using testing::read_bytes;
using testing::run_attune;
using testing::TempDir;
using testing::write_bytes;

using testing::lines;

// Four sizes of the sim's GEMM, tuned briefly: enough for rows that beat the baseline.
void tune_gemms(const TempDir& dir) {
  write_bytes(dir.file("shapes.txt"), "gemm:m=1\ngemm:m=2\ngemm:m=4\ngemm:m=8\n");
  auto r =
      run_attune("tune --backend sim --shapes shapes.txt --max-candidates 40 --seed 1", dir.path());
  ASSERT_EQ(r.code, 0) << r.err;
}

TEST(ExportCli, ASimTuneExportsAValidTableInEveryFormat) {
  TempDir dir;
  tune_gemms(dir);

  auto j = run_attune("export --format json -o tuned/", dir.path());
  ASSERT_EQ(j.code, 0) << j.err;
  ASSERT_TRUE(fs::is_directory(dir.file("tuned")));
  std::vector<fs::path> files(fs::directory_iterator(dir.file("tuned")), fs::directory_iterator());
  ASSERT_EQ(files.size(), 1u);
  auto t = table::load_table(files[0].string());
  ASSERT_TRUE(t.ok()) << t.error().message();
  EXPECT_EQ(files[0].filename().string(), t->device.slug() + ".json");
  EXPECT_NE(j.err.find("wrote tuned/" + t->device.slug() + ".json"), std::string::npos) << j.err;
  EXPECT_EQ(t->device.backend, "sim");
  ASSERT_EQ(t->ops.size(), 1u);
  EXPECT_EQ(t->ops[0].op, "gemm");
  EXPECT_EQ(t->ops[0].dtype, table::kNoDtype);  // the sim's problems carry no dtype
  ASSERT_FALSE(t->ops[0].rows.empty());
  for (const auto& row : t->ops[0].rows) {
    EXPECT_LE(row.median_us, row.baseline_us * 0.97) << row.problem.text();
    EXPECT_EQ(row.backend, "sim");
    EXPECT_FALSE(row.baseline_config.empty());
  }

  // The same rows as CSV: a header and one line each.
  auto c = run_attune("export --format csv -o tuned.csv", dir.path());
  ASSERT_EQ(c.code, 0) << c.err;
  const std::string csv = read_bytes(dir.file("tuned.csv"));
  EXPECT_EQ(csv.rfind("device_key,op,dtype,match,", 0), 0u) << csv;
  EXPECT_EQ(lines(csv), t->ops[0].rows.size() + 1);

  auto h = run_attune("export --format cpp -o tuned/", dir.path());
  ASSERT_EQ(h.code, 0) << h.err;
  const std::string header = read_bytes(dir.file("tuned/" + t->device.slug() + ".h"));
  EXPECT_NE(header.find("kDeviceKey = \"" + t->device.key() + "\""), std::string::npos) << header;

  // --json: what was written, as a report on stdout.
  auto rep = run_attune("export --format json -o tuned/ --json", dir.path());
  ASSERT_EQ(rep.code, 0) << rep.err;
  auto written = nlohmann::json::parse(rep.out)["written"];
  ASSERT_EQ(written.size(), 1u);
  EXPECT_EQ(written[0]["path"], "tuned/" + t->device.slug() + ".json");
  EXPECT_EQ(written[0]["device_key"], t->device.key());
  EXPECT_EQ(written[0]["rows"], t->ops[0].rows.size());

  // No -o: the table on stdout, what was exported on stderr.
  auto out = run_attune("export --format json", dir.path());
  ASSERT_EQ(out.code, 0) << out.err;
  EXPECT_EQ(nlohmann::json::parse(out.out)["device_key"], t->device.key());

  // Bucketed over m: the rule is written into the table, and every row covers a range.
  auto b =
      run_attune("export --format json --bucket m --bucket-edges 2,8 -o bucketed.json", dir.path());
  ASSERT_EQ(b.code, 0) << b.err;
  auto bt = table::load_table(dir.file("bucketed.json"));
  ASSERT_TRUE(bt.ok()) << bt.error().message();
  ASSERT_EQ(bt->ops.size(), 1u);
  EXPECT_EQ(bt->ops[0].match.kind, table::MatchPolicy::Kind::kBucketed);
  EXPECT_NE(bt->ops[0].match.rule.find("no-harm"), std::string::npos);
  for (const auto& row : bt->ops[0].rows) {
    ASSERT_TRUE(row.bucket);
    EXPECT_EQ(row.problem.attr("m"), nullptr);
  }
}

TEST(ExportCli, NothingToExportIsExitOneAndWritesNothing) {
  TempDir dir;
  // Only the baseline measured: nothing can beat it.
  ASSERT_EQ(run_attune("tune --backend sim --problem rmsnorm --max-candidates 1", dir.path()).code,
            0);
  auto r = run_attune("export --format json -o tuned/", dir.path());
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("nothing to export"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir.file("tuned")) && !fs::is_empty(dir.file("tuned")));
  auto v = run_attune("export --format json -v", dir.path());
  EXPECT_NE(v.err.find("baseline is the fastest"), std::string::npos) << v.err;
}

// Two devices in one database, written the way the tuner writes rows.
void two_devices(const std::string& path, DeviceFingerprint* a, DeviceFingerprint* b) {
  *a = {"cuda", "NVIDIA H200", "sm_90", 132, 150ull << 30};
  *b = {"cuda", "NVIDIA A100", "sm_80", 108, 80ull << 30};
  auto store = SqliteStore::open(path);
  ASSERT_TRUE(store.ok());
  Problem p = *Problem::parse("gemm:bias=0,dtype=bf16,k=4096,m=1,n=4096");
  ASSERT_TRUE((*store)->put_problem(p).ok());
  for (const DeviceFingerprint* d : {a, b}) {
    ASSERT_TRUE((*store)->put_device(*d).ok());
    ASSERT_TRUE(
        (*store)->put_baseline({d->key(), p.structural_key(), "cuda", "kernel=base", "", ""}).ok());
    for (auto [config, us] :
         {std::pair<std::string, double>{"kernel=base", 10}, {"kernel=fast", 6}}) {
      MeasurementRow r;
      r.device_key = d->key();
      r.problem_key = p.structural_key();
      r.backend = "cuda";
      r.config = config;
      r.config_hash = Config::parse(config)->hash_hex();
      r.regime = Regime::kDeploy;
      Measurement m;
      m.median_us = us;
      r.outcome.measurement = m;
      r.outcome.check = ErrorCheck{"max_rel_err", 1e-3, 2e-2};
      ASSERT_TRUE((*store)->record(r).ok());
    }
  }
}

TEST(ExportCli, SeveralDevicesGetOneFileEach) {
  TempDir dir;
  DeviceFingerprint a, b;
  two_devices(dir.file("attune.db"), &a, &b);
  auto r = run_attune("export --format json -o tuned", dir.path());
  // "tuned" does not exist and has no trailing '/': it is a file, and two tables need a directory.
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("2 devices"), std::string::npos) << r.err;
  fs::create_directories(dir.file("tuned"));
  r = run_attune("export --format json -o tuned", dir.path());
  ASSERT_EQ(r.code, 0) << r.err;
  for (const DeviceFingerprint* d : {&a, &b}) {
    auto t = table::load_table(dir.file("tuned/" + d->slug() + ".json"));
    ASSERT_TRUE(t.ok()) << t.error().message();
    EXPECT_EQ(t->device.key(), d->key());
    EXPECT_NE(r.err.find("wrote tuned/" + d->slug() + ".json"), std::string::npos) << r.err;
  }
  auto one = run_attune("export --format csv --device " + b.key(), dir.path());
  ASSERT_EQ(one.code, 0) << one.err;
  EXPECT_EQ(lines(one.out), 2u);
  EXPECT_EQ(one.out.find(a.key()), std::string::npos);
  EXPECT_NE(one.out.find(b.key()), std::string::npos);
}

// A user kernel's problems are named after the kernel at every size: a Kernel Tuner export by that
// name must not pick one of them silently.
TEST(ExportCli, ANameTwoProblemsShareIsRefusedNamingBothKeys) {
  TempDir dir;
  Problem small = *Problem::parse("user:kernel=transpose_tiled,rows=2048,cols=2048");
  Problem large = *Problem::parse("user:kernel=transpose_tiled,rows=8191,cols=1023");
  {
    auto store = SqliteStore::open(dir.file("attune.db"));
    ASSERT_TRUE(store.ok());
    for (Problem* p : {&small, &large}) {
      p->set_name("transpose_tiled");
      ASSERT_TRUE((*store)->put_problem(*p).ok());
    }
  }
  auto r =
      run_attune("export --format kernel-tuner --problem transpose_tiled -o out.json", dir.path());
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("names 2 problems"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(small.structural_key()), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(large.structural_key()), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir.file("out.json")));
}

using testing::BadInput;

class ExportBadInput : public ::testing::TestWithParam<BadInput> {};

TEST_P(ExportBadInput, OneLineExitTwoAndTheDatabaseUntouched) {
  TempDir dir;
  DeviceFingerprint a, b;
  two_devices(dir.file("attune.db"), &a, &b);
  testing::expect_refused(GetParam(), dir, "attune.db");
  EXPECT_FALSE(fs::exists(dir.file("out")));
}

INSTANTIATE_TEST_SUITE_P(
    ExportCli, ExportBadInput,
    ::testing::Values(
        BadInput{"export --format yaml", "--format 'yaml'"},
        BadInput{"export --format json --device 0123456789abcdef -o out/", "no such device"},
        BadInput{"export --format json --bucket gemm: -o out/", "--bucket 'gemm:'"},
        BadInput{"export --format json --bucket m --bucket-edges 4,2 -o out/", "ascending"},
        BadInput{"export --format json --bucket-edges 4 -o out/", "needs --bucket"},
        BadInput{"export --format json --bucket q -o out/", "integer attribute 'q'"},
        BadInput{"export --format json --bucket rmsnorm:m -o out/", "integer attribute 'm'"},
        BadInput{"export --format json --min-improvement-pct 120 -o out/", "not a percentage"},
        BadInput{"export --format json --problem x -o out/",
                 "--problem is for --format kernel-tuner"},
        BadInput{"export --format json -o out.json", "give -o DIR"},
        BadInput{"export --format json --json --device " +
                     DeviceFingerprint{"cuda", "NVIDIA H200", "sm_90", 132, 150ull << 30}.key(),
                 "--json reports what was written"},
        BadInput{"export --format json --device " +
                     DeviceFingerprint{"cuda", "NVIDIA H200", "sm_90", 132, 150ull << 30}.key() +
                     " -o no/such/dir/t.json",
                 "cannot write"},
        BadInput{"export --format json --db missing.db", "does not exist"}),
    [](const ::testing::TestParamInfo<BadInput>& info) {
      return "case" + std::to_string(info.index);
    });

}  // namespace
}  // namespace attune
