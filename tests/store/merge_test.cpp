// merge_stores (attune db merge): results copied between stores once, SQLite into SQLite, and
// SQLite into PostgreSQL and back; merging twice, or back where they came from, adds nothing.
#include "store/merge.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "support/postgres.h"
#include "support/store_rows.h"
#include "support/temp_dir.h"

namespace attune {
namespace {

using testing::TempDir;
using testing::TestDatabase;

std::unique_ptr<Store> open(const std::string& url) {
  auto s = open_store(url);
  EXPECT_TRUE(s.ok()) << s.error().message();
  return s.ok() ? std::move(*s) : nullptr;
}

// A store with two runs (the second resuming the first), three rows (one discarded, one with a
// NaN error), a problem with a payload and a baseline.
void fill(Store& s) {
  const DeviceFingerprint d = store_rows::device();
  Problem p = *Problem::parse("gemm:m=1,n=64,k=64");
  ASSERT_TRUE(s.put_device(d).ok());
  ASSERT_TRUE(s.put_problem(p, "recorded space").ok());
  auto a = s.begin_run({0, "tune", R"(["attune","tune"])", "mcts", 3});
  ASSERT_TRUE(a.ok());
  RunInfo again{0, "tune", R"(["attune","tune","again"])", "mcts", 3};
  again.resumes = *a;
  auto b = s.begin_run(again);
  ASSERT_TRUE(b.ok());
  ASSERT_TRUE(s.finish_run(*a, "interrupted").ok());
  ASSERT_TRUE(s.finish_run(*b, "done").ok());
  MeasurementRow first = store_rows::row(p, "t=1", 3.0);
  first.run_id = *a;
  ASSERT_TRUE(s.record(first).ok());
  MeasurementRow nan = store_rows::row(p, "t=2", 0);
  nan.run_id = *b;
  nan.outcome =
      Outcome{Verdict::kNonFinite, std::nullopt, ErrorCheck{"max_rel_err", NAN, 1e-5}, "NaN at 3"};
  ASSERT_TRUE(s.record(nan).ok());
  auto drifted = s.record(store_rows::row(p, "t=3", 9.0));
  ASSERT_TRUE(drifted.ok());
  ASSERT_TRUE(s.discard({*drifted}, "the anchor moved").ok());
  ASSERT_TRUE(
      s.put_baseline({d.key(), p.structural_key(), "sim", "t=1", first.config_hash, ""}).ok());
}

// Each row as (config, verdict, created_at, the command of its run).
std::vector<std::string> rows(Store& s) {
  std::map<std::int64_t, std::string> commands;
  const std::vector<RunInfo> runs = *s.runs();
  for (const auto& r : runs) commands[r.id] = r.arguments;
  std::vector<std::string> out;
  const std::vector<MeasurementRow> measured = *s.measurements({});
  for (const auto& r : measured)
    out.push_back(r.config + " " + std::string(to_string(r.outcome.verdict)) + " " + r.created_at +
                  " " + (r.run_id ? commands[r.run_id] : "-"));
  return out;
}

void expect_same_results(Store& a, Store& b) {
  EXPECT_EQ(rows(a), rows(b));
  EXPECT_EQ(a.runs()->size(), b.runs()->size());
  const std::string dev = store_rows::device().key();
  const std::string key = Problem::parse("gemm:m=1,n=64,k=64")->structural_key();
  auto problem = b.find_problem(key);
  ASSERT_TRUE(problem.ok() && problem->has_value());
  EXPECT_EQ((**problem).payload, "recorded space");
  auto baseline = b.find_baseline(dev, key, "sim");
  ASSERT_TRUE(baseline.ok() && baseline->has_value());
  EXPECT_EQ((**baseline).config, "t=1");
  // The resumed run still names the run it resumes, by its id in this store.
  const auto runs = *b.runs();
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[1].resumes, runs[0].id);
  EXPECT_EQ(runs[0].status, "interrupted");
}

TEST(MergeStores, CopiesEveryResultOnceAndTwiceAddsNothing) {
  TempDir dir;
  auto src = open(dir.file("laptop.db"));
  auto dst = open(dir.file("fleet.db"));
  ASSERT_TRUE(src && dst);
  fill(*src);
  auto n = merge_stores(*src, *dst);
  ASSERT_TRUE(n.ok()) << n.error().message();
  EXPECT_EQ(n->measurements_added, 2);  // the discarded row stays behind
  EXPECT_EQ(n->measurements_known, 0);
  EXPECT_EQ(n->runs_added, 2);
  EXPECT_EQ(n->baselines, 1);
  expect_same_results(*src, *dst);

  auto again = merge_stores(*src, *dst);
  ASSERT_TRUE(again.ok()) << again.error().message();
  EXPECT_EQ(again->measurements_added, 0);
  EXPECT_EQ(again->measurements_known, 2);
  EXPECT_EQ(again->runs_added, 0);
  auto back = merge_stores(*dst, *src);  // back where they came from
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(back->measurements_added, 0);
  EXPECT_EQ(back->runs_added, 0);
  expect_same_results(*src, *dst);
}

TEST(MergeStores, SqliteIntoPostgresqlAndBackKeepsEveryResultOnce) {
  TestDatabase db;
  ATTUNE_NEED_POSTGRES(db);
  TempDir dir;
  auto laptop = open(dir.file("laptop.db"));
  auto fleet = open(db.url());
  auto offline = open(dir.file("offline.db"));
  ASSERT_TRUE(laptop && fleet && offline);
  fill(*laptop);
  for (int i = 0; i < 2; ++i) {
    auto in = merge_stores(*laptop, *fleet);
    ASSERT_TRUE(in.ok()) << in.error().message();
    EXPECT_EQ(in->measurements_added, i == 0 ? 2 : 0);
    auto out = merge_stores(*fleet, *offline);
    ASSERT_TRUE(out.ok()) << out.error().message();
    EXPECT_EQ(out->measurements_added, i == 0 ? 2 : 0);
    EXPECT_EQ(out->runs_added, i == 0 ? 2 : 0);
  }
  expect_same_results(*laptop, *fleet);
  expect_same_results(*laptop, *offline);
  // What the fleet reads back is every field as written, a NaN error included.
  auto nan = (*fleet->measurements({}))[1];
  ASSERT_TRUE(nan.outcome.check);
  EXPECT_TRUE(std::isnan(nan.outcome.check->value));
  EXPECT_EQ(nan.outcome.message, "NaN at 3");
}

}  // namespace
}  // namespace attune
