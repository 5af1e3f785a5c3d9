// attune sweep's rules on hand-built measurements: the grid and its order, no-harm refusals with
// the point that refused, the least max regret, the benefit gate, the noise-floor drop, the
// compression into a default and exceptions, the rows' text and their Table.
#include "table/sweep.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "table/bucket_rule.h"

namespace attune::table {
namespace {

// attention_decode's signature as its engineer describes it (not registered in this tree).
OpSignature attention() {
  OpSignature op;
  op.name = "attention_decode";
  op.sizes = {"batch", "kv", "head", "q_heads", "kv_heads", "q_len"};
  op.dtypes = {"bf16", "fp16"};
  op.max_size = 1 << 20;
  op.baseline_config = "split=1";
  op.sweep_defaults = {{"q_heads", "32"}, {"kv_heads", "8"}, {"q_len", "1"}};
  op.sweep_default_per = {"head"};
  return op;
}

// A small op with one size per role: bucket axis x, group size g, other size o.
OpSignature toy() {
  OpSignature op;
  op.name = "toy";
  op.sizes = {"x", "o", "g"};
  op.dtypes = {"bf16", "fp16"};
  op.max_size = 1 << 20;
  op.baseline_config = "c=base";
  op.sweep_default_per = {"g"};
  return op;
}

DeviceFingerprint dev() {
  return {"sim", "attune simulated GPU", "sim_90", 132, 80ull << 30};
}

TEST(SweepGrid, FlagsAndValues) {
  EXPECT_EQ(size_flag("q_heads"), "--q-heads");
  EXPECT_EQ(size_flag("batch"), "--batch");
  auto v = parse_size_values("--batch", "4,1,2", 100);
  ASSERT_TRUE(v) << v.error().message();
  EXPECT_EQ(*v, (std::vector<std::int64_t>{4, 1, 2}));  // the order given
  for (const char* bad : {"", "1,,2", "1,x", "0", "-1", "1,2,1", "101", "2.5"}) {
    auto r = parse_size_values("--batch", bad, 100);
    ASSERT_FALSE(r) << bad;
    EXPECT_NE(r.error().message().find("--batch"), std::string::npos) << r.error().message();
  }
}

TEST(SweepGrid, AttentionDecodeGridOrderAndDefaults) {
  auto g =
      make_grid(attention(), {"bf16", "fp16"},
                {{"head", {64, 128}}, {"kv", {512, 4096, 16384}}, {"batch", {1, 2, 4, 8, 16, 32}}});
  ASSERT_TRUE(g) << g.error().message();
  EXPECT_EQ(g->bucket.size, "batch");
  ASSERT_EQ(g->per.size(), 1u);
  EXPECT_EQ(g->per[0].size, "head");
  ASSERT_EQ(g->other.size(), 4u);
  EXPECT_EQ(g->other[0].size, "kv");
  EXPECT_EQ(g->other[1].values, (std::vector<std::int64_t>{32}));  // q_heads' default
  auto cells = grid_cells(*g);
  ASSERT_EQ(cells.size(), 2u * 2 * 3 * 6);
  // dtype outermost, then head, then kv, then batch innermost.
  EXPECT_EQ(cells[0].dtype, "bf16");
  EXPECT_EQ(cells[0].sizes.at("head"), 64);
  EXPECT_EQ(cells[0].sizes.at("kv"), 512);
  EXPECT_EQ(cells[0].sizes.at("batch"), 1);
  EXPECT_EQ(cells[1].sizes.at("batch"), 2);
  EXPECT_EQ(cells[6].sizes.at("kv"), 4096);
  EXPECT_EQ(cells[18].sizes.at("head"), 128);
  EXPECT_EQ(cells[36].dtype, "fp16");
  EXPECT_EQ(cells[0].sizes.at("q_len"), 1);
  EXPECT_EQ(cell_spec(*g, cells[0]),
            "attention_decode:dtype=bf16,batch=1,head=64,kv=512,kv_heads=8,q_heads=32,q_len=1");
}

TEST(SweepGrid, RefusalsNameTheFlag) {
  auto missing = make_grid(attention(), {}, {{"head", {64}}, {"batch", {1}}});
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message().find("needs --kv"), std::string::npos)
      << missing.error().message();
  auto unknown = make_grid(attention(), {}, {{"hidden", {64}}});
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message().find("no size 'hidden'"), std::string::npos);
  EXPECT_NE(unknown.error().message().find("--q-heads"), std::string::npos);
  auto dtype = make_grid(attention(), {"fp8"}, {{"head", {64}}, {"kv", {1}}, {"batch", {1}}});
  ASSERT_FALSE(dtype);
  EXPECT_NE(dtype.error().message().find("bf16, fp16"), std::string::npos);
  auto dflt = make_grid(attention(), {}, {{"head", {64}}, {"kv", {1}}, {"batch", {1}}});
  ASSERT_TRUE(dflt);
  EXPECT_EQ(dflt->dtypes, (std::vector<std::string>{"bf16"}));
}

TEST(SweepGrid, AnOpWithoutPerSizesGroupsByDtypeAlone) {
  OpSignature op = toy();
  op.sweep_default_per.clear();
  auto g = make_grid(op, {}, {{"x", {1, 2}}, {"o", {3}}, {"g", {7, 8}}});
  ASSERT_TRUE(g);
  EXPECT_TRUE(g->per.empty());
  ASSERT_EQ(g->other.size(), 2u);
  EXPECT_EQ(g->other[0].size, "o");
  EXPECT_EQ(g->other[1].size, "g");
}

TEST(NoiseFloor, TwoRootTwoTimesTheNinetiethPercentile) {
  EXPECT_EQ(noise_floor({}), 0);
  std::vector<double> n;
  for (int i = 1; i <= 10; ++i) n.push_back(0.001 * i);
  EXPECT_NEAR(noise_floor(n), 2 * std::sqrt(2.0) * 0.009, 1e-12);
}

// One bucket's point as the rule sees it.
TEST(BucketRule, NoHarmRefusalNamesItsPointAndLeastMaxRegretChooses) {
  std::vector<PointTimes> pts = {
      {1, 10, 6, {{"a", 6}, {"b", 7}, {"c", 6.5}, {"base", 10}}},
      {2, 10, 6, {{"a", 11}, {"b", 6.5}, {"c", 6}, {"base", 10}}},
  };
  auto d = least_max_regret(pts, {"a", "b", "c", "base"}, NoHarmRule{0.05, std::nullopt});
  ASSERT_TRUE(d.chosen);
  // a is 10% slower than the baseline at point 2; c's max regret (1/12) beats b's (1/6).
  EXPECT_EQ(d.chosen->config, "c");
  EXPECT_EQ(d.chosen->worst, 1);
  ASSERT_EQ(d.refused.size(), 1u);
  EXPECT_EQ(d.refused[0].config, "a");
  EXPECT_EQ(d.refused[0].point, 2);
  // Within the tolerance a is not refused.
  auto lenient = least_max_regret(pts, {"a"}, NoHarmRule{0.2, std::nullopt});
  EXPECT_TRUE(lenient.chosen);
  // Not measured at a point: refused there.
  pts[1].us.erase("b");
  auto m = least_max_regret(pts, {"b"}, NoHarmRule{});
  ASSERT_EQ(m.refused.size(), 1u);
  EXPECT_EQ(m.refused[0].point, 2);
}

// Builds cells of toy() for one dtype and g, o: times[config] per x.
struct Cells {
  SweepGrid grid;
  std::vector<CellTimes> cells;

  Cells(std::vector<std::int64_t> xs, std::vector<std::int64_t> os = {1},
        std::vector<std::int64_t> gs = {1}, std::vector<std::string> dtypes = {"bf16"}) {
    grid = *make_grid(toy(), dtypes, {{"x", xs}, {"o", os}, {"g", gs}});
  }
  // Adds a cell; winner is the fastest config.
  void add(const std::string& dtype, std::int64_t g, std::int64_t o, std::int64_t x,
           std::map<std::string, double> us, double noise = 0.001) {
    CellTimes c;
    c.cell = SweepCell{dtype, {{"x", x}, {"o", o}, {"g", g}}};
    c.problem = *Problem::parse(cell_spec(grid, c.cell));
    c.backend = "sim";
    c.baseline_config = "c=base";
    double best = 1e300;
    for (const auto& [cfg, t] : us) {
      c.configs[cfg] = ConfigTime{t, noise, {"max_abs_err", 1e-6, 1e-3}};
      if (t < best) {
        best = t;
        c.winner = cfg;
      }
    }
    cells.push_back(std::move(c));
  }
};

SweepRules fixed_floor(double f) {
  SweepRules r;
  r.noise_floor = f;
  return r;
}

std::size_t count(const SweepDecision& d, SweepNote::Kind k) {
  std::size_t n = 0;
  for (const auto& note : d.notes) n += note.kind == k;
  return n;
}

TEST(SweepRules, OneConfigEverywhereIsOneDefaultRowPerBucketCovered) {
  Cells c({1, 2, 3, 4});
  for (std::int64_t x : {1, 2, 3, 4}) c.add("bf16", 1, 1, x, {{"c=base", 10}, {"c=a", 8}});
  auto d = decide_rows(c.grid, c.cells, dev(), fixed_floor(0.01));
  ASSERT_EQ(d.rows.size(), 1u);
  const SweepRow& r = d.rows[0];
  EXPECT_EQ(r.kind, "default");
  EXPECT_EQ(r.config, "c=a");
  EXPECT_EQ(r.sizes, (std::map<std::string, std::int64_t>{{"g", 1}}));
  ASSERT_EQ(r.covers.size(), 3u);  // buckets [1,1] [2,2] [3,4]
  EXPECT_EQ(r.covers[2].lo, 3);
  EXPECT_EQ(r.covers[2].hi, 4);
  EXPECT_EQ(r.covers[2].points, (std::vector<std::int64_t>{3, 4}));
  EXPECT_EQ(r.measured, 4);
  EXPECT_DOUBLE_EQ(r.max_regret, 0);
  EXPECT_DOUBLE_EQ(r.median_us, 8);
  EXPECT_DOUBLE_EQ(r.baseline_us, 10);
}

TEST(SweepRules, BenefitGateKeepsASmallAggregateGainAtTheBaseline) {
  Cells c({3, 4});
  // 8% at 3, 1% at 4: summed 4.5% < 5%.
  c.add("bf16", 1, 1, 3, {{"c=base", 10}, {"c=a", 9.2}});
  c.add("bf16", 1, 1, 4, {{"c=base", 10}, {"c=a", 9.9}});
  auto d = decide_rows(c.grid, c.cells, dev(), fixed_floor(0.001));
  EXPECT_TRUE(d.rows.empty());
  bool gate = false;
  for (const auto& n : d.notes) gate = gate || n.text.find("benefit gate") != std::string::npos;
  EXPECT_TRUE(gate);
  // Without the gate the bucket has a row.
  SweepRules open = fixed_floor(0.001);
  open.min_gain_pct = 0;
  EXPECT_EQ(decide_rows(c.grid, c.cells, dev(), open).rows.size(), 1u);
}

TEST(SweepRules, APointUnderTheNoiseFloorGetsNoRowAndTheRangeStopsAtItsNeighbours) {
  Cells c({5, 6, 7, 8});
  c.add("bf16", 1, 1, 5, {{"c=base", 10}, {"c=a", 7}});
  c.add("bf16", 1, 1, 6, {{"c=base", 10}, {"c=a", 9.9}});  // 1% < the 2% floor
  c.add("bf16", 1, 1, 7, {{"c=base", 10}, {"c=a", 7}});
  c.add("bf16", 1, 1, 8, {{"c=base", 10}, {"c=a", 7}});
  auto d = decide_rows(c.grid, c.cells, dev(), fixed_floor(0.02));
  ASSERT_EQ(d.rows.size(), 1u);
  const auto& covers = d.rows[0].covers;
  ASSERT_EQ(covers.size(), 2u);
  EXPECT_EQ(covers[0].lo, 5);  // the bucket's own edge
  EXPECT_EQ(covers[0].hi, 5);  // stops at its point: 6 was dropped
  EXPECT_EQ(covers[1].lo, 7);
  EXPECT_EQ(covers[1].hi, 8);
  EXPECT_EQ(covers[1].points, (std::vector<std::int64_t>{7, 8}));
  EXPECT_EQ(count(d, SweepNote::Kind::kDropped), 1u);
  // The short-KV drop: a value of another size where nothing clears the floor has no row.
  Cells s({1}, {512, 4096});
  s.add("bf16", 1, 512, 1, {{"c=base", 10}, {"c=a", 9.95}});
  s.add("bf16", 1, 4096, 1, {{"c=base", 10}, {"c=a", 5}});
  SweepRules open = fixed_floor(0.02);
  open.min_gain_pct = 0;
  auto sd = decide_rows(s.grid, s.cells, dev(), open);
  ASSERT_EQ(sd.rows.size(), 1u);
  ASSERT_EQ(sd.rows[0].covers.size(), 1u);
  EXPECT_EQ(sd.rows[0].covers[0].sizes.at("o"), 4096);
}

TEST(SweepRules, NoHarmRefusalsAreNotedWithTheirPoint) {
  Cells c({3, 4});
  c.add("bf16", 1, 1, 3, {{"c=base", 10}, {"c=a", 5}, {"c=b", 6}});
  c.add("bf16", 1, 1, 4, {{"c=base", 10}, {"c=a", 12}, {"c=b", 6}});
  auto d = decide_rows(c.grid, c.cells, dev(), fixed_floor(0.01));
  ASSERT_EQ(d.rows.size(), 1u);
  EXPECT_EQ(d.rows[0].config, "c=b");
  bool named = false;
  for (const auto& n : d.notes)
    named = named || (n.kind == SweepNote::Kind::kRefused &&
                      n.text.find("c=a refused at x=4") != std::string::npos);
  EXPECT_TRUE(named);
}

TEST(SweepRules, CompressionADefaultAndAnExceptionWhereItsRegretIsHigh) {
  Cells c({1, 2, 4}, {1});
  // a is best at 1 and 2; at 4 a has 20% regret against b.
  c.add("bf16", 1, 1, 1, {{"c=base", 10}, {"c=a", 5}, {"c=b", 8}});
  c.add("bf16", 1, 1, 2, {{"c=base", 10}, {"c=a", 5}, {"c=b", 8}});
  c.add("bf16", 1, 1, 4, {{"c=base", 10}, {"c=a", 6}, {"c=b", 5}});
  auto d = decide_rows(c.grid, c.cells, dev(), fixed_floor(0.01));
  ASSERT_EQ(d.rows.size(), 2u);
  EXPECT_EQ(d.rows[0].kind, "default");
  EXPECT_EQ(d.rows[0].config, "c=a");
  EXPECT_EQ(d.rows[0].covers.size(), 2u);
  EXPECT_EQ(d.rows[1].kind, "exception");
  EXPECT_EQ(d.rows[1].config, "c=b");
  EXPECT_EQ(d.rows[1].sizes, (std::map<std::string, std::int64_t>{{"g", 1}, {"o", 1}}));
  ASSERT_EQ(d.rows[1].covers.size(), 1u);
  EXPECT_EQ(d.rows[1].covers[0].lo, 3);
  EXPECT_EQ(d.rows[1].covers[0].hi, 4);
  // Under a 25% threshold the default covers the bucket too.
  SweepRules loose = fixed_floor(0.01);
  loose.max_default_regret_pct = 25;
  auto l = decide_rows(c.grid, c.cells, dev(), loose);
  ASSERT_EQ(l.rows.size(), 1u);
  EXPECT_EQ(l.rows[0].covers.size(), 3u);
}

// A candidate that harms one point (slower than the baseline there) can still be the default of
// the rows it represents: which rows a default stands for is decided per bucket, so one bad point
// makes one exception row, not a group of exception rows.
TEST(SweepRules, TheDefaultIsTheCandidateThatRepresentsTheMostRows) {
  Cells c({1, 2, 4}, {1});
  c.add("bf16", 1, 1, 1, {{"c=base", 10}, {"c=a", 5}, {"c=b", 12}});
  c.add("bf16", 1, 1, 2, {{"c=base", 10}, {"c=a", 5}, {"c=b", 8}});
  c.add("bf16", 1, 1, 4, {{"c=base", 10}, {"c=a", 12}, {"c=b", 5}});
  auto d = decide_rows(c.grid, c.cells, dev(), fixed_floor(0.01));
  ASSERT_EQ(d.rows.size(), 2u);
  EXPECT_EQ(d.rows[0].kind, "default");
  EXPECT_EQ(d.rows[0].config, "c=a");
  EXPECT_EQ(d.rows[0].covers.size(), 2u);
  EXPECT_EQ(d.rows[1].kind, "exception");
  EXPECT_EQ(d.rows[1].config, "c=b");
  ASSERT_EQ(d.rows[1].covers.size(), 1u);
  EXPECT_EQ(d.rows[1].covers[0].lo, 3);
}

TEST(SweepRules, RowsComeInGridOrderSoShardsConcatenate) {
  // Two dtypes x two groups: the rows of each (dtype, g) alone are the whole run's, in order.
  auto fill = [](Cells& c, const std::vector<std::string>& dtypes, std::vector<std::int64_t> gs) {
    for (const auto& dt : dtypes)
      for (auto g : gs)
        for (std::int64_t x : {1, 2})
          c.add(dt, g, 1, x,
                {{"c=base", 10.0 * g},
                 {"c=a", 6.0 * g + x},
                 {"c=b", dt == "fp16" ? 5.0 * g : 9.0 * g}});
  };
  Cells whole({1, 2}, {1}, {1, 2}, {"bf16", "fp16"});
  fill(whole, {"bf16", "fp16"}, {1, 2});
  const std::string all = to_json_lines(decide_rows(whole.grid, whole.cells, dev(), {}).rows);
  std::string parts;
  for (const std::string dt : {"bf16", "fp16"})
    for (std::int64_t g : {1, 2}) {
      Cells one({1, 2}, {1}, {g}, {dt});
      fill(one, {dt}, {g});
      parts += to_json_lines(decide_rows(one.grid, one.cells, dev(), {}).rows);
    }
  EXPECT_FALSE(all.empty());
  EXPECT_EQ(parts, all);
}

TEST(SweepRows, JsonLinesRoundTripIntoATable) {
  Cells c({1, 2, 4}, {1, 2});
  for (std::int64_t o : {1, 2})
    for (std::int64_t x : {1, 2, 4})
      c.add("fp16", 1, o, x, {{"c=base", 10}, {"c=a", o == 1 ? 5 : 9.9}, {"c=b", 8}});
  auto d = decide_rows(c.grid, c.cells, dev(), fixed_floor(0.01));
  ASSERT_FALSE(d.rows.empty());
  const std::string text = to_json_lines(d.rows);
  auto back = parse_sweep_rows(text);
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_EQ(to_json_lines(*back), text);
  auto t = table_from_sweep_rows(*back, "test", "");
  ASSERT_TRUE(t) << t.error().message();
  EXPECT_EQ(t->device.key(), dev().key());
  const OpTable* ops = t->find("toy", "fp16");
  ASSERT_NE(ops, nullptr);
  EXPECT_EQ(ops->match.axis, "x");
  // A query inside a covered bucket finds its row; the runtime's miss elsewhere runs the base.
  const Row* hit = match(*ops, *Problem::parse("toy:dtype=fp16,g=1,o=1,x=3"));
  ASSERT_NE(hit, nullptr);
  EXPECT_EQ(hit->config, "c=a");
  // The cpp rows: one per cover.
  std::size_t covers = 0;
  for (const auto& r : d.rows) covers += r.covers.size();
  const std::string cpp = to_cpp_rows(d.rows);
  EXPECT_EQ(static_cast<std::size_t>(std::count(cpp.begin(), cpp.end(), '\n')), covers);
  EXPECT_NE(cpp.find("\"toy\", \"fp16\""), std::string::npos) << cpp;
  // Refusals: a foreign line, a newer version, two devices.
  EXPECT_FALSE(parse_sweep_rows("{\"format\":\"attune.table\"}\n"));
  std::string newer = text.substr(0, text.find('\n'));
  newer.replace(newer.find("\"version\":1"), 11, "\"version\":9");
  auto nv = parse_sweep_rows(newer);
  ASSERT_FALSE(nv);
  EXPECT_NE(nv.error().message().find("newer"), std::string::npos);
  auto rows = *back;
  rows.back().device.name = "another GPU";
  EXPECT_FALSE(table_from_sweep_rows(rows, "test", ""));
}

}  // namespace
}  // namespace attune::table
