#include "prior/prior.h"

#include <cmath>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace attune::prior {
namespace {

Space grid_space() {
  std::vector<Knob> knobs = {{"x", {1, 2, 3, 4, 5, 6, 7, 8}, 0},
                             {"y", {1, 2, 3, 4, 5, 6, 7, 8}, 0},
                             {"mode", {"a", "b", "c"}, 0}};
  return Space::make(std::move(knobs)).value();
}

// Fastest at x=6, y=3, mode=b; mode=c fails when x > 6.
std::optional<double> landscape(const Point& p) {
  if (p[2] == 2 && p[0] >= 6) return std::nullopt;
  double t =
      20 + 3 * std::pow(double(p[0]) - 5, 2) + std::pow(double(p[1]) - 2, 2) + (p[2] == 1 ? 0 : 8);
  return t;
}

Context ctx() {
  Problem problem("gemm", {{"m", "64"}, {"shape", "128x256"}, {"dtype", "bf16"}});
  DeviceFingerprint d;
  d.backend = "sim";
  d.name = "test";
  d.sm_count = 10;
  return make_context(problem, d);
}

Prior trained(PriorOptions o = {}) {
  Space s = grid_space();
  o.first_refit = 0;
  Prior p(o);
  for (auto e = s.enumerate(); auto pt = e.next();) {
    auto t = landscape(*pt);
    p.add(make_row(s, *pt, ctx(), t ? Verdict::kOk : Verdict::kLaunchFailed, t));
  }
  EXPECT_TRUE(p.fit().ok());
  return p;
}

TEST(Prior, ContextHasNumericProblemAndDeviceFeatures) {
  Context c = ctx();
  std::map<std::string, double> f(c.features.begin(), c.features.end());
  EXPECT_EQ(f["problem.m"], 64);
  EXPECT_EQ(f["problem.shape.0"], 128);
  EXPECT_EQ(f["problem.shape.1"], 256);
  EXPECT_EQ(f["problem.shape.product"], 128 * 256);  // the size as a whole
  EXPECT_EQ(f.count("problem.m.product"), 0u);
  EXPECT_EQ(f.count("problem.dtype"), 0u);
  EXPECT_EQ(f["device.sm_count"], 10);
  // Two devices with no numeric facts still differ by identity.
  ASSERT_EQ(f.count("device.id"), 1u);
  DeviceFingerprint other;
  other.backend = "sim";
  other.name = "other";
  auto g = make_context(Problem("gemm", {{"m", "64"}}), other);
  std::map<std::string, double> gf(g.features.begin(), g.features.end());
  EXPECT_NE(gf["device.id"], f["device.id"]);
}

// A recorded space's digest is hex; one that reads as a number with a huge exponent overflows to
// inf, which XGBoost refuses ("Input data contains inf or nan"), and the prior could not train.
TEST(Prior, AHashThatReadsAsAnOverflowingNumberIsNoFeature) {
  auto c = make_context(Problem("replay", {{"recording", "8147e10293847561"}, {"rows", "16"}}),
                        DeviceFingerprint{});
  std::map<std::string, double> f(c.features.begin(), c.features.end());
  EXPECT_EQ(f.count("problem.recording"), 0u);
  EXPECT_EQ(f["problem.rows"], 16);
  for (const auto& [name, v] : c.features) EXPECT_TRUE(std::isfinite(v)) << name;
}

TEST(Prior, ColdPriorIsUniform) {
  Space s = grid_space();
  Prior p;
  EXPECT_FALSE(p.trained());
  EXPECT_EQ(p.child_scores(s, {}, {0, 1, 2, 3}, ctx()), std::vector<double>(4, 1.0));
  EXPECT_TRUE(p.fit().ok());  // too few rows: stays cold
  EXPECT_FALSE(p.trained());
}

TEST(Prior, SpearmanOfKnownOrders) {
  EXPECT_DOUBLE_EQ(spearman({1, 2, 3, 4}, {10, 20, 30, 40}), 1.0);
  EXPECT_DOUBLE_EQ(spearman({1, 2, 3, 4}, {4, 3, 2, 1}), -1.0);
  EXPECT_DOUBLE_EQ(spearman({1, 1, 1}, {1, 2, 3}), 0.0);
}

TEST(Prior, LearnsWhichForkLeadsToTheFastConfigs) {
  Space s = grid_space();
  Prior p = trained();
  ASSERT_TRUE(p.trained());
  EXPECT_FALSE(p.quarantined()) << "calibration " << p.calibration();
  EXPECT_GT(p.calibration(), 0.5);
  // Root fork (x): x=6 (index 5) should score best; x=1 worst.
  auto root = p.child_scores(s, {}, {0, 1, 2, 3, 4, 5, 6, 7}, ctx());
  auto best = std::max_element(root.begin(), root.end()) - root.begin();
  EXPECT_TRUE(best == 4 || best == 5 || best == 6) << best;
  EXPECT_GT(root[5], root[0]);
  // Last fork (mode) under x=6,y=3: b beats a and c.
  auto leaf = p.child_scores(s, {5, 2}, {0, 1, 2}, ctx());
  // The bound scorer (what mcts calls) agrees, also after the prior is moved.
  auto scorer = p.scorer(s, ctx());
  Prior moved = std::move(p);
  EXPECT_EQ(scorer({5, 2}, {0, 1, 2}), leaf);
  EXPECT_GT(leaf[1], leaf[0]);
  EXPECT_GT(leaf[1], leaf[2]);
}

// Rows of a prefill on one device and of a decode step on another part alike by the device and
// by the problem's sequence length. Asked about the prefill on the second device, the prior must
// follow the problem (the prefill's landscape), not the device it shares with the decode step:
// XGBoost breaks a tie of gains by column order, and the device's features come last.
TEST(Prior, APrefillOnAnotherDeviceFollowsTheProblemNotTheDevice) {
  Space s = Space::make({{"x",
                          {1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16,
                           17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32},
                          0}})
                .value();
  auto device = [](const char* name) {
    DeviceFingerprint d;
    d.backend = "replay";
    d.name = name;
    return d;
  };
  const Problem prefill("rope", {{"seq", "1024"}}), decode("rope", {{"seq", "1"}});
  const Context prefill_a = make_context(prefill, device("a")),
                decode_b = make_context(decode, device("b")),
                prefill_b = make_context(prefill, device("b"));
  PriorOptions o;
  o.first_refit = 0;
  Prior p(o);
  for (std::uint32_t x = 0; x < 32; ++x) {
    // The prefill is fastest at x = 32, the decode step at x = 1.
    p.add(make_row(s, {x}, prefill_a, Verdict::kOk, 10.0 + 5 * (31 - x)));
    p.add(make_row(s, {x}, decode_b, Verdict::kOk, 1.0 + 0.5 * x));
  }
  ASSERT_TRUE(p.fit().ok());
  ASSERT_TRUE(p.usable()) << "calibration " << p.calibration();
  auto v = p.predictor(s, prefill_b)({{0}, {31}});
  ASSERT_EQ(v.size(), 2u);
  EXPECT_LT(v[1], v[0]) << "x=32 " << v[1] << ", x=1 " << v[0];
}

// predictor(): the model's log time of full configs, ranking the fast one first; nothing from a
// cold prior, so a strategy falls back to its own means.
TEST(Prior, PredictorRanksFullConfigsAndIsEmptyWhenCold) {
  Space s = grid_space();
  Prior cold;
  EXPECT_TRUE(cold.predictor(s, ctx())({{5, 2, 1}}).empty());
  // Trained on one problem: predicting for that problem, no OTHER problem backs it.
  Prior one = trained();
  EXPECT_EQ(one.problems_like(s, ctx()), 0u);
  EXPECT_TRUE(one.predictor(s, ctx())({{5, 2, 1}}).empty());
  PriorOptions o;
  o.min_problems_to_predict = 0;
  Prior p = trained(o);
  auto predict = p.predictor(s, ctx());
  auto v = predict({{5, 2, 1}, {0, 7, 0}});
  ASSERT_EQ(v.size(), 2u);
  EXPECT_LT(v[0], v[1]);
  EXPECT_NEAR(v[0], std::log(*landscape({5, 2, 1})), 0.2);
  // Another problem of the same knobs sees one problem behind the prior; a space of other knobs
  // none.
  Context other = make_context(Problem("gemm", {{"m", "128"}}), DeviceFingerprint{});
  EXPECT_EQ(p.problems_like(s, other), 1u);
  Space renamed =
      Space::make({{"x", {1, 2}, 0}, {"z", {1, 2}, 0}, {"mode", {"a", "b"}, 0}}).value();
  EXPECT_EQ(p.problems_like(renamed, other), 0u);
}

TEST(Prior, NoiseIsQuarantinedAndScoresUniformly) {
  Space s = grid_space();
  PriorOptions o;
  o.first_refit = 0;
  Prior p(o);
  std::uint64_t x = 12345;
  for (auto e = s.enumerate(); auto pt = e.next();) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    double t = 1 + static_cast<double>(x >> 40) / double(1 << 24);
    p.add(make_row(s, *pt, ctx(), Verdict::kOk, t));
  }
  ASSERT_TRUE(p.fit().ok());
  EXPECT_TRUE(p.trained());
  EXPECT_TRUE(p.quarantined()) << "calibration " << p.calibration();
  EXPECT_EQ(p.child_scores(s, {}, {0, 1, 2}, ctx()), std::vector<double>(3, 1.0));
  EXPECT_TRUE(p.predictor(s, ctx())({{5, 2, 1}}).empty());
}

TEST(Prior, ReservoirIsBounded) {
  Space s = grid_space();
  PriorOptions o;
  o.reservoir = 50;
  o.first_refit = 0;
  Prior p(o);
  for (int i = 0; i < 3; ++i)
    for (auto e = s.enumerate(); auto pt = e.next();)
      p.add(make_row(s, *pt, ctx(), Verdict::kOk, 1.0));
  EXPECT_EQ(p.rows(), 50u);
}

TEST(Prior, RefitsOnlineOnItsSchedule) {
  Space s = grid_space();
  PriorOptions o;
  o.first_refit = 32;
  Prior p(o);
  std::uint64_t gen = p.generation();
  int added = 0;
  for (auto e = s.enumerate(); auto pt = e.next();) {
    auto t = landscape(*pt);
    p.add(make_row(s, *pt, ctx(), t ? Verdict::kOk : Verdict::kLaunchFailed, t));
    if (++added == 31) {
      EXPECT_EQ(p.generation(), gen);
    }
    if (added == 32) {
      EXPECT_EQ(p.generation(), gen + 1);
    }
    if (added == 95) {
      EXPECT_EQ(p.generation(), gen + 1);
    }  // next refit after 64 more
    if (added == 96) {
      EXPECT_EQ(p.generation(), gen + 2);
    }
  }
}

TEST(Prior, ALoadedPriorFollowsItsOwnRefitSchedule) {
  Space s = grid_space();
  Prior p = trained();  // trained with first_refit = 0
  PriorOptions online;
  online.first_refit = 16;
  auto q = Prior::load(p.save().value(), online);
  ASSERT_TRUE(q);
  std::uint64_t gen = q->generation();
  for (int i = 0; i < 15; ++i) q->add(make_row(s, {1, 1, 1}, ctx(), Verdict::kOk, 30.0));
  EXPECT_EQ(q->generation(), gen);  // not on every row
  q->add(make_row(s, {1, 1, 1}, ctx(), Verdict::kOk, 30.0));
  EXPECT_EQ(q->generation(), gen + 1);
}

TEST(Prior, CheckpointRoundTripsAndDamageIsRefused) {
  Space s = grid_space();
  Prior p = trained();
  auto c = p.save();
  ASSERT_TRUE(c) << c.error().message();
  EXPECT_FALSE(c->model.empty());
  EXPECT_EQ(c->rows, 192);
  auto q = Prior::load(*c);
  ASSERT_TRUE(q) << q.error().message();
  EXPECT_EQ(q->rows(), p.rows());
  EXPECT_EQ(q->quarantined(), p.quarantined());
  std::vector<Point> probe = {{}, {5}, {5, 2}, {5, 2, 1}, {0, 7, 2}};
  auto a = p.predict(s, probe, ctx());
  auto b = q->predict(s, probe, ctx());
  ASSERT_TRUE(a && b);
  for (std::size_t i = 0; i < probe.size(); ++i) EXPECT_FLOAT_EQ((*a)[i], (*b)[i]);

  Checkpoint bad = *c;
  bad.model = "{not a model";
  auto r = Prior::load(bad);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind(), Error::Kind::kCorrupt);
  bad = *c;
  bad.reservoir = "[]";
  EXPECT_FALSE(Prior::load(bad));
}

// The reservoir's version 2 keeps the device's features last in the schema; a version-1
// checkpoint (plain name order, saved before) still loads, and its next fit saves version 2.
TEST(Prior, ACheckpointInTheOldFeatureOrderStillLoads) {
  Space s = grid_space();
  auto c = trained().save();
  ASSERT_TRUE(c) << c.error().message();
  auto j = nlohmann::json::parse(c->reservoir);
  EXPECT_EQ(j.at("version"), 2);
  auto schema = j.at("schema").get<std::vector<std::string>>();
  ASSERT_EQ(schema.back().rfind("ctx:device.", 0), 0u) << schema.back();
  std::sort(schema.begin(), schema.end());  // version 1's order: "ctx:device.*" first
  j["schema"] = schema;
  Checkpoint wrong = *c;
  wrong.reservoir = j.dump();  // version 2 in version 1's order
  auto r = Prior::load(wrong);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind(), Error::Kind::kCorrupt);
  j["version"] = 1;
  Checkpoint old = *c;
  old.reservoir = j.dump();
  auto q = Prior::load(old);
  ASSERT_TRUE(q) << q.error().message();
  EXPECT_EQ(nlohmann::json::parse(q->save()->reservoir).at("version"), 1);
  ASSERT_TRUE(q->fit().ok());
  EXPECT_EQ(nlohmann::json::parse(q->save()->reservoir).at("version"), 2);
}

}  // namespace
}  // namespace attune::prior
