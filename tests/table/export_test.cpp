// Export rules on synthetic measurements written into a temporary SQLite store: which rows a
// table gets, which it never gets, and how buckets are chosen (no-harm, then least max regret).
#include "table/export.h"

#include <gtest/gtest.h>

#include "core/config.h"
#include "store/sqlite/sqlite_store.h"
#include "support/rows.h"
#include "support/temp_dir.h"

namespace attune::table {
namespace {

DeviceFingerprint h200() {
  return {"cuda", "NVIDIA H200", "sm_90", 132, 150ull << 30};
}
DeviceFingerprint a100() {
  return {"cuda", "NVIDIA A100", "sm_80", 108, 80ull << 30};
}

ErrorCheck good_check() {
  return {"max_rel_err", 1e-3, 2e-2};
}

struct ExportTest : ::testing::Test {
  testing::TempDir dir;
  std::unique_ptr<SqliteStore> store = std::move(*SqliteStore::open(dir.file("t.db")));

  void SetUp() override {
    ASSERT_TRUE(store->put_device(h200()).ok());
    ASSERT_TRUE(store->put_device(a100()).ok());
  }

  // One measurement row of `config` at `problem`, as the tuner writes it.
  std::int64_t row(const DeviceFingerprint& d, const Problem& p, const std::string& config,
                   Regime regime, double us, Verdict verdict = Verdict::kOk,
                   std::optional<ErrorCheck> check = good_check()) {
    MeasurementRow r = testing::measurement_row(d.key(), p, "cuda", config, regime);
    r.outcome.verdict = verdict;
    if (verdict == Verdict::kOk) {
      Measurement m;
      m.regime = regime;
      m.samples = 10;
      m.median_us = m.min_us = m.max_us = us;
      r.outcome.measurement = m;
    }
    r.outcome.check = check;
    auto id = store->record(r);
    EXPECT_TRUE(id.ok()) << id.error().message();
    return id.ok() ? *id : 0;
  }

  // A problem tuned on `d`: its baseline recorded, then each config measured in the rank and
  // the deploy regime (deploy time as given).
  Problem tuned(const std::string& text, const std::string& baseline,
                const std::map<std::string, double>& deploy, const DeviceFingerprint& d = h200()) {
    Problem p = *Problem::parse(text);
    EXPECT_TRUE(store->put_problem(p).ok());
    EXPECT_TRUE(store->put_baseline({d.key(), p.structural_key(), "cuda", baseline, "", ""}).ok());
    for (const auto& [config, us] : deploy) {
      row(d, p, config, Regime::kRank, us * 0.9);
      row(d, p, config, Regime::kDeploy, us);
    }
    return p;
  }

  ExportResult run(const ExportOptions& o = {}, const DeviceFingerprint& d = h200()) {
    auto r = export_table(*store, d, o);
    EXPECT_TRUE(r.ok()) << r.error().message();
    return r.ok() ? std::move(*r) : ExportResult{};
  }
};

bool noted(const ExportResult& r, const std::string& what, const std::string& why) {
  for (const auto& n : r.notes)
    if (n.what == what && n.why.find(why) != std::string::npos) return true;
  return false;
}

const std::string kB = "kernel=base";

TEST_F(ExportTest, AnExactRowIsTheBestDeployConfigThatPassedAgainstItsBaseline) {
  Problem p = tuned("gemm:bias=0,dtype=bf16,k=4096,m=1,n=4096", kB,
                    {{kB, 10}, {"kernel=a", 8}, {"kernel=b", 7}, {"kernel=c", 6}, {"kernel=d", 5}});
  // b failed the gate in the rank regime on a later run: never in a table, however fast.
  row(h200(), p, "kernel=b", Regime::kRank, 0, Verdict::kWrongOutput,
      ErrorCheck{"max_rel_err", 0.5, 2e-2});
  // c's deploy row says ok but its error is above tolerance; d's only deploy row has no check.
  row(h200(), p, "kernel=c", Regime::kDeploy, 6, Verdict::kOk,
      ErrorCheck{"max_rel_err", 0.5, 2e-2});
  row(h200(), p, "kernel=e", Regime::kDeploy, 4, Verdict::kOk, std::nullopt);
  // f was only rank-measured (outside the deploy band): rank numbers never feed tables.
  row(h200(), p, "kernel=f", Regime::kRank, 1);
  // g's deploy row was discarded (the device drifted while it was measured).
  ASSERT_TRUE(store->discard({row(h200(), p, "kernel=g", Regime::kDeploy, 2)}, "drift").ok());
  // d crashed once in the deploy regime after passing: not trusted.
  row(h200(), p, "kernel=d", Regime::kDeploy, 0, Verdict::kCrashed, std::nullopt);

  ExportResult r = run();
  ASSERT_EQ(r.table.ops.size(), 1u);
  const OpTable& t = r.table.ops[0];
  EXPECT_EQ(t.op, "gemm");
  EXPECT_EQ(t.dtype, "bf16");
  EXPECT_EQ(t.match.kind, MatchPolicy::Kind::kExact);
  ASSERT_EQ(t.rows.size(), 1u);
  const Row& row0 = t.rows[0];
  EXPECT_EQ(row0.problem.text(), p.text());
  EXPECT_EQ(row0.backend, "cuda");
  EXPECT_EQ(row0.config, "kernel=a");
  EXPECT_DOUBLE_EQ(row0.median_us, 8);
  EXPECT_DOUBLE_EQ(row0.baseline_us, 10);
  EXPECT_EQ(row0.baseline_config, kB);
  EXPECT_EQ(row0.error.metric, "max_rel_err");
  EXPECT_LE(row0.error.value, row0.error.tolerance);
  EXPECT_EQ(r.table.device.key(), h200().key());
  EXPECT_TRUE(validate(r.table).ok());
  EXPECT_EQ(r.problems, 1u);
}

TEST_F(ExportTest, WithinNoiseWinsAndBaselineWinnersAreLeftToTheBaseline) {
  tuned("gemm:bias=0,dtype=bf16,k=4096,m=1,n=4096", kB, {{kB, 10}, {"kernel=a", 9.8}});  // 2% < 3%
  tuned("gemm:bias=0,dtype=bf16,k=4096,m=2,n=4096", kB,
        {{kB, 10}, {"kernel=a", 11}});  // baseline best
  tuned("gemm:bias=0,dtype=bf16,k=4096,m=4,n=4096", kB,
        {{kB, 10}, {"kernel=a", 9.6}});  // 4%: a row
  ExportResult r = run();
  ASSERT_EQ(r.rows(), 1u);
  EXPECT_EQ(r.table.ops[0].rows[0].problem.text(), "gemm:bias=0,dtype=bf16,k=4096,m=4,n=4096");
  EXPECT_TRUE(noted(r, "gemm:bias=0,dtype=bf16,k=4096,m=1,n=4096", "within noise"));
  EXPECT_TRUE(noted(r, "gemm:bias=0,dtype=bf16,k=4096,m=2,n=4096", "baseline is the fastest"));

  ExportOptions loose;
  loose.min_improvement_pct = 1;
  EXPECT_EQ(run(loose).rows(), 2u);
  ExportOptions strict;
  strict.min_improvement_pct = 5;
  EXPECT_EQ(run(strict).rows(), 0u);
}

TEST_F(ExportTest, ProblemsWithoutATrustedBaselineGetNoRow) {
  // Rows measured before baselines were recorded (schema v3): nothing to compare with.
  Problem old = *Problem::parse("gemm:bias=0,dtype=bf16,k=4096,m=1,n=4096");
  ASSERT_TRUE(store->put_problem(old).ok());
  row(h200(), old, kB, Regime::kDeploy, 10);
  row(h200(), old, "kernel=a", Regime::kDeploy, 5);
  // The baseline failed the gate: reported, not trusted.
  Problem bad = tuned("gemm:bias=0,dtype=bf16,k=4096,m=2,n=4096", kB, {{"kernel=a", 5}});
  row(h200(), bad, kB, Regime::kDeploy, 0, Verdict::kWrongOutput,
      ErrorCheck{"max_rel_err", 0.5, 2e-2});
  ExportResult r = run();
  EXPECT_EQ(r.rows(), 0u);
  EXPECT_TRUE(r.table.ops.empty());
  EXPECT_TRUE(noted(r, old.text(), "no baseline recorded"));
  EXPECT_TRUE(noted(r, bad.text(), "no deploy-regime time that passed the gate"));
}

TEST_F(ExportTest, OpTablesPerOpAndDtypeAndOnlyThisDevicesRows) {
  tuned("gemm:bias=0,dtype=bf16,k=4096,m=1,n=4096", kB, {{kB, 10}, {"kernel=a", 5}});
  tuned("gemm:bias=0,dtype=fp16,k=4096,m=1,n=4096", kB, {{kB, 10}, {"kernel=a", 5}});
  tuned("rmsnorm:hidden=4096,rows=8", kB, {{kB, 10}, {"kernel=a", 5}});  // no dtype attribute
  tuned("gemm:bias=0,dtype=bf16,k=4096,m=2,n=4096", kB, {{kB, 10}, {"kernel=a", 5}}, a100());
  ExportResult r = run();
  ASSERT_EQ(r.table.ops.size(), 3u);
  EXPECT_NE(r.table.find("gemm", "bf16"), nullptr);
  EXPECT_NE(r.table.find("gemm", "fp16"), nullptr);
  EXPECT_NE(r.table.find("rmsnorm", kNoDtype), nullptr);
  EXPECT_EQ(r.table.find("gemm", "bf16")->rows.size(), 1u);  // the A100's m=2 is not here
  ExportResult other = run({}, a100());
  ASSERT_EQ(other.rows(), 1u);
  EXPECT_EQ(other.table.ops[0].rows[0].problem.text(), "gemm:bias=0,dtype=bf16,k=4096,m=2,n=4096");
  // What export writes, libattune-rt's loader reads back unchanged.
  const std::string path = dir.file("t.json");
  ASSERT_TRUE(save_table(r.table, path).ok());
  auto back = load_table(path);
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(to_json_text(*back), to_json_text(r.table));
}

// Four points of M in one bucket [1, 8]; the baseline takes 10 us at each.
struct BucketTest : ExportTest {
  std::string at(int m) {
    return "gemm:bias=0,dtype=bf16,k=4096,m=" + std::to_string(m) + ",n=4096";
  }
  void point(int m, std::map<std::string, double> deploy) {
    deploy[kB] = 10;
    tuned(at(m), kB, deploy);
  }
  ExportOptions one_bucket() {
    ExportOptions o;
    o.buckets = {{"", "m"}};
    o.bucket_edges = {8};
    return o;
  }
};

TEST_F(BucketTest, AConfigThatWinsOnAverageButLosesAtOnePointIsRefused) {
  // avg: by far the best mean (6.4 us) but 5% slower than the baseline at m=8.
  // safe: no slower anywhere, max regret 9/4 - 1 = 1.25 (at m=1, 2, 4).
  // balanced: no slower anywhere, max regret 6/4 - 1 = 0.5: the least.
  // partial: fastest at m=1, 2, 4 but never deploy-measured at m=8.
  point(1, {{"kernel=avg", 5}, {"kernel=safe", 9}, {"kernel=balanced", 6}, {"kernel=partial", 4}});
  point(2, {{"kernel=avg", 5}, {"kernel=safe", 9}, {"kernel=balanced", 6}, {"kernel=partial", 4}});
  point(4, {{"kernel=avg", 5}, {"kernel=safe", 9}, {"kernel=balanced", 6}, {"kernel=partial", 4}});
  point(8, {{"kernel=avg", 10.5}, {"kernel=safe", 9.5}, {"kernel=balanced", 9.9}});
  ExportResult r = run(one_bucket());
  ASSERT_EQ(r.table.ops.size(), 1u);
  const OpTable& t = r.table.ops[0];
  EXPECT_EQ(t.match.kind, MatchPolicy::Kind::kBucketed);
  EXPECT_EQ(t.match.axis, "m");
  EXPECT_NE(t.match.rule.find("no-harm"), std::string::npos) << t.match.rule;
  EXPECT_NE(t.match.rule.find("least maximum regret"), std::string::npos) << t.match.rule;
  ASSERT_EQ(t.rows.size(), 1u);
  const Row& row0 = t.rows[0];
  EXPECT_EQ(row0.config, "kernel=balanced");
  EXPECT_EQ(row0.problem.text(), "gemm:bias=0,dtype=bf16,k=4096,n=4096");
  ASSERT_TRUE(row0.bucket);
  EXPECT_EQ(row0.bucket->lo, 1);
  EXPECT_EQ(row0.bucket->hi, 8);
  EXPECT_EQ(row0.bucket->points, (std::vector<std::int64_t>{1, 2, 4, 8}));
  EXPECT_DOUBLE_EQ(row0.max_regret, 0.5);
  EXPECT_DOUBLE_EQ(row0.median_us, 6);  // at its worst-regret point, m=1
  EXPECT_DOUBLE_EQ(row0.baseline_us, 10);
  // Each point's time is in the table, so verify can check the runtime at every point.
  EXPECT_EQ(row0.bucket->point_us, (std::vector<double>{6, 6, 6, 9.9}));
  EXPECT_EQ(row0.bucket->baseline_point_us, (std::vector<double>{10, 10, 10, 10}));
  EXPECT_EQ(match(t, *Problem::parse(at(3))), &row0);
  EXPECT_EQ(match(t, *Problem::parse(at(9))), nullptr);
}

TEST_F(BucketTest, ABucketWithNoAdmissibleConfigIsSplitIntoItsWinningPoints) {
  point(1, {{"kernel=avg", 5}});
  point(2, {{"kernel=avg", 5}});
  point(4, {{"kernel=avg", 9.9}});  // a 1% win: within noise
  point(8, {{"kernel=avg", 10.5}});
  ExportResult r = run(one_bucket());
  ASSERT_EQ(r.table.ops.size(), 1u);
  const OpTable& t = r.table.ops[0];
  ASSERT_EQ(t.rows.size(), 2u);
  for (const Row& row0 : t.rows) {
    EXPECT_EQ(row0.config, "kernel=avg");
    EXPECT_EQ(row0.bucket->lo, row0.bucket->hi);
    EXPECT_EQ(row0.bucket->points, (std::vector<std::int64_t>{row0.bucket->lo}));
  }
  EXPECT_NE(match(t, *Problem::parse(at(1))), nullptr);
  EXPECT_NE(match(t, *Problem::parse(at(2))), nullptr);
  // Between and beyond the winning points the runtime runs the baseline.
  for (int m : {3, 4, 5, 8}) EXPECT_EQ(match(t, *Problem::parse(at(m))), nullptr) << m;
  EXPECT_TRUE(
      noted(r, "gemm:bias=0,dtype=bf16,k=4096,n=4096 m=[1, 8]", "split into single-point rows"));
  EXPECT_TRUE(noted(r, at(8), "baseline is the fastest"));
  EXPECT_TRUE(noted(r, at(4), "within noise"));
}

TEST_F(BucketTest, DefaultEdgesArePowersOfTwoAndPointsPastTheLastEdgeShareABucket) {
  for (int m : {1, 2, 16, 24}) point(m, {{"kernel=a", 5}});
  ExportOptions o;
  o.buckets = {{"gemm", "m"}};
  ExportResult r = run(o);
  ASSERT_EQ(r.rows(), 4u);
  std::vector<std::pair<std::int64_t, std::int64_t>> ranges;
  for (const Row& row0 : r.table.ops[0].rows) ranges.emplace_back(row0.bucket->lo, row0.bucket->hi);
  EXPECT_EQ(ranges, (std::vector<std::pair<std::int64_t, std::int64_t>>{
                        {1, 1}, {2, 2}, {9, 16}, {17, 32}}));

  o.bucket_edges = {4};
  r = run(o);
  ranges.clear();
  for (const Row& row0 : r.table.ops[0].rows) ranges.emplace_back(row0.bucket->lo, row0.bucket->hi);
  EXPECT_EQ(ranges, (std::vector<std::pair<std::int64_t, std::int64_t>>{{1, 4}, {5, 24}}));
  EXPECT_EQ(r.table.ops[0].rows[1].bucket->points, (std::vector<std::int64_t>{16, 24}));
}

TEST_F(BucketTest, AnAxisBucketsOnlyTheOpTablesWhoseProblemsAllCarryIt) {
  point(1, {{"kernel=a", 5}});
  tuned("rmsnorm:dtype=bf16,hidden=4096,rows=8", kB, {{kB, 10}, {"kernel=a", 5}});
  ExportResult r = run(one_bucket());
  EXPECT_EQ(r.table.find("gemm", "bf16")->match.kind, MatchPolicy::Kind::kBucketed);
  EXPECT_EQ(r.table.find("rmsnorm", "bf16")->match.kind, MatchPolicy::Kind::kExact);
  ASSERT_EQ(r.bucketed.size(), 1u);
  // Named for an op whose problems lack it: an error, not a silently exact table.
  ExportOptions o;
  o.buckets = {{"rmsnorm", "m"}};
  auto bad = export_table(*store, h200(), o);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().kind(), Error::Kind::kInvalidArgument);
  EXPECT_NE(bad.error().message().find("no integer attribute 'm'"), std::string::npos)
      << bad.error().message();
}

TEST(BucketSpecs, ParseAndRefuseWithOneClearReason) {
  EXPECT_EQ(parse_bucket_spec("m")->axis, "m");
  EXPECT_EQ(parse_bucket_spec("gemm:m")->op, "gemm");
  EXPECT_FALSE(parse_bucket_spec("gemm:").ok());
  EXPECT_FALSE(parse_bucket_spec(":m").ok());
  EXPECT_FALSE(parse_bucket_spec("m n").ok());
  EXPECT_EQ(*parse_bucket_edges("1,2,4,8"), (std::vector<std::int64_t>{1, 2, 4, 8}));
  EXPECT_NE(parse_bucket_edges("4,2").error().message().find("ascending"), std::string::npos);
  EXPECT_NE(parse_bucket_edges("1,x").error().message().find("'x' is not a positive integer"),
            std::string::npos);
  EXPECT_FALSE(parse_bucket_edges("0,4").ok());
  EXPECT_FALSE(parse_bucket_edges("").ok());
  EXPECT_FALSE(parse_bucket_edges("1,,2").ok());
}

}  // namespace
}  // namespace attune::table
