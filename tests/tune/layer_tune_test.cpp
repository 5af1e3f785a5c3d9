// The two-level search on the sim: groupings scored by the sum of their kernels' best times,
// each distinct problem searched once (forms of one problem share it), an identical rerun
// answered from the store, and the same results on any number of devices.
#include "tune/layer_tune.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <set>

#include <gtest/gtest.h>

#include "backends/sim/sim_backend.h"
#include "core/hash.h"
#include "core/layer_problem.h"
#include "kernels/ops.h"
#include "store/store.h"
#include "support/scoped_env.h"
#include "support/temp_dir.h"

namespace attune {
namespace {

const graph::Form kSplit{"kernel", {"split"}, false};
const graph::Form kFused{"kernel", {"split"}, true};

KernelResult kernel(SimBackend& sim, const std::string& spec, graph::Form form = {}) {
  KernelResult k;
  auto p = sim.resolve(spec);
  EXPECT_TRUE(p) << spec;
  k.problem = *p;
  k.kernel.problem = *p;
  k.kernel.form = form;
  k.kernel.nodes = {spec};
  k.key = hex64(fnv1a64(k.problem.text() + "|" + form.text()));
  return k;
}

// A layer of an RMSNorm run twice, a GEMM and attention, split or fused: the two groupings
// share the norm and the GEMM, and the attention problem in two forms.
LayerTuneReport two_groupings(SimBackend& sim) {
  LayerTuneReport r;
  r.request.model.name = "test";
  r.request.layers = {0};
  r.request.shape = {false, 2, 256, 0};
  auto fp = sim.fingerprint();
  r.device = *fp;
  const std::string attention = "attention_prefill:seq=256,batch=2,head=128,q_heads=16,kv_heads=8";
  r.kernels = {kernel(sim, "rmsnorm:rows=512,hidden=1024"), kernel(sim, "gemm:m=512,n=4096,k=1024"),
               kernel(sim, attention, kSplit), kernel(sim, attention, kFused)};
  auto layer = [](std::size_t attention) {
    return std::vector<std::pair<std::size_t, std::string>>{
        {0, "input_norm"}, {1, "qkv_proj"}, {attention, "attention_scores"}, {0, "post_norm"}};
  };
  GroupingResult split{{{"attention", "split"}}, "", {{0, 2}, {1, 1}, {2, 1}}, layer(2), {}, ""};
  GroupingResult fused{{{"attention", "flash"}}, "", {{0, 2}, {1, 1}, {3, 1}}, layer(3), {}, ""};
  GroupingResult none{{{"attention", "other"}}, "no registered op 'add' for x", {}, {}, {}, ""};
  r.groupings = {split, fused, none};
  r.kernel_count = 8;
  r.assembled.layer = 0;
  return r;
}

struct LayerTuneTest : ::testing::Test {
  testing::TempDir dir;
  SimBackend sim;

  // Lanes of sims made by `make` (plain ones by default).
  LaneFactory lanes(
      const std::string& db, std::set<int> broken = {},
      std::function<std::unique_ptr<SimBackend>()> make = [] {
        return std::make_unique<SimBackend>();
      }) {
    return [db, broken, make](int device) -> Result<DeviceLane> {
      if (broken.count(device)) return Error::unsupported("device is broken");
      DeviceLane lane;
      lane.backend = make();
      ATTUNE_TRY(lane.backend->select_device(device));
      lane.runner = std::make_unique<InProcessRunner>(*lane.backend);
      ATTUNE_ASSIGN(lane.store, open_store(db));
      return lane;
    };
  }
  LayerTuneReport tune(const std::string& db, std::vector<int> devices, std::set<int> broken = {},
                       std::optional<double> time_limit_s = {}) {
    LayerTuneReport r = two_groupings(sim);
    TuneOptions o;
    o.seed = 5;
    o.time_limit_s = time_limit_s;
    Status st = tune_layers(r, devices, lanes(dir.file(db), broken), o);
    EXPECT_TRUE(st.ok()) << st.error().message();
    return r;
  }
};

TEST_F(LayerTuneTest, GroupingsAreScoredByTheSumOfTheirKernelsBestTimes) {
  const LayerTuneReport r = tune("a.db", {0});
  // Four kernels, three problems: the attention's split and fused forms share one search.
  EXPECT_EQ(r.problems_tuned, 3);
  for (const KernelResult& k : r.kernels) ASSERT_TRUE(k.best) << k.key << ": " << k.failure;
  EXPECT_EQ(r.kernels[2].best->config.rfind("kernel=split", 0), 0u) << r.kernels[2].best->config;
  EXPECT_EQ(r.kernels[3].best->config.rfind("kernel=wgmma", 0), 0u) << r.kernels[3].best->config;
  EXPECT_EQ(r.kernels[2].evaluated, r.kernels[3].evaluated);
  for (std::size_t g = 0; g < 2; ++g) {
    double sum = 0;
    for (const auto& [k, n] : r.groupings[g].kernels)
      sum += static_cast<double>(n) * *r.kernels[k].best->deploy_us;
    ASSERT_TRUE(r.groupings[g].total_us);
    EXPECT_DOUBLE_EQ(*r.groupings[g].total_us, sum);
  }
  EXPECT_FALSE(r.groupings[2].total_us);
  ASSERT_TRUE(r.winner);
  const std::size_t other = *r.winner == 0 ? 1 : 0;
  EXPECT_LE(*r.groupings[*r.winner].total_us, *r.groupings[other].total_us);
  // The winner's layer assembled: on the sim its chain takes the sum of its kernels' times, so
  // the gap is the measurement noise of the five timings.
  ASSERT_TRUE(r.assembled.measured) << r.assembled.note;
  EXPECT_EQ(r.assembled.kernels, 4);
  // The same kernel times summed in execution order rather than by kernel: equal up to rounding.
  ASSERT_TRUE(r.assembled.isolated_sum_us && r.groupings[*r.winner].total_us);
  EXPECT_DOUBLE_EQ(*r.assembled.isolated_sum_us, *r.groupings[*r.winner].total_us);
  ASSERT_TRUE(r.assembled.assembled_us && r.assembled.gap);
  EXPECT_DOUBLE_EQ(*r.assembled.gap, *r.assembled.assembled_us / *r.assembled.isolated_sum_us - 1);
  EXPECT_LT(std::abs(*r.assembled.gap), 0.05);
  EXPECT_FALSE(r.assembled.replayed);
  // Where the gap is: each kernel of the one layer, in execution order, alone and in the graph
  // (on the sim, the chain's time split in the proportions of its kernels' times).
  ASSERT_EQ(r.assembled.per_kernel.size(), 4u);
  double in_graph = 0;
  for (std::size_t i = 0; i < 4; ++i) {
    const auto& [k, role] = r.groupings[*r.winner].one_layer[i];
    const AssembledCheck::Kernel& pk = r.assembled.per_kernel[i];
    EXPECT_EQ(pk.role, role);
    EXPECT_EQ(pk.problem, r.kernels[k].problem.text());
    EXPECT_EQ(pk.isolated_us, *r.kernels[k].best->deploy_us);
    ASSERT_TRUE(pk.in_graph_us) << role;
    EXPECT_NEAR(*pk.in_graph_us / *r.assembled.assembled_us,
                pk.isolated_us / *r.assembled.isolated_sum_us, 0.05)
        << role;
    in_graph += *pk.in_graph_us;
  }
  EXPECT_NEAR(in_graph, *r.assembled.assembled_us, 1e-9 * in_graph);
}

TEST_F(LayerTuneTest, TheAssembledLayerRunsTheWinnersConfigs) {
  const LayerTuneReport r = tune("a.db", {0});
  ASSERT_TRUE(r.winner && r.assembled.measured) << r.assembled.note;
  // Its problem in the store names each kernel of the winner with the config it chose.
  auto store = open_store(dir.file("a.db"));
  ASSERT_TRUE(store);
  auto fp = sim.fingerprint();
  std::vector<LayerStep> steps;
  for (const auto& [k, role] : r.groupings[*r.winner].one_layer)
    steps.push_back({role, r.kernels[k].problem, *Config::parse(r.kernels[k].best->config)});
  auto problem = layer_problem(steps);
  ASSERT_TRUE(problem) << problem.error().message();
  MeasurementQuery q;
  q.problem = problem->structural_key();
  q.device_key = fp->key();
  q.regime = Regime::kDeploy;
  auto rows = (*store)->measurements(q);
  ASSERT_TRUE(rows) << rows.error().message();
  ASSERT_EQ(rows->size(), 1u);
  ASSERT_TRUE(rows->front().outcome.measurement);
  EXPECT_DOUBLE_EQ(rows->front().outcome.measurement->median_us, *r.assembled.assembled_us);
}

// A sim that records what the tuner hands to its builds, as the CUDA backend compiles ahead.
struct PrefetchingSim : SimBackend {
  std::shared_ptr<std::vector<std::string>> prepared;
  int prefetch_depth() const override { return 1; }
  void prepare(const Problem& problem, const Config& config) override {
    prepared->push_back(problem.text() + " " + config.text());
  }
  void drop_prepared() override { prepared->push_back("drop"); }
};

TEST_F(LayerTuneTest, EveryKernelsBaselineIsBuiltBeforeAnySearchStarts) {
  LayerTuneReport r = two_groupings(sim);
  auto prepared = std::make_shared<std::vector<std::string>>();
  TuneOptions o;
  o.seed = 5;
  auto recording = [prepared] {
    auto sim = std::make_unique<PrefetchingSim>();
    sim->prepared = prepared;
    return sim;
  };
  ASSERT_TRUE(tune_layers(r, {0}, lanes(dir.file("p.db"), {}, recording), o).ok());
  // Three problems: their three baselines first, then the searches' own proposals.
  ASSERT_GT(prepared->size(), 3u);
  std::vector<std::string> baselines;
  for (const std::size_t k : {0, 1, 2}) {
    auto space = sim.space(r.kernels[k].problem);
    ASSERT_TRUE(space);
    baselines.push_back(r.kernels[k].problem.text() + " " +
                        space->config(space->baseline()).text());
  }
  EXPECT_EQ(std::vector<std::string>(prepared->begin(), prepared->begin() + 3), baselines);
  // Each problem's search ends by dropping what it queued and did not reach: once per problem
  // (and once per form timed again in deploy), never before a search has handed anything over.
  const auto drops = std::count(prepared->begin(), prepared->end(), "drop");
  EXPECT_GE(drops, 3);
  EXPECT_NE(prepared->at(3), "drop");
  EXPECT_EQ(prepared->back(), "drop");
}

TEST(LayerTimeShare, TheLimitIsSharedByTheProblemsLeft) {
  EXPECT_DOUBLE_EQ(time_share(100, 0, 1, 10), 10);      // ten problems, one device
  EXPECT_DOUBLE_EQ(time_share(100, 40, 1, 3), 20);      // what earlier ones left unused goes on
  EXPECT_DOUBLE_EQ(time_share(100, 0, 4, 8), 50);       // four devices run four at a time
  EXPECT_DOUBLE_EQ(time_share(100, 90, 4, 2), 10);      // never past the limit
  EXPECT_DOUBLE_EQ(time_share(100, 120, 1, 2), 0.001);  // past it: the baseline alone
}

// The searches stop early enough for the assembled check to fit the limit: 5% of it, at least 1 s,
// at most 5 s, never more than a fifth.
TEST(LayerTimeShare, TheAssembledCheckHasItsReserve) {
  EXPECT_DOUBLE_EQ(check_reserve(30), 1.5);
  EXPECT_DOUBLE_EQ(check_reserve(10), 1);
  EXPECT_DOUBLE_EQ(check_reserve(600), 5);
  EXPECT_DOUBLE_EQ(check_reserve(2), 0.4);
}

TEST(LayerTimeShare, HalfInEqualPartsHalfByWeight) {
  // Two problems left of weights 3 and 1: 100 x (1/4 + 3/8), then what is left all to the last.
  EXPECT_DOUBLE_EQ(time_share(100, 0, 1, 2, 3, 4), 62.5);
  EXPECT_DOUBLE_EQ(time_share(100, 62.5, 1, 1, 1, 1), 37.5);
  // A light one still gets half its equal part.
  EXPECT_DOUBLE_EQ(time_share(100, 0, 1, 2, 0, 4), 25);
  // Equal weights: equal parts, as with none.
  EXPECT_DOUBLE_EQ(time_share(100, 0, 1, 10, 2, 20), 10);
}

TEST(LayerTimeShare, AKernelWeighsWhatItIsLikelyToCost) {
  auto us = [](const std::string& spec) {
    auto p = Problem::parse(spec);
    EXPECT_TRUE(p) << spec;
    return estimated_us(*p);
  };
  // Qwen3-8B's decode step: the gate/up GEMM reads 201 MB of weights (67 us at 3 TB/s).
  const double gate_up = us("gemm:bias=0,dtype=bf16,k=4096,m=8,n=24576");
  EXPECT_NEAR(gate_up, 3 + 2.0 * (8 * 4096 + 24576.0 * 4096 + 8 * 24576) / 3e6, 1e-9);
  const double attention =
      us("attention_decode:batch=8,dtype=bf16,head=128,kv=2048,kv_heads=8,q_heads=32,q_len=1");
  const double norm = us("rmsnorm:dtype=bf16,hidden=4096,residual=1,rows=8");
  EXPECT_GT(gate_up, attention);
  EXPECT_GT(attention, 5 * norm);
  EXPECT_NEAR(norm, 3, 0.1);  // a launch, next to nothing moved
  // A prefill GEMM is bound by its arithmetic: 2 x 4096 x 4096 x 1024 at 600 TFLOP/s.
  EXPECT_NEAR(us("gemm:bias=0,dtype=bf16,k=1024,m=4096,n=4096"), 3 + 2.0 * 4096 * 4096 * 1024 / 6e8,
              1e-9);
  // Every op a layer lowers to has an estimate.
  for (const OpSignature* op : registered_ops()) EXPECT_TRUE(op->work) << op->name;
  // An op with none weighs a launch.
  EXPECT_DOUBLE_EQ(estimated_us(*Problem::parse("layer:x=1"),
                                [](std::string_view) -> const OpSignature* { return nullptr; }),
                   3);
}

TEST_F(LayerTuneTest, ATimeLimitBoundsTheWholeLayerAndEveryKernelStillGetsATime) {
  // So short that each problem's share runs out after its first candidate, the baseline: every
  // evaluation takes 2 ms more than the least share a late problem gets (1 ms), so on a fast
  // machine too attention's share does not cover a second candidate.
  std::optional<testing::ScopedEnv> slow(std::in_place, "ATTUNE_SIM_SLOW_DEVICE", "0:2");
  const LayerTuneReport r = tune("a.db", {0}, {}, 0.002);
  slow.reset();
  // Past its share each problem still measures its op's first guess, and nothing more: the
  // attention search's first guess is a flash config, so the fused form has a time too, its
  // grouping is scored, and it wins (on a cold compile cache a share can go on the baseline's
  // build alone, and a layer tuned only on baselines kept the split attention).
  for (const KernelResult& k : r.kernels) {
    EXPECT_EQ(k.stopped_by, "time_limit") << k.key;
    EXPECT_LE(k.evaluated, 2) << k.key;
  }
  for (std::size_t k : {0, 1, 2, 3}) ASSERT_TRUE(r.kernels[k].best) << r.kernels[k].failure;
  EXPECT_EQ(r.kernels[2].best->config.rfind("kernel=split", 0), 0u);
  EXPECT_EQ(r.kernels[3].best->config.rfind("kernel=wgmma", 0), 0u);
  EXPECT_TRUE(r.groupings[1].total_us);
  EXPECT_EQ(r.winner, 1u);
  EXPECT_TRUE(r.assembled.measured) << r.assembled.note;
  // Without the limit, the searches go on to their patience.
  const LayerTuneReport full = tune("b.db", {0});
  for (const KernelResult& k : full.kernels) EXPECT_NE(k.stopped_by, "time_limit") << k.key;
}

TEST_F(LayerTuneTest, AnIdenticalRerunLaunchesNothing) {
  const LayerTuneReport a = tune("a.db", {0});
  const LayerTuneReport b = tune("a.db", {0});
  for (std::size_t k = 0; k < a.kernels.size(); ++k) {
    EXPECT_GT(a.kernels[k].measured, 0);
    EXPECT_EQ(b.kernels[k].measured, 0) << b.kernels[k].key;
    EXPECT_GT(b.kernels[k].replayed, 0);
    EXPECT_EQ(b.kernels[k].best->config, a.kernels[k].best->config);
    EXPECT_EQ(b.kernels[k].best->deploy_us, a.kernels[k].best->deploy_us);
  }
  EXPECT_EQ(a.winner, b.winner);
  EXPECT_EQ(a.groupings[0].total_us, b.groupings[0].total_us);
  // The assembled layer too is answered from the store.
  ASSERT_TRUE(b.assembled.measured) << b.assembled.note;
  EXPECT_TRUE(b.assembled.replayed);
  EXPECT_EQ(b.assembled.assembled_us, a.assembled.assembled_us);
  // The store keeps the total, not the kernels' times in the graph.
  ASSERT_EQ(b.assembled.per_kernel.size(), a.assembled.per_kernel.size());
  for (const AssembledCheck::Kernel& k : b.assembled.per_kernel) EXPECT_FALSE(k.in_graph_us);
}

void expect_same_results(const LayerTuneReport& a, const LayerTuneReport& b) {
  ASSERT_EQ(a.kernels.size(), b.kernels.size());
  for (std::size_t k = 0; k < a.kernels.size(); ++k) {
    ASSERT_TRUE(a.kernels[k].best && b.kernels[k].best);
    EXPECT_EQ(a.kernels[k].best->config, b.kernels[k].best->config) << k;
    EXPECT_EQ(a.kernels[k].best->deploy_us, b.kernels[k].best->deploy_us) << k;
    EXPECT_EQ(a.kernels[k].evaluated, b.kernels[k].evaluated) << k;
  }
  for (std::size_t g = 0; g < a.groupings.size(); ++g)
    EXPECT_EQ(a.groupings[g].total_us, b.groupings[g].total_us) << g;
  EXPECT_EQ(a.winner, b.winner);
}

TEST_F(LayerTuneTest, ResultsAreTheSameOnAnyNumberOfDevices) {
  testing::ScopedEnv devices("ATTUNE_SIM_DEVICES", "3");
  const LayerTuneReport one = tune("one.db", {0});
  const LayerTuneReport three = tune("three.db", {0, 1, 2});
  expect_same_results(one, three);
  EXPECT_EQ(three.devices, (std::vector<int>{0, 1, 2}));
  for (const KernelResult& k : three.kernels) {
    EXPECT_GE(k.device, 0);
    EXPECT_LE(k.device, 2);
  }
  // A device whose lane cannot start leaves its kernels to the others.
  const LayerTuneReport without = tune("without.db", {0, 1, 2}, {1});
  expect_same_results(one, without);
  for (const KernelResult& k : without.kernels) EXPECT_NE(k.device, 1);
  // With no device able to tune, the run fails and says why.
  LayerTuneReport none = two_groupings(sim);
  Status st = tune_layers(none, {0, 1}, lanes(dir.file("none.db"), {0, 1}), TuneOptions{});
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("device is broken"), std::string::npos);
}

TEST_F(LayerTuneTest, PlanningRefusesWhatCannotBeLowered) {
  LayerRequest q;
  q.model = {"m", 1024, 3072, 16, 8, 128, 28, 1e-6, 1e6, true, std::nullopt, "bf16"};
  q.model_path = "m.json";
  q.shape = {false, 1, 128, 0};
  q.layers = {28};
  auto out_of_range = plan_layers(q, sim);
  ASSERT_FALSE(out_of_range);
  EXPECT_NE(out_of_range.error().message().find("--layer 28 is not a layer of m (0..27"),
            std::string::npos);
  // Without a RoPE family (neither the kernel nor the QKV GEMM's epilogue) nothing lowers, and
  // the refusal says which op is missing.
  q.layers = {0};
  auto no_rope = plan_layers(q, sim, [](std::string_view name) -> const OpSignature* {
    return name == "rope" || name == "gemm_rope" ? nullptr : find_op(name);
  });
  ASSERT_FALSE(no_rope);
  EXPECT_NE(no_rope.error().message().find("no registered op 'rope'"), std::string::npos)
      << no_rope.error().message();
}

// With the registered families, a Qwen3 layer's groupings lower on the sim; identical kernels of
// several layers and groupings are one, and every instance is counted.
TEST_F(LayerTuneTest, PlanningDedupesKernelsAcrossLayersAndGroupings) {
  if (!find_op("rope") || !find_op("silu_mul")) GTEST_SKIP() << "rope or silu_mul not registered";
  LayerRequest q;
  q.model = {"m", 1024, 3072, 16, 8, 128, 28, 1e-6, 1e6, true, std::nullopt, "bf16"};
  q.shape = {false, 1, 128, 0};
  q.layers = {0};
  auto one = plan_layers(q, sim);
  ASSERT_TRUE(one) << one.error().message();
  q.layers = {0, 1, 2};
  auto three = plan_layers(q, sim);
  ASSERT_TRUE(three) << three.error().message();
  std::int64_t lowered = 0, launches = 0;
  for (const GroupingResult& g : three->groupings)
    if (g.unavailable.empty()) {
      ++lowered;
      launches += g.launches();
    }
  ASSERT_GT(lowered, 0);
  EXPECT_EQ(three->kernel_count, launches);
  EXPECT_EQ(three->kernel_count, 3 * one->kernel_count);
  // Layers 1 and 2 add nothing new: their input norm adds a residual as the post-attention norm
  // does, which layer 0 already has.
  EXPECT_EQ(three->kernels.size(), one->kernels.size());
  std::set<std::string> keys;
  for (const KernelResult& k : three->kernels) EXPECT_TRUE(keys.insert(k.key).second) << k.key;
}

}  // namespace
}  // namespace attune
