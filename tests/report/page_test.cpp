#include "report/page.h"

#include <fstream>
#include <set>

#include <gtest/gtest.h>

#include "backends/runner.h"
#include "backends/sim/sim_backend.h"
#include "report/failures.h"
#include "store/sqlite/sqlite_store.h"
#include "support/temp_dir.h"
#include "tune/tuner.h"

namespace attune {
namespace {

using nlohmann::json;

// Two sim runs into one database: rmsnorm and two gemm shapes (a shape list), then rmsnorm again
// with another strategy and seed.
struct PageTest : ::testing::Test {
  testing::TempDir dir;
  SimBackend sim;
  InProcessRunner runner{sim};
  std::unique_ptr<SqliteStore> store = std::move(*SqliteStore::open(dir.file("t.db")));
  TuneReport first, second;

  void SetUp() override {
    TuneOptions o;
    o.seed = 1;
    o.max_candidates = 30;
    first = tune({"rmsnorm", "gemm:m=16,n=256,k=512", "gemm:m=64,n=512,k=256"}, o);
    o.strategy = "random";
    o.seed = 7;
    o.fresh_search = true;
    o.max_candidates = 60;
    second = tune({"rmsnorm"}, o);
  }

  TuneReport tune(const std::vector<std::string>& specs, const TuneOptions& o) {
    std::vector<Problem> ps;
    for (const auto& s : specs) ps.push_back(*sim.resolve(s));
    Tuner t(*store, sim, runner);
    auto r = t.run(ps, o);
    EXPECT_TRUE(r.ok()) << r.error().message();
    return *r;
  }

  json data(const PageSelection& sel = {}) {
    auto d = page_data(*store, sel);
    EXPECT_TRUE(d.ok()) << d.error().message();
    return d.ok() ? *d : json();
  }

  static const json& problem_named(const json& d, const std::string& spec) {
    for (const json& p : d["problems"])
      if (p["spec"] == spec) return p;
    ADD_FAILURE() << "no problem " << spec;
    static const json none;
    return none;
  }

  // Rows of one problem in one run and regime, straight from the store.
  std::vector<MeasurementRow> rows(const Problem& p, std::int64_t run, Regime regime) {
    MeasurementQuery q;
    q.problem = p.structural_key();
    q.regime = regime;
    auto all = store->measurements(q);
    EXPECT_TRUE(all.ok());
    std::vector<MeasurementRow> out;
    for (auto& r : *all)
      if (r.run_id == run) out.push_back(r);
    return out;
  }
};

TEST_F(PageTest, HasEverySectionAndAChartPerProblem) {
  json d = data();
  EXPECT_EQ(d["sections"], json({"overview", "problems", "shapes", "failures", "health"}));
  EXPECT_EQ(d["problems"].size(), 3u);
  EXPECT_EQ(d["runs"].size(), 2u);
  ASSERT_EQ(d["devices"].size(), 1u);
  EXPECT_EQ(d["devices"][0]["key"], sim.fingerprint()->key());
  EXPECT_TRUE(d["table"].is_null());
  std::set<std::string> ids;
  for (const json& c : d["charts"]) {
    EXPECT_TRUE(ids.insert(c["id"].get<std::string>()).second) << c["id"];
    // Every axis of every chart says what it measures.
    for (const auto& [name, a] : c["config"]["options"]["scales"].items())
      EXPECT_FALSE(a["title"]["text"].get<std::string>().empty()) << c["id"] << " " << name;
  }
  for (const json& p : d["problems"]) EXPECT_TRUE(ids.count("chart-" + p["id"].get<std::string>()));
  for (const char* id : {"chart-failures", "chart-clock", "chart-throttle", "chart-discarded"})
    EXPECT_TRUE(ids.count(id)) << id;

  const std::string page = render_page(d, "/* chart.js */");
  for (const json& s : d["sections"])
    EXPECT_NE(page.find("<section id=\"" + s.get<std::string>() + "\""), std::string::npos) << s;
  for (const auto& id : ids) EXPECT_NE(page.find("id=\"" + id + "\""), std::string::npos) << id;
  EXPECT_NE(page.find("/* chart.js */"), std::string::npos);
  EXPECT_EQ(page.find("http://"), std::string::npos);  // nothing fetched: it opens offline
  EXPECT_EQ(page.find("https://"), std::string::npos);
}

TEST_F(PageTest, BaselineWinnerAndSpeedupAreTheTunersDeployNumbers) {
  json d = data();
  for (const auto& p : first.problems) {
    const json& j = problem_named(d, p.problem.text());
    ASSERT_TRUE(p.best && p.baseline);
    // rmsnorm was tuned twice: its winner is the faster of both runs' bests.
    const ProblemReport* other = nullptr;
    for (const auto& q : second.problems)
      if (q.problem.structural_key() == p.problem.structural_key()) other = &q;
    const CandidateResult& best =
        other && other->best && *other->best->deploy_us < *p.best->deploy_us ? *other->best
                                                                             : *p.best;
    EXPECT_EQ(j["winner"]["config"], best.config);
    EXPECT_DOUBLE_EQ(j["winner"]["deploy_us"].get<double>(), *best.deploy_us);
    EXPECT_EQ(j["baseline"]["config"], p.baseline->config);
    EXPECT_DOUBLE_EQ(j["baseline"]["deploy_us"].get<double>(), *p.baseline->deploy_us);
    EXPECT_DOUBLE_EQ(j["speedup"].get<double>(), *p.baseline->deploy_us / *best.deploy_us);
    EXPECT_GT(j["speedup_noise"].get<double>(), 0);
  }
}

TEST_F(PageTest, EachRunsCurveEndsAtItsBestRankTimeAfterItsEvaluations) {
  json d = data();
  const Problem rms = *sim.resolve("rmsnorm");
  const json& j = problem_named(d, rms.text());
  ASSERT_EQ(j["curves"].size(), 2u);
  for (const json& c : j["curves"]) {
    const std::int64_t run = c["run"];
    auto rs = rows(rms, run, Regime::kRank);
    std::set<std::string> configs;
    double best = INFINITY;
    for (const auto& r : rs) {
      configs.insert(r.config);
      if (r.outcome.verdict == Verdict::kOk)
        best = std::min(best, r.outcome.measurement->median_us);
    }
    EXPECT_EQ(c["regime"], "rank");
    EXPECT_EQ(c["evaluations"].get<std::size_t>(), configs.size());
    EXPECT_DOUBLE_EQ(c["best_us"].get<double>(), best);
  }
  // The first run measured everything it evaluated (a fresh database).
  EXPECT_EQ(j["curves"][0]["run"], first.run_id);
  EXPECT_EQ(j["curves"][0]["evaluations"].get<std::int64_t>(), first.problems[0].measured);
  // The chart's lines: one per run, and the baseline.
  for (const json& c : d["charts"])
    if (c["id"] == "chart-" + j["id"].get<std::string>()) {
      EXPECT_EQ(c["config"]["data"]["datasets"].size(), 3u);
      EXPECT_EQ(c["config"]["options"]["scales"]["y"]["type"], "logarithmic");
    }
}

TEST_F(PageTest, ShapeListBarsAreSortedSpeedupsWithNoise) {
  json d = data();
  ASSERT_EQ(d["shapes"].size(), 1u);
  const json& s = d["shapes"][0];
  EXPECT_EQ(s["op"], "gemm");
  ASSERT_EQ(s["bars"].size(), 2u);
  EXPECT_GE(s["bars"][0]["speedup"].get<double>(), s["bars"][1]["speedup"].get<double>());
  for (const json& b : s["bars"]) {
    const json& p = problem_named(d, b["problem"]);
    EXPECT_EQ(b["speedup"], p["speedup"]);
    EXPECT_EQ(b["noise"], p["speedup_noise"]);
  }
}

TEST_F(PageTest, ARunShowsOnlyWhatItMeasured) {
  json d = data({second.run_id, ""});
  EXPECT_EQ(d["problems"].size(), 1u);
  EXPECT_EQ(d["runs"].size(), 1u);
  EXPECT_EQ(d["runs"][0]["id"], second.run_id);
  EXPECT_EQ(d["runs"][0]["strategy"], "random");
  ASSERT_EQ(d["problems"][0]["curves"].size(), 1u);
  EXPECT_EQ(d["problems"][0]["curves"][0]["run"], second.run_id);
  EXPECT_TRUE(d["shapes"].empty());
  json g = data({std::nullopt, "gemm"});
  EXPECT_EQ(g["problems"].size(), 2u);
}

TEST_F(PageTest, AnUnknownRunOrProblemNamesWhatTheDatabaseHas) {
  auto r = page_data(*store, {99, ""});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("no run 99"), std::string::npos) << r.error().message();
  EXPECT_NE(r.error().message().find("runs 1 to 2"), std::string::npos) << r.error().message();
  auto p = page_data(*store, {std::nullopt, "nosuch"});
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message().find("rmsnorm"), std::string::npos) << p.error().message();
}

// Failing and discarded rows written by hand: the failures are the `eval failures` groups, the
// discarded rows are counted with their reason and never win.
struct PageRowsTest : ::testing::Test {
  testing::TempDir dir;
  std::unique_ptr<SqliteStore> store = std::move(*SqliteStore::open(dir.file("t.db")));
  DeviceFingerprint device{"sim", "Sim", "sim_1", 4, 1 << 20};
  Problem problem = *Problem::parse("gemm:m=8,n=8,k=8");
  std::int64_t run = 0;

  void SetUp() override {
    ASSERT_TRUE(store->put_device(device).ok());
    ASSERT_TRUE(store->put_problem(problem).ok());
    RunInfo info;
    info.command = "tune";
    info.arguments = R"(["attune","tune"])";
    run = *store->begin_run(info);
  }

  std::int64_t put(const std::string& config, Verdict v, Regime regime, double us,
                   const std::string& message = "") {
    MeasurementRow r;
    r.run_id = run;
    r.device_key = device.key();
    r.problem_key = problem.structural_key();
    r.backend = "sim";
    r.config = config;
    r.config_hash = config;
    r.regime = regime;
    r.outcome.verdict = v;
    r.outcome.message = message;
    if (v == Verdict::kOk) {
      Measurement m;
      m.regime = regime;
      m.median_us = us;
      m.noise = 0.01;
      m.sm_clock_mhz = 1980;
      m.throttle = "none";
      r.outcome.measurement = m;
      r.outcome.check = ErrorCheck{"max_rel_err", 0, 1e-3};
    }
    return *store->record(r);
  }
};

TEST_F(PageRowsTest, FailuresAreTheEvalFailuresGroupsAndDiscardedRowsNeverWin) {
  ASSERT_TRUE(
      store->put_baseline({device.key(), problem.structural_key(), "sim", "b=0", "b=0", ""}).ok());
  put("b=0", Verdict::kOk, Regime::kRank, 10);
  put("b=0", Verdict::kOk, Regime::kDeploy, 10);
  put("b=1,v=2", Verdict::kCrashed, Regime::kRank, 0, "</script><script>alert(1)</script>");
  put("b=2,v=2", Verdict::kCrashed, Regime::kRank, 0, "signal 11");
  put("b=3,v=1", Verdict::kTimeout, Regime::kRank, 0, "2 s");
  put("b=4", Verdict::kOk, Regime::kDeploy, 8);
  const std::int64_t drifted = put("b=5", Verdict::kOk, Regime::kDeploy, 1);  // would win
  ASSERT_TRUE(store->discard({drifted}, "the anchor b=0 moved +40.0% (10.00 -> 14.00 us)").ok());
  auto d = page_data(*store, {});
  ASSERT_TRUE(d.ok()) << d.error().message();
  const json& p = (*d)["problems"][0];
  EXPECT_EQ(p["winner"]["config"], "b=4");
  EXPECT_DOUBLE_EQ(p["speedup"].get<double>(), 10.0 / 8.0);

  const auto groups = group_failures(*store->measurements({}));
  const json& f = (*d)["failures"];
  ASSERT_EQ(f["groups"].size(), groups.size());
  for (std::size_t i = 0; i < groups.size(); ++i) {
    EXPECT_EQ(f["groups"][i]["verdict"], std::string(to_string(groups[i].verdict)));
    EXPECT_EQ(f["groups"][i]["configs"], groups[i].configs);
  }
  EXPECT_EQ(f["by_verdict"], json({{"crashed", 2}, {"timeout", 1}}));
  EXPECT_EQ(f["groups"][0]["shared"], "v=2");

  const json& h = (*d)["health"];
  EXPECT_EQ(h["rows"], 7);
  EXPECT_EQ(h["discarded_rows"], 1);
  EXPECT_EQ(h["discarded"][0]["reason"], "the anchor b=0 moved +40.0% (10.00 -> 14.00 us)");
  EXPECT_EQ(h["throttle"], json({{"none", 4}}));
  EXPECT_EQ(h["clocked_rows"], 4);

  // A message cannot close the page's data element; the data reads back whole.
  const std::string page = render_page(*d, "");
  EXPECT_EQ(page.find("<script>alert(1)"), std::string::npos);
  const std::string open = "<script type=\"application/json\" id=\"attune-data\">";
  const auto at = page.find(open) + open.size();
  EXPECT_EQ(json::parse(page.substr(at, page.find("</script>", at) - at)), *d);
}

TEST(TableData, VerifyChecksAreRatiosOfMeasuredToRecorded) {
  TableEvidence e;
  e.path = "tuned/sim.json";
  table::OpTable op;
  op.op = "gemm";
  op.dtype = "bf16";
  table::Row row;
  row.problem = *Problem::parse("gemm:m=8,n=8,k=8");
  row.config = "b=4";
  row.median_us = 8;
  row.baseline_us = 10;
  op.rows.push_back(row);
  e.table.ops.push_back(op);
  e.verify = json{{"band", 0.1},
                  {"hits", 2},
                  {"misses", 0},
                  {"failing", 1},
                  {"rows",
                   {{{"row", 1},
                     {"problem", "gemm"},
                     {"recorded_us", 8.0},
                     {"measured_us", 9.6},
                     {"ok", false},
                     {"time_ok", false},
                     {"dispatch_ok", true}}}}};
  auto t = table_data(e);
  ASSERT_TRUE(t.ok()) << t.error().message();
  EXPECT_DOUBLE_EQ((*t)["rows"][0]["speedup"].get<double>(), 1.25);
  EXPECT_DOUBLE_EQ((*t)["verify"]["checks"][0]["ratio"].get<double>(), 1.2);
  EXPECT_EQ((*t)["verify"]["hits"], 2);
  e.verify = json{{"rows", json::array()}};
  auto bad = table_data(e);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("attune verify --json"), std::string::npos);
}

TEST(ChartJs, AMissingLibraryNamesTheDebianPackage) {
  auto r = read_chart_js("/nonexistent/chart.min.js");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("libjs-chart.js"), std::string::npos);
  testing::TempDir dir;
  std::ofstream(dir.file("x.js")) << "var a = '</script>';";
  EXPECT_FALSE(read_chart_js(dir.file("x.js")).ok());
  std::ofstream(dir.file("y.js")) << "var a = 1;";
  EXPECT_EQ(*read_chart_js(dir.file("y.js")), "var a = 1;");
}

}  // namespace
}  // namespace attune
