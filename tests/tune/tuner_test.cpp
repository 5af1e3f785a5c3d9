#include "tune/tuner.h"

#include <algorithm>
#include <atomic>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "backends/sim/sim_backend.h"
#include "core/op.h"
#include "platform/clock.h"
#include "prior/prior.h"
#include "store/sqlite/sqlite_store.h"
#include "support/temp_dir.h"

namespace attune {
namespace {

// rmsnorm and gemm on the sim cannot fault, so they run in-process here; faults go through
// workers in the CLI tests.
struct TunerTest : ::testing::Test {
  testing::TempDir dir;
  SimBackend sim;
  InProcessRunner runner{sim};
  std::unique_ptr<SqliteStore> store = std::move(*SqliteStore::open(dir.file("t.db")));

  ProblemReport tune(const std::string& problem, TuneOptions o) {
    Tuner t(*store, sim, runner);
    auto r = t.run({*sim.resolve(problem)}, o);
    EXPECT_TRUE(r.ok()) << r.error().message();
    return r->problems.at(0);
  }

  // mcts under a time limit, no patience, no anchor checks: what the time-limit tests vary.
  static TuneOptions timed_mcts(std::uint64_t seed, double time_limit_s) {
    TuneOptions o;
    o.strategy = "mcts";
    o.seed = seed;
    o.patience = 0;
    o.drift.anchor_every = 0;
    o.time_limit_s = time_limit_s;
    return o;
  }
  // A random search from scratch of at most `candidates` configs, no patience.
  static TuneOptions fresh_random_search(std::int64_t candidates) {
    TuneOptions o;
    o.strategy = "random";
    o.seed = 4;
    o.fresh_search = true;
    o.max_candidates = candidates;
    o.patience = 0;
    return o;
  }
};

TEST_F(TunerTest, SecondIdenticalRunMeasuresNothingAndReportsTheSame) {
  TuneOptions o;
  o.seed = 3;
  ProblemReport a = tune("rmsnorm", o);
  EXPECT_GT(a.measured, 0);
  EXPECT_EQ(a.replayed, 0);
  ProblemReport b = tune("rmsnorm", o);
  EXPECT_EQ(b.measured, 0);
  EXPECT_EQ(b.replayed, a.evaluated);
  EXPECT_EQ(b.evaluated, a.evaluated);
  ASSERT_TRUE(a.best && b.best);
  EXPECT_EQ(a.best->config, b.best->config);
  EXPECT_EQ(a.best->deploy_us, b.best->deploy_us);
  EXPECT_EQ(a.speedup, b.speedup);
}

TEST_F(TunerTest, BaselineFirstAndBestIsTheFastestDeployTime) {
  TuneOptions o;
  o.strategy = "grid";
  o.patience = 0;
  ProblemReport r = tune("rmsnorm", o);
  EXPECT_EQ(r.evaluated, static_cast<std::int64_t>(r.space_size));
  EXPECT_EQ(r.stopped_by, "exhausted");
  ASSERT_TRUE(r.baseline && r.baseline->deploy_us);
  EXPECT_EQ(r.baseline->config, "threads=256,rows_per_block=1,vec=1,unroll=1");
  // Exhaustive search finds the landscape's optimum (noise is ~1%, optimum gaps are larger).
  auto opt = sim.optimum(*sim.resolve("rmsnorm"));
  EXPECT_EQ(r.best->config, opt->first.text());
  EXPECT_NEAR(r.speedup, *r.baseline->deploy_us / *r.best->deploy_us, 1e-12);
  // Every row the store holds is one of this run's.
  auto rows = store->measurements({});
  EXPECT_GE(rows->size(), r.space_size);
}

TEST_F(TunerTest, RecordsEachProblemsBaselineConfigInTheStore) {
  TuneOptions o;
  o.max_candidates = 4;
  Problem p = *sim.resolve("rmsnorm");
  ProblemReport r = tune("rmsnorm", o);
  ASSERT_TRUE(r.baseline);
  auto b = store->find_baseline(sim.fingerprint()->key(), p.structural_key(), "sim");
  ASSERT_TRUE(b.ok() && b->has_value());
  EXPECT_EQ((**b).config, r.baseline->config);
  EXPECT_EQ((**b).config, "threads=256,rows_per_block=1,vec=1,unroll=1");
  // The baseline got a deploy-regime measurement: what an exported row is compared with.
  EXPECT_TRUE(r.baseline->deploy_us);
}

TEST_F(TunerTest, PatienceAndMaxCandidatesStopTheSearch) {
  TuneOptions o;
  o.patience = 5;
  ProblemReport r = tune("gemm", o);
  EXPECT_EQ(r.stopped_by, "patience");
  EXPECT_LT(r.evaluated, 200);
  TuneOptions m;
  m.max_candidates = 7;
  m.patience = 0;
  m.seed = 11;
  ProblemReport q = tune("gemm:m=8", m);
  EXPECT_EQ(q.evaluated, 7);
  EXPECT_EQ(q.stopped_by, "max_candidates");
}

// A warm start (attune sweep's): a problem of a group evaluates the winners of the group's
// problems tuned before it right after its baseline; a problem of no group starts cold.
TEST_F(TunerTest, AWarmStartEvaluatesTheGroupsEarlierWinnersFirst) {
  Tuner t(*store, sim, runner);
  Problem a = *sim.resolve("rmsnorm:rows=8,hidden=1024"),
          b = *sim.resolve("rmsnorm:rows=64,hidden=1024"),
          c = *sim.resolve("rmsnorm:rows=512,hidden=1024");
  TuneOptions o;
  o.strategy = "random";
  o.seed = 5;
  o.fresh_search = true;
  o.max_candidates = 12;
  o.warm_start_groups = {{a.structural_key(), "h1024"}, {b.structural_key(), "h1024"}};
  auto r = t.run({a, b, c}, o);
  ASSERT_TRUE(r.ok()) << r.error().message();
  ASSERT_EQ(r->problems.size(), 3u);
  const ProblemReport &ra = r->problems[0], &rb = r->problems[1], &rc = r->problems[2];
  ASSERT_TRUE(ra.best && ra.baseline);
  ASSERT_NE(ra.best->config, ra.baseline->config) << "the first problem must find a winner";
  EXPECT_EQ(ra.warm_first, 0);  // nothing tuned before it
  ASSERT_GE(rb.results.size(), 2u);
  EXPECT_EQ(rb.results[0].config, rb.baseline->config);
  EXPECT_EQ(rb.results[1].config, ra.best->config);
  EXPECT_EQ(rb.warm_first, 1);
  EXPECT_EQ(rc.warm_first, 0);  // in no group
}

// The op's first guesses (OpSignature::seed_configs) come right after the baseline, before the
// strategy proposes: attention_decode at one sequence of 8 KV heads over a deep cache gets mma
// configs of 8 and 16 splits (64 and 128 blocks), the split count its search found late.
TEST_F(TunerTest, TheOpsFirstGuessesComeRightAfterTheBaseline) {
  TuneOptions o = fresh_random_search(6);
  ProblemReport r = tune(
      "attention_decode:batch=1,kv=16384,head=256,q_heads=32,kv_heads=8,q_len=1,dtype=bf16", o);
  ASSERT_TRUE(r.baseline);
  ASSERT_GE(r.results.size(), 4u);
  EXPECT_EQ(r.results[0].config, r.baseline->config);
  // At head 256, 8 warps of 16-key tiles do not fit a block's shared memory: 2 seeds of 4.
  EXPECT_EQ(r.seeded_first, 2);
  EXPECT_EQ(r.results[1].config,
            "kernel=mma,splits=8,kv_tile=16,warps=4,vec=8,q_rows=1,combine=cluster");
  EXPECT_EQ(r.results[2].config,
            "kernel=mma,splits=16,kv_tile=16,warps=4,vec=8,q_rows=1,combine=kernel");
  // A batch that fills the GPU alone starts from one split.
  ProblemReport wide = tune(
      "attention_decode:batch=32,kv=4096,head=128,q_heads=32,kv_heads=8,q_len=1,dtype=bf16", o);
  ASSERT_GE(wide.results.size(), 2u);
  EXPECT_EQ(wide.results[1].config,
            "kernel=mma,splits=1,kv_tile=16,warps=4,vec=8,q_rows=1,combine=kernel");
  // An op without first guesses goes from the baseline to the strategy, and so does grid, which
  // walks the space in its order.
  EXPECT_EQ(tune("rmsnorm", o).seeded_first, 0);
  o.strategy = "grid";
  ProblemReport grid =
      tune("attention_decode:batch=2,kv=8192,head=128,q_heads=32,kv_heads=8,q_len=1,dtype=bf16", o);
  EXPECT_EQ(grid.seeded_first, 0);
  ASSERT_GE(grid.results.size(), 2u);
  EXPECT_NE(grid.results[1].config,
            "kernel=mma,splits=4,kv_tile=16,warps=4,vec=8,q_rows=1,combine=cluster");
}

// A sim that records, in order, the builds the tuner hands over and the configs it runs.
struct RecordingSim : SimBackend {
  std::vector<std::string> log;
  int prefetch_depth() const override { return 1; }
  void prepare(const Problem&, const Config& config) override {
    log.push_back("prepare " + config.text());
  }
  Outcome execute(const Problem& problem, const Config& config, Regime regime) override {
    log.push_back("run " + config.text());
    return SimBackend::execute(problem, config, regime);
  }
};

// The first guesses' builds go to the backend before the baseline runs, so they compile side by
// side while it is timed, not each in turn as it is visited.
TEST_F(TunerTest, TheFirstGuessesAreBuiltBeforeTheBaselineRuns) {
  RecordingSim rec;
  InProcessRunner rec_runner{rec};
  Tuner t(*store, rec, rec_runner);
  TuneOptions o;
  o.strategy = "random";
  o.fresh_search = true;
  o.max_candidates = 3;
  o.patience = 0;
  auto r = t.run(
      {*rec.resolve(
          "attention_decode:batch=1,kv=16384,head=256,q_heads=32,kv_heads=8,q_len=1,dtype=bf16")},
      o);
  ASSERT_TRUE(r.ok()) << r.error().message();
  const ProblemReport& p = r->problems.at(0);
  ASSERT_EQ(p.seeded_first, 2);
  const auto first_run = std::find_if(rec.log.begin(), rec.log.end(),
                                      [](const std::string& e) { return e.rfind("run ", 0) == 0; });
  ASSERT_NE(first_run, rec.log.end());
  EXPECT_EQ(*first_run, "run " + p.baseline->config);
  const std::vector<std::string> before(rec.log.begin(), first_run);
  for (int i = 1; i <= 2; ++i)
    EXPECT_NE(std::find(before.begin(), before.end(), "prepare " + p.results[i].config),
              before.end())
        << p.results[i].config;
}

// gemm's first guesses are cuBLASLt's other heuristic ranks (no compile each), in rank order,
// every other knob at the baseline's value; silu_mul=1's cuBLASLt form runs the first rank only.
// Past one 128-row tile of M, the wgmma kernel's 128 x 256 tiles follow, with the TMA store and
// without, at the fewest tiles per block that leave one wave of ~132 blocks.
TEST(FirstGuesses, GemmTriesCublasLtsOtherRanks) {
  auto p = Problem::parse("gemm:m=4096,n=4096,k=1024,bias=0,dtype=bf16");
  ASSERT_TRUE(p);
  const OpSignature* op = find_op("gemm");
  ASSERT_TRUE(op && op->space);
  auto space = op->space(*p);
  ASSERT_TRUE(space) << space.error().message();
  std::vector<Config> guesses = first_guesses(*p, *space);
  ASSERT_EQ(guesses.size(), 9u);
  auto wgmma = [](const Config& c) {
    std::string out;
    for (const char* k : {"kernel", "wg_bm", "wg_bn", "wg_stages", "wg_tiles", "wg_tma_store"})
      out += c.get(k)->text() + " ";
    return out;
  };
  EXPECT_EQ(wgmma(guesses[7]), "wgmma 128 256 4 4 1 ");  // 512 tiles, 128 blocks
  EXPECT_EQ(wgmma(guesses[8]), "wgmma 128 256 4 4 0 ");
  guesses.resize(7);
  const Config base = space->config(space->baseline());
  for (std::size_t i = 0; i < guesses.size(); ++i) {
    EXPECT_EQ(guesses[i].get("kernel")->as_word(), "cublaslt");
    EXPECT_EQ(guesses[i].get("lt_algo")->as_int(), static_cast<std::int64_t>(i + 1));
    for (const auto& [name, value] : base.entries()) {
      if (name == "lt_algo") continue;
      EXPECT_EQ(*guesses[i].get(name), value) << name;
    }
  }
  auto silu = Problem::parse("gemm:m=4096,n=6144,k=1024,bias=0,silu_mul=1,dtype=bf16");
  ASSERT_TRUE(silu);
  const std::vector<Config> silu_guesses = first_guesses(*silu, *op->space(*silu));
  ASSERT_EQ(silu_guesses.size(), 2u);
  EXPECT_EQ(wgmma(silu_guesses[0]), "wgmma 128 256 4 6 1 ");  // 768 tiles, 128 blocks
  EXPECT_EQ(wgmma(silu_guesses[1]), "wgmma 128 256 4 6 0 ");
  // At 128 rows (the 1 x 128 layer) the wgmma kernel's three tile shapes after cuBLASLt's ranks,
  // each at the deepest ring that fits, split where its tiles are few (blocks up to 64).
  auto few = [](const Config& c) {
    std::string out;
    for (const char* k : {"wg_bm", "wg_bn", "wg_stages", "wg_split", "wg_tma_store"})
      out += c.get(k)->text() + " ";
    return out;
  };
  // The wgmma guesses of a problem (after cuBLASLt's ranks), and how many guesses in all.
  auto wgmma_guesses = [&](const char* spec, std::size_t* all) {
    auto p = Problem::parse(spec);
    std::vector<std::string> out;
    if (!p.ok()) return out;
    const std::vector<Config> g = first_guesses(*p, *op->space(*p));
    *all = g.size();
    for (const Config& c : g)
      if (c.get("kernel")->as_word() == "wgmma") out.push_back(few(c));
    return out;
  };
  std::size_t all = 0;
  EXPECT_EQ(wgmma_guesses("gemm:m=128,n=4096,k=1024,bias=0,dtype=bf16", &all),
            (std::vector<std::string>{"64 128 8 1 1 ", "64 64 8 1 1 ", "128 64 8 1 1 "}));
  EXPECT_EQ(all, 10u);  // 64 and 128 tiles: unsplit
  EXPECT_EQ(wgmma_guesses("gemm:m=128,n=1024,k=2048,bias=0,dtype=bf16", &all),
            (std::vector<std::string>{"64 128 8 4 0 ", "64 64 8 2 0 ", "128 64 8 4 0 "}));
  EXPECT_EQ(all, 10u);  // 16, 32 and 16 tiles: split to 64 blocks
  // Under SiLU * mul no cuBLASLt rank; a 64-wide tile's 32 output columns take no TMA store.
  EXPECT_EQ(wgmma_guesses("gemm:m=128,n=6144,k=1024,bias=0,silu_mul=1,dtype=bf16", &all),
            (std::vector<std::string>{"64 128 8 1 1 ", "64 64 8 1 0 ", "128 64 8 1 0 "}));
  EXPECT_EQ(all, 3u);
  // A K of three 64-wide tiles is not split (every split takes two), however few the tiles; at 64
  // rows the space refuses 128-row tiles.
  EXPECT_EQ(wgmma_guesses("gemm:m=64,n=128,k=192,bias=0,dtype=bf16", &all),
            (std::vector<std::string>{"64 128 8 1 1 ", "64 64 8 1 1 "}));
  // At the skinny kernels' rows, cuBLASLt's ranks alone.
  auto skinny = Problem::parse("gemm:m=16,n=4096,k=1024,bias=0,dtype=bf16");
  ASSERT_TRUE(skinny);
  EXPECT_EQ(first_guesses(*skinny, *op->space(*skinny)).size(), 7u);
  // An output row of 1030 bf16 is no 16-byte multiple, so no TMA store.
  auto odd = Problem::parse("gemm:m=4096,n=1030,k=1024,bias=0,dtype=bf16");
  ASSERT_TRUE(odd);
  const std::vector<Config> odd_guesses = first_guesses(*odd, *op->space(*odd));
  ASSERT_EQ(odd_guesses.size(), 8u);
  EXPECT_EQ(wgmma(odd_guesses[7]), "wgmma 128 256 4 2 0 ");  // 32 x 5 tiles: 80 blocks
  // A guess the space's constraints refuse is left out: at head 256, 8 warps of 16-key tiles do
  // not fit a block's shared memory, 2 of attention_decode's 4.
  auto decode = Problem::parse(
      "attention_decode:batch=1,kv=16384,head=256,q_heads=32,kv_heads=8,q_len=1,dtype=bf16");
  ASSERT_TRUE(decode);
  EXPECT_EQ(first_guesses(*decode, *find_op("attention_decode")->space(*decode)).size(), 2u);
  // An op without first guesses has none.
  auto norm = Problem::parse("rmsnorm:rows=128,hidden=1024,residual=0,dtype=bf16");
  ASSERT_TRUE(norm);
  EXPECT_TRUE(first_guesses(*norm, *find_op("rmsnorm")->space(*norm)).empty());
}

// A pin on a knob a first guess does not name holds in the guess instead of the baseline's
// value: with two blocks per SM pinned, head 64's one-consumer guess of short tiles (which leaves
// blocks_per_sm at the baseline's 1) is tried with two; a guess naming a pinned knob with another
// value is still left out.
TEST_F(TunerTest, APinOnAKnobTheGuessesDoNotNameKeepsThem) {
  TuneOptions o = fresh_random_search(10);
  o.pins = {{"blocks_per_sm", "2"}};
  const std::string spec =
      "attention_prefill:seq=512,batch=2,head=64,q_heads=32,kv_heads=8,dtype=bf16";
  ProblemReport r = tune(spec, o);
  EXPECT_EQ(r.seeded_first, 2);
  ASSERT_GE(r.results.size(), 3u);
  EXPECT_EQ(r.results[1].config,
            "kernel=wgmma,block_n=64,consumers=1,stages=4,overlap=1,blocks_per_sm=2");
  EXPECT_EQ(r.results[2].config,
            "kernel=wgmma,block_n=128,consumers=1,stages=3,overlap=1,blocks_per_sm=2");
  o.pins = {{"stages", "2"}};
  EXPECT_EQ(tune(spec, o).seeded_first, 0);
}

TEST_F(TunerTest, IdenticalProblemsAreTunedOnce) {
  Tuner t(*store, sim, runner);
  Problem a = *sim.resolve("rmsnorm"), b = *sim.resolve("rmsnorm:rows=4096");
  b.set_name("layer7.input_norm");
  TuneOptions o;
  o.max_candidates = 3;
  auto r = t.run({a, b}, o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->problems.size(), 1u);
}

}  // namespace
}  // namespace attune

namespace attune {
namespace {

TEST_F(TunerTest, MctsRepairIsTheDefaultPersistsItsTreeAndALaterRunContinues) {
  TuneOptions o;
  EXPECT_EQ(o.strategy, "mcts_repair");
  o.patience = 0;
  o.max_candidates = 20;
  ProblemReport first = tune("gemm", o);
  EXPECT_EQ(first.evaluated, 20);
  EXPECT_EQ(first.measured, 20);
  Problem p = *sim.resolve("gemm");
  auto nodes = store->search_nodes(sim.fingerprint()->key(), p.structural_key(), "mcts_repair");
  ASSERT_TRUE(nodes.ok());
  EXPECT_FALSE(nodes->empty());
  // A later run with a larger budget answers the first 20 from the store and measures only new
  // configs: nothing is measured twice.
  o.max_candidates = 35;
  ProblemReport second = tune("gemm", o);
  EXPECT_EQ(second.evaluated, 35);
  EXPECT_EQ(second.replayed, 20);
  EXPECT_EQ(second.measured, 15);
  MeasurementQuery q;
  q.regime = Regime::kRank;
  std::set<std::string> configs;
  auto rows = store->measurements(q);
  ASSERT_TRUE(rows.ok());
  for (const auto& r : rows.value())
    EXPECT_TRUE(configs.insert(r.config).second) << r.config << " measured twice";
}

}  // namespace
}  // namespace attune

namespace attune {
namespace {

// The device slows down by 40% for a while (ATTUNE_SIM_DRIFT in the worker-less sim): the anchor
// catches it, what was measured meanwhile is discarded and measured again, and the result is the
// one a quiet device gives.
TEST_F(TunerTest, AnchorDriftDiscardsAndRemeasures) {
  TuneOptions o;
  o.strategy = "grid";
  o.patience = 0;
  o.max_candidates = 40;
  o.drift.anchor_every = 5;
  ProblemReport quiet = tune("rmsnorm", o);
  EXPECT_EQ(quiet.drift_events, 0);
  EXPECT_EQ(quiet.discarded, 0);

  testing::TempDir other;
  auto drifting_store = std::move(*SqliteStore::open(other.file("d.db")));
  SimBackend drifting;
  InProcessRunner drifting_runner{drifting};
  ::setenv("ATTUNE_SIM_DRIFT", "12:30:1.4", 1);
  // The back-off waits on a fake clock: the default 1 s, doubling, without sleeping.
  platform::FakeClock clock;
  Tuner t(*drifting_store, drifting, drifting_runner, clock);
  auto r = t.run({*drifting.resolve("rmsnorm")}, o);
  ::unsetenv("ATTUNE_SIM_DRIFT");
  ASSERT_TRUE(r.ok()) << r.error().message();
  const ProblemReport& d = r->problems.at(0);
  EXPECT_GE(d.drift_events, 1);
  EXPECT_GT(d.discarded, 0);
  ASSERT_FALSE(clock.sleeps().empty());
  EXPECT_DOUBLE_EQ(clock.sleeps().front().count(), o.drift.backoff_s);
  for (std::size_t i = 1; i < clock.sleeps().size(); ++i)
    EXPECT_TRUE(clock.sleeps()[i] == 2 * clock.sleeps()[i - 1] ||
                clock.sleeps()[i] == clock.sleeps().front());
  EXPECT_EQ(d.evaluated, quiet.evaluated);
  ASSERT_TRUE(d.best && quiet.best);
  EXPECT_EQ(d.best->config, quiet.best->config);
  EXPECT_NEAR(*d.best->deploy_us, *quiet.best->deploy_us, 1e-9);
  // Discarded rows stay in the database but are never answered from it again.
  MeasurementQuery q;
  q.regime = Regime::kRank;
  auto rows = drifting_store->measurements(q);
  ASSERT_TRUE(rows.ok());
  for (const auto& row : rows.value()) {
    ASSERT_TRUE(row.outcome.measurement);
    auto same = store->find(sim.fingerprint()->key(), row.problem_key, "sim", Regime::kRank,
                            row.config_hash);
    ASSERT_TRUE(same.ok() && same->has_value()) << row.config;
    EXPECT_NEAR(row.outcome.measurement->median_us, (**same).outcome.measurement->median_us, 1e-9)
        << row.config;
  }
}

// A clock that records its sleeps and raises the interrupt flag at the first one: Ctrl-C while
// the tuner backs off after drift.
class InterruptingClock final : public platform::Clock {
 public:
  explicit InterruptingClock(std::atomic<bool>* flag) : flag_(flag) {}
  std::chrono::steady_clock::time_point now() const override { return now_; }
  void sleep_for(std::chrono::duration<double> d) override {
    slept += d.count();
    now_ += std::chrono::duration_cast<std::chrono::steady_clock::duration>(d);
    flag_->store(true);
  }
  double slept = 0;

 private:
  std::atomic<bool>* flag_;
  std::chrono::steady_clock::time_point now_{};
};

// An interrupt during the drift back-off ends the run at once (the back-off would wait up to a
// minute), closed as interrupted, with the drifted rows already discarded.
TEST_F(TunerTest, AnInterruptDuringTheDriftBackOffEndsTheRunAtOnce) {
  TuneOptions o;
  o.strategy = "grid";
  o.patience = 0;
  o.max_candidates = 40;
  o.drift.anchor_every = 5;
  std::atomic<bool> interrupted{false};
  o.interrupted = &interrupted;
  ::setenv("ATTUNE_SIM_DRIFT", "12:30:1.4", 1);
  InterruptingClock clock(&interrupted);
  Tuner t(*store, sim, runner, clock);
  auto r = t.run({*sim.resolve("rmsnorm")}, o);
  ::unsetenv("ATTUNE_SIM_DRIFT");
  // The report of what was done comes back, the problem stopped by the interrupt.
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_TRUE(r->interrupted);
  EXPECT_NE(r->interruption.find("interrupted while running"), std::string::npos)
      << r->interruption;
  ASSERT_EQ(r->problems.size(), 1u);
  EXPECT_EQ(r->problems[0].stopped_by, "interrupted");
  EXPECT_TRUE(r->problems[0].baseline);
  // One slice of the first 1 s wait, not the whole doubling back-off.
  EXPECT_GT(clock.slept, 0);
  EXPECT_LE(clock.slept, 0.1 + 1e-9);
  EXPECT_EQ(store->runs()->at(0).status, "interrupted");
}

// A runner on a fake clock: each candidate run costs `cost_s` of the tuner's time.
struct TimedRunner final : CandidateRunner {
  TimedRunner(CandidateRunner& inner, platform::FakeClock& clock, double cost_s)
      : inner(inner), clock(clock), cost_s(cost_s) {}
  Outcome run(const Problem& p, const Config& c, Regime r) override {
    clock.advance(std::chrono::duration<double>(cost_s));
    ++runs;
    return inner.run(p, c, r);
  }
  CandidateRunner& inner;
  platform::FakeClock& clock;
  double cost_s;
  int runs = 0;
};

// --time-limit: the run stops at the first candidate boundary past its limit, and every problem
// of the request is in the report; the time is shared, so the second problem is tuned too.
TEST_F(TunerTest, ATimeLimitEndsAtACandidateBoundaryWithEveryProblemReported) {
  platform::FakeClock clock;
  TimedRunner timed(runner, clock, 1.0);
  TuneOptions o;
  o.strategy = "grid";
  o.patience = 0;
  o.drift.anchor_every = 0;
  o.time_limit_s = 20;
  Tuner t(*store, sim, timed, clock);
  auto r = t.run({*sim.resolve("rmsnorm"), *sim.resolve("gemm"),
                  *sim.resolve("rmsnorm:hidden=512,rows=64,landscape=2")},
                 o);
  ASSERT_TRUE(r.ok()) << r.error().message();
  // Within the limit plus one candidate (its rank and deploy runs).
  EXPECT_LE(r->elapsed_s, 20 + 2 + 1e-9);
  EXPECT_GE(r->elapsed_s, 20 - 2);
  ASSERT_EQ(r->problems.size(), 3u);
  for (const ProblemReport& p : r->problems) {
    EXPECT_TRUE(p.started) << p.problem.name();
    EXPECT_EQ(p.stopped_by, "time_limit") << p.problem.name();
    EXPECT_GE(p.evaluated, 3) << p.problem.name();  // about a third of the time each
    EXPECT_TRUE(p.best) << p.problem.name();
  }
  EXPECT_EQ(store->runs()->back().status, "done");

  // A limit that is spent before a problem starts: it is reported as not started.
  platform::FakeClock clock2;
  TimedRunner slow(runner, clock2, 30.0);
  o.time_limit_s = 10;
  Tuner t2(*store, sim, slow, clock2);
  auto r2 =
      t2.run({*sim.resolve("rmsnorm:hidden=1024,rows=64,landscape=2"), *sim.resolve("gemm")}, o);
  ASSERT_TRUE(r2.ok()) << r2.error().message();
  ASSERT_EQ(r2->problems.size(), 2u);
  EXPECT_EQ(r2->problems[0].stopped_by, "time_limit");
  EXPECT_EQ(r2->problems[0].evaluated, 1);  // the baseline: a started problem gets that much
  EXPECT_FALSE(r2->problems[1].started);
  EXPECT_EQ(r2->problems[1].stopped_by, "time_limit");
  EXPECT_EQ(r2->problems[1].evaluated, 0);
}

// A share of the limit spent on the baseline alone (a cold compile cache) still measures the op's
// first guess, one candidate past the limit, and no more; a search that has measured anything
// besides its baseline stops at its limit as before.
TEST_F(TunerTest, ATimeLimitSpentOnTheBaselineStillMeasuresTheFirstGuess) {
  const std::string spec =
      "attention_prefill:seq=512,batch=2,head=64,q_heads=32,kv_heads=8,dtype=bf16";
  const Problem p = *sim.resolve(spec);
  platform::FakeClock clock;
  TimedRunner slow(runner, clock, 30.0);
  const TuneOptions o = timed_mcts(2, 10);
  auto r = Tuner(*store, sim, slow, clock).run({p}, o);
  ASSERT_TRUE(r.ok()) << r.error().message();
  const ProblemReport& a = r->problems.at(0);
  EXPECT_EQ(a.stopped_by, "time_limit");
  ASSERT_EQ(a.evaluated, 2);
  EXPECT_EQ(a.seeded_first, 1);
  const Space space = *sim.space(p);
  EXPECT_EQ(a.results[1].config, first_guesses(p, space).front().text());
  ASSERT_TRUE(a.best);
  EXPECT_EQ(a.best->config, a.results[1].config);  // the flash kernel, far ahead of the split one

  // A baseline within the share (8 s of 10) whose cost says the next candidate would not fit, as
  // the attention's on the fresh H100 (0.64 s of 0.88): the first guess is measured all the same,
  // and nothing after it.
  auto fresh = SqliteStore::open(dir.file("fresh.db"));
  ASSERT_TRUE(fresh.ok());
  platform::FakeClock clock2;
  TimedRunner slow2(runner, clock2, 4.0);
  auto r2 = Tuner(**fresh, sim, slow2, clock2).run({p}, o);
  ASSERT_TRUE(r2.ok()) << r2.error().message();
  EXPECT_EQ(r2->problems.at(0).evaluated, 2);
}

// A search does not start a candidate it does not expect to finish within its share of the
// limit (the median of its candidates' costs so far): with every candidate costing 1 s, a 10.5 s
// limit ends after 10 s, not at the first boundary past it (11 s).
TEST_F(TunerTest, ATimeLimitDoesNotStartACandidateThatWouldNotFinishInIt) {
  struct RankCost final : CandidateRunner {
    RankCost(CandidateRunner& inner, platform::FakeClock& clock) : inner(inner), clock(clock) {}
    Outcome run(const Problem& p, const Config& c, Regime r) override {
      if (r == Regime::kRank) clock.advance(std::chrono::duration<double>(1.0));
      return inner.run(p, c, r);
    }
    CandidateRunner& inner;
    platform::FakeClock& clock;
  };
  platform::FakeClock clock;
  RankCost timed(runner, clock);
  TuneOptions o;
  o.strategy = "grid";
  o.patience = 0;
  o.drift.anchor_every = 0;
  o.time_limit_s = 10.5;
  o.retime_best = 3;
  auto r = Tuner(*store, sim, timed, clock).run({*sim.resolve("gemm")}, o);
  ASSERT_TRUE(r.ok()) << r.error().message();
  const ProblemReport& p = r->problems.at(0);
  EXPECT_EQ(p.stopped_by, "time_limit");
  EXPECT_EQ(p.evaluated, 10);
  EXPECT_LE(r->elapsed_s, 10.5);
  // Deploy timings cost nothing here, so the search left them no time and the best three were
  // still timed again within the limit.
  EXPECT_EQ(p.retimed.size(), 3u);
}

// A replay is charged what its row cost when measured: an identical re-run with the same limit
// replays up to where the first run stopped and measures nothing, and a larger limit searches on
// (on the H200 a decode layer's re-run after `--time-limit 18` measured 291 new candidates).
TEST_F(TunerTest, AnIdenticalReRunWithTheSameTimeLimitMeasuresNothing) {
  TuneOptions o = timed_mcts(3, 12);
  const Problem p = *sim.resolve("gemm");
  platform::FakeClock clock;
  TimedRunner timed(runner, clock, 1.0);
  auto first = Tuner(*store, sim, timed, clock).run({p}, o);
  ASSERT_TRUE(first.ok()) << first.error().message();
  const ProblemReport& a = first->problems.at(0);
  EXPECT_EQ(a.stopped_by, "time_limit");
  EXPECT_GT(a.measured, 3);
  ASSERT_TRUE(a.best);

  platform::FakeClock clock2;
  TimedRunner timed2(runner, clock2, 1.0);
  auto again = Tuner(*store, sim, timed2, clock2).run({p}, o);
  ASSERT_TRUE(again.ok()) << again.error().message();
  const ProblemReport& b = again->problems.at(0);
  EXPECT_EQ(timed2.runs, 0);
  EXPECT_EQ(b.measured, 0);
  EXPECT_EQ(b.evaluated, a.evaluated);
  EXPECT_EQ(b.stopped_by, "time_limit");
  ASSERT_TRUE(b.best);
  EXPECT_EQ(b.best->config, a.best->config);

  // Twice the limit: the replays take the first 12 s, the rest goes to new candidates.
  o.time_limit_s = 24;
  platform::FakeClock clock3;
  TimedRunner timed3(runner, clock3, 1.0);
  auto more = Tuner(*store, sim, timed3, clock3).run({p}, o);
  ASSERT_TRUE(more.ok()) << more.error().message();
  EXPECT_GT(more->problems.at(0).measured, 3);
  EXPECT_GE(more->problems.at(0).replayed, a.evaluated);
  EXPECT_LE(clock3.now() - platform::FakeClock().now(), std::chrono::seconds(12 + 2));
}

// After the search the configs with the best deploy times are timed again and keep the new
// times: a runner whose second deploy timing of a config reads 10% slower (as the minimum of many
// noisy timings reads low) moves every re-timed config's time, the report's best among them. The
// first rows stay in the database as discarded; an identical re-run measures nothing, times
// nothing again and reports the same best; with --retime-best 0 nothing is timed again.
TEST_F(TunerTest, TheBestFewAreTimedAgainAfterTheSearchAndKeepTheNewTimes) {
  struct SlowerTheSecondTime final : CandidateRunner {
    explicit SlowerTheSecondTime(CandidateRunner& inner) : inner(inner) {}
    Outcome run(const Problem& p, const Config& c, Regime r) override {
      Outcome o = inner.run(p, c, r);
      if (r == Regime::kDeploy && !seen.insert(c.text()).second && o.measurement)
        o.measurement->median_us *= 1.1;
      if (r == Regime::kDeploy) ++deploys;
      return o;
    }
    CandidateRunner& inner;
    std::set<std::string> seen;
    int deploys = 0;
  };
  TuneOptions o = fresh_random_search(25);
  o.drift.anchor_every = 0;
  o.retime_best = 3;
  const Problem gemm = *sim.resolve("gemm");
  SlowerTheSecondTime slower(runner);
  auto r = Tuner(*store, sim, slower).run({gemm}, o);
  ASSERT_TRUE(r.ok()) << r.error().message();
  const ProblemReport& p = r->problems.at(0);
  ASSERT_GE(p.retimed.size(), 3u);
  std::map<std::string, double> again;
  for (const auto& t : p.retimed) {
    EXPECT_NEAR(t.again_us, 1.1 * t.first_us, 1e-9 * t.first_us) << t.config;
    again[t.config] = t.again_us;
  }
  ASSERT_TRUE(p.best);
  ASSERT_TRUE(again.count(p.best->config));
  EXPECT_EQ(*p.best->deploy_us, again[p.best->config]);
  // Nothing outside the re-timed ones is faster than the best's new time.
  for (const CandidateResult& c : p.results)
    if (c.verdict == Verdict::kOk && c.deploy_us && !again.count(c.config)) {
      EXPECT_GE(*c.deploy_us, *p.best->deploy_us) << c.config;
    }
  // In the database: each re-timed config's first deploy row discarded with the reason, its new
  // one live (what tables export).
  MeasurementQuery q;
  q.regime = Regime::kDeploy;
  q.include_discarded = true;
  auto rows = store->measurements(q);
  ASSERT_TRUE(rows.ok());
  std::map<std::string, int> discarded, live;
  for (const auto& row : *rows) {
    if (!again.count(row.config)) continue;
    if (row.discarded.empty()) {
      ++live[row.config];
      EXPECT_EQ(row.outcome.measurement->median_us, again[row.config]);
    } else {
      EXPECT_EQ(row.discarded, "re-timed after the search");
      ++discarded[row.config];
    }
  }
  for (const auto& [config, us] : again) {
    EXPECT_EQ(discarded[config], 1) << config;
    EXPECT_EQ(live[config], 1) << config;
  }

  // The same run again: answered from the store, nothing timed again.
  SlowerTheSecondTime fresh(runner);
  TuneOptions same = o;
  same.fresh_search = false;
  auto rerun = Tuner(*store, sim, fresh).run({gemm}, same);
  ASSERT_TRUE(rerun.ok()) << rerun.error().message();
  const ProblemReport& b = rerun->problems.at(0);
  EXPECT_EQ(fresh.deploys, 0);
  EXPECT_TRUE(b.retimed.empty());
  ASSERT_TRUE(b.best);
  EXPECT_EQ(b.best->config, p.best->config);
  EXPECT_EQ(*b.best->deploy_us, *p.best->deploy_us);

  // Off: one deploy row a config.
  testing::TempDir other;
  auto off_store = std::move(*SqliteStore::open(other.file("off.db")));
  SlowerTheSecondTime off_runner(runner);
  o.retime_best = 0;
  auto off = Tuner(*off_store, sim, off_runner).run({gemm}, o);
  ASSERT_TRUE(off.ok()) << off.error().message();
  EXPECT_TRUE(off->problems.at(0).retimed.empty());
  MeasurementQuery all;
  all.include_discarded = true;
  auto off_rows = off_store->measurements(all);
  ASSERT_TRUE(off_rows.ok());
  EXPECT_FALSE(off_rows->empty());
  for (const auto& row : *off_rows) EXPECT_TRUE(row.discarded.empty());
}

// On the H200 (limit 60 s), gemm m=3000 n=3072 k=3072 drifted at its first anchor check and its
// back-off ran into its deadline: every candidate, the baseline included, was dropped and the
// problem reported nothing. Out of time after drift, the baseline is measured again.
TEST_F(TunerTest, TimeRunningOutInTheBackOffStillReportsTheBaseline) {
  ::setenv("ATTUNE_SIM_DRIFT", "6:1000000:1.5", 1);
  platform::FakeClock clock;
  TimedRunner timed(runner, clock, 1.0);
  TuneOptions o;
  o.strategy = "grid";
  o.patience = 0;
  o.drift.anchor_every = 4;
  o.time_limit_s = 20;
  Tuner t(*store, sim, timed, clock);
  auto r = t.run({*sim.resolve("rmsnorm")}, o);
  ::unsetenv("ATTUNE_SIM_DRIFT");
  ASSERT_TRUE(r.ok()) << r.error().message();
  const ProblemReport& p = r->problems.at(0);
  EXPECT_EQ(p.stopped_by, "time_limit");
  EXPECT_GE(p.drift_events, 1);
  ASSERT_TRUE(p.baseline);
  EXPECT_EQ(p.baseline->verdict, Verdict::kOk);
  EXPECT_TRUE(p.best);
  // The limit, the anchor check under way (three readings) and the baseline again.
  EXPECT_LE(r->elapsed_s, 20 + 3 + 2 + 1e-9);
}

// The H200 case of issue 13 on the sim: an anchor with two levels 12% apart. The run finishes,
// reports the two levels, and the drift guard's back-off stays within its bound.
TEST_F(TunerTest, AnAnchorWithTwoLevelsIsReportedAndTheRunFinishes) {
  ::setenv("ATTUNE_SIM_TWO_LEVEL", "1.12", 1);
  platform::FakeClock clock;
  TuneOptions o;
  o.strategy = "grid";
  o.patience = 0;
  o.max_candidates = 80;
  o.drift.anchor_every = 4;
  Tuner t(*store, sim, runner, clock);
  auto r = t.run({*sim.resolve("rmsnorm")}, o);
  ::unsetenv("ATTUNE_SIM_TWO_LEVEL");
  ASSERT_TRUE(r.ok()) << r.error().message();
  const ProblemReport& p = r->problems.at(0);
  ASSERT_TRUE(p.anchor_levels) << "drift events " << p.drift_events;
  EXPECT_NEAR(p.anchor_levels->high_us / p.anchor_levels->low_us, 1.12, 0.02);
  EXPECT_EQ(p.stopped_by, "max_candidates");
  EXPECT_EQ(p.evaluated, 80);
  EXPECT_LE(p.drift_events, o.drift.max_rounds);
  EXPECT_LE(p.backoff_s, o.drift.max_wait_s);
  double slept = 0;
  for (auto d : clock.sleeps()) slept += d.count();
  EXPECT_LE(slept, o.drift.max_wait_s + 1e-9);
}

// A device that does not settle within the bound on back-off: the problem is reported unstable,
// its drifted candidates are dropped from the report, and the run goes on to the next problem.
TEST_F(TunerTest, ADeviceThatDoesNotSettleWithinTheBoundIsReportedUnstable) {
  ::setenv("ATTUNE_SIM_DRIFT", "12:1000000:1.5", 1);
  platform::FakeClock clock;
  TuneOptions o;
  o.strategy = "grid";
  o.patience = 0;
  o.max_candidates = 40;
  o.drift.anchor_every = 5;
  o.drift.max_wait_s = 3;  // 1 s, then 2 s, then the bound
  Tuner t(*store, sim, runner, clock);
  auto r = t.run({*sim.resolve("rmsnorm"), *sim.resolve("gemm")}, o);
  ::unsetenv("ATTUNE_SIM_DRIFT");
  ASSERT_TRUE(r.ok()) << r.error().message();
  const ProblemReport& p = r->problems.at(0);
  EXPECT_EQ(p.stopped_by, "unstable");
  EXPECT_NE(p.unstable.find("did not settle"), std::string::npos) << p.unstable;
  EXPECT_EQ(p.drift_events, 1);
  EXPECT_GT(p.discarded, 0);
  EXPECT_LT(p.evaluated, 20);  // the dropped candidates are not in the report
  double slept = 0;
  for (auto d : clock.sleeps()) slept += d.count();
  EXPECT_DOUBLE_EQ(slept, 3);
  EXPECT_DOUBLE_EQ(p.backoff_s, 3);
  ASSERT_EQ(r->problems.size(), 2u);
  EXPECT_TRUE(r->problems[1].started);
}

// Issue 13: 8 tuners of one problem on one database re-measured each other's configs 1,929
// times. Tuners claim a config before measuring it, so two at once split the grid: their union
// is the whole space, and no config is measured twice.
TEST_F(TunerTest, TwoTunersOfOneProblemSplitTheWorkWithoutMeasuringAnythingTwice) {
  TuneOptions o;
  o.strategy = "grid";
  o.patience = 0;
  o.drift.anchor_every = 0;
  std::vector<std::int64_t> measured(2);
  std::vector<std::thread> tuners;
  for (int i = 0; i < 2; ++i)
    tuners.emplace_back([&, i] {
      auto own = std::move(*SqliteStore::open(dir.file("t.db")));
      SimBackend b;
      InProcessRunner r{b};
      Tuner t(*own, b, r);
      auto rep = t.run({*b.resolve("rmsnorm")}, o);
      ASSERT_TRUE(rep.ok()) << rep.error().message();
      measured[static_cast<std::size_t>(i)] = rep->problems.at(0).measured;
      EXPECT_EQ(rep->problems.at(0).evaluated, 216);  // each reports the whole search
    });
  for (auto& t : tuners) t.join();
  auto rows = store->measurements({});
  ASSERT_TRUE(rows.ok());
  std::set<std::string> rank, all;
  for (const auto& row : *rows) {
    EXPECT_TRUE(all.insert(std::string(to_string(row.regime)) + row.config_hash).second)
        << "measured twice: " << row.config << " " << to_string(row.regime);
    if (row.regime == Regime::kRank) rank.insert(row.config_hash);
  }
  EXPECT_EQ(rank.size(), 216u);
  // Both took part; a candidate one measured warm and the other cold counts for both.
  EXPECT_GT(measured[0], 0);
  EXPECT_GT(measured[1], 0);
  EXPECT_GE(measured[0] + measured[1], 216);
}

// Issue 13: after a kill, the rerun of an mcts tune of rmsnorm evaluated 63 configs where an
// uninterrupted run with the same seed evaluated 97. A rerun of an interrupted search is the same
// search: the same configs evaluated and the same best as a run that was never stopped.
TEST_F(TunerTest, ARerunOfAnInterruptedSearchIsTheSameSearch) {
  TuneOptions o;
  o.seed = 7;
  o.patience = 20;
  std::vector<std::string> whole;
  Tuner t(*store, sim, runner);
  auto full = t.run({*sim.resolve("rmsnorm")}, o,
                    [&](const TuneEvent& e) { whole.push_back(e.result.config); });
  ASSERT_TRUE(full.ok()) << full.error().message();

  testing::TempDir other;
  auto resumed_store = std::move(*SqliteStore::open(other.file("r.db")));
  std::atomic<bool> stop{false};
  TuneOptions stopped = o;
  stopped.interrupted = &stop;
  // Stopped halfway through what the whole run evaluated.
  ASSERT_GE(whole.size(), 20u);
  const std::size_t halfway = whole.size() / 2;
  std::size_t seen = 0;
  Tuner first(*resumed_store, sim, runner);
  auto cut = first.run({*sim.resolve("rmsnorm")}, stopped, [&](const TuneEvent&) {
    if (++seen == halfway) stop = true;
  });
  ASSERT_TRUE(cut.ok());
  ASSERT_TRUE(cut->interrupted);
  ASSERT_LT(cut->problems[0].evaluated, static_cast<std::int64_t>(whole.size()));

  std::vector<std::string> again;
  Tuner second(*resumed_store, sim, runner);
  auto rerun = second.run({*sim.resolve("rmsnorm")}, o,
                          [&](const TuneEvent& e) { again.push_back(e.result.config); });
  ASSERT_TRUE(rerun.ok()) << rerun.error().message();
  EXPECT_EQ(again, whole);  // the same configs, in the same order
  const ProblemReport &a = full->problems[0], &b = rerun->problems[0];
  EXPECT_EQ(b.evaluated, a.evaluated);
  // What the first part measured is not measured again.
  EXPECT_GE(b.replayed, static_cast<std::int64_t>(halfway) - 1);
  ASSERT_TRUE(a.best && b.best);
  EXPECT_EQ(b.best->config, a.best->config);
  auto runs = *resumed_store->runs();
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].status, "interrupted");
  EXPECT_EQ(runs[1].resumes, runs[0].id);
}

// Issue 15: a second run with another seed took the first run's results in first and continued
// its tree, so it had little or nothing of its own to propose (measured 0), and said nothing of
// it. The report says what it continued from; a fresh search with that seed proposes what it
// would on an empty store, the stored results answering the configs they cover.
TEST_F(TunerTest, AnotherSeedContinuesTheStoredSearchAndAFreshOneProposesAsOnAnEmptyStore) {
  auto visits = [&](Store& s, TuneOptions o, ProblemReport* report) {
    std::vector<std::string> order;
    Tuner t(s, sim, runner);
    auto r = t.run({*sim.resolve("rmsnorm")}, o,
                   [&](const TuneEvent& e) { order.push_back(e.result.config); });
    EXPECT_TRUE(r.ok()) << r.error().message();
    *report = r->problems.at(0);
    return order;
  };
  TuneOptions o;
  o.patience = 20;
  o.seed = 1;
  // The sim's rmsnorm (216 configs) would go to the surrogate, which keeps no state: this is
  // about a tree that is continued.
  o.strategy_options = {{"small_space", "0"}};
  ProblemReport first, second, fresh, alone;
  const auto one = visits(*store, o, &first);
  EXPECT_FALSE(first.continued());
  EXPECT_EQ(first.stored_first, 0);

  o.seed = 2;
  const auto two = visits(*store, o, &second);
  EXPECT_TRUE(second.continued_state);                  // mcts's tree
  EXPECT_EQ(second.stored_first, first.evaluated - 1);  // all but the baseline
  EXPECT_EQ(second.stored_runs, (std::vector<std::int64_t>{1}));
  // What it continued from came first, in the order it was measured.
  ASSERT_GE(two.size(), one.size());
  EXPECT_EQ(std::vector<std::string>(two.begin(), two.begin() + one.size()), one);

  o.fresh_search = true;
  const auto again = visits(*store, o, &fresh);
  EXPECT_FALSE(fresh.continued());
  EXPECT_EQ(fresh.stored_first, 0);
  testing::TempDir other;
  auto empty = std::move(*SqliteStore::open(other.file("e.db")));
  o.fresh_search = false;
  const auto seed_two = visits(*empty, o, &alone);
  EXPECT_EQ(again, seed_two);
  EXPECT_NE(again, one);
  EXPECT_GT(fresh.replayed, 0);  // the stored results still answer what they cover
  EXPECT_EQ(fresh.replayed + fresh.measured, alone.evaluated);
  // Nothing stored was lost: every config the first run measured is still in the store.
  MeasurementQuery q;
  q.regime = Regime::kRank;
  auto rows = store->measurements(q);
  ASSERT_TRUE(rows.ok()) << rows.error().message();
  std::set<std::string> stored;
  for (const auto& row : rows.value()) stored.insert(row.config);
  for (const auto& config : one) EXPECT_TRUE(stored.count(config)) << config;
}

// One slow reading is not drift: whichever execution reads 50% slow (an anchor reading
// included), the two confirming readings overrule it and nothing is discarded.
TEST_F(TunerTest, ASingleSlowAnchorReadingIsNotDrift) {
  TuneOptions o;
  o.strategy = "grid";
  o.patience = 0;
  o.max_candidates = 20;
  o.drift.anchor_every = 4;
  for (int i = 0; i < 40; ++i) {
    testing::TempDir dir;
    auto s = std::move(*SqliteStore::open(dir.file("t.db")));
    SimBackend backend;
    InProcessRunner runner{backend};
    const std::string drift = std::to_string(i) + ":" + std::to_string(i + 1) + ":1.5";
    ::setenv("ATTUNE_SIM_DRIFT", drift.c_str(), 1);
    platform::FakeClock clock;
    Tuner t(*s, backend, runner, clock);
    auto r = t.run({*backend.resolve("rmsnorm")}, o);
    ::unsetenv("ATTUNE_SIM_DRIFT");
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_TRUE(clock.sleeps().empty()) << "slow execution " << i;
    EXPECT_EQ(r->problems.at(0).drift_events, 0) << "slow execution " << i;
    EXPECT_EQ(r->problems.at(0).discarded, 0) << "slow execution " << i;
  }
}

}  // namespace
}  // namespace attune

namespace attune {
namespace {

// A sim-like backend that, like a whole program timed as it runs, measures only in deploy.
class DeployOnlySim final : public Backend {
 public:
  std::string name() const override { return "deploy-only"; }
  Result<DeviceFingerprint> fingerprint() override { return sim_.fingerprint(); }
  std::vector<ProblemInfo> problems() const override { return sim_.problems(); }
  Result<Problem> resolve(const std::string& spec) const override { return sim_.resolve(spec); }
  Result<Space> space(const Problem& p) const override { return sim_.space(p); }
  std::vector<Regime> regimes() const override { return {Regime::kDeploy}; }
  Outcome execute(const Problem& p, const Config& c, Regime r) override {
    ++executions[r];
    return sim_.execute(p, c, r);
  }
  bool isolated() const override { return false; }
  std::map<Regime, int> executions;

 private:
  SimBackend sim_;
};

TEST_F(TunerTest, ABackendThatMeasuresOnlyInDeployHasEachCandidateMeasuredOnceThere) {
  DeployOnlySim backend;
  InProcessRunner in_process{backend};
  TuneOptions o;
  o.strategy = "grid";
  o.patience = 0;
  o.drift.anchor_every = 4;
  Tuner t(*store, backend, in_process);
  auto r = t.run({*backend.resolve("rmsnorm")}, o);
  ASSERT_TRUE(r.ok()) << r.error().message();
  const ProblemReport& p = r->problems.at(0);
  EXPECT_EQ(p.evaluated, static_cast<std::int64_t>(p.space_size));
  EXPECT_EQ(backend.executions[Regime::kRank], 0);  // the anchor is read in deploy too
  // One row per candidate, in deploy; the best is the fastest of them.
  auto rows = store->measurements({});
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(rows->size(), p.space_size);
  double fastest = 1e300;
  std::string fastest_config;
  for (const auto& row : *rows) {
    EXPECT_EQ(row.regime, Regime::kDeploy) << row.config;
    if (row.outcome.verdict == Verdict::kOk && row.outcome.measurement->median_us < fastest) {
      fastest = row.outcome.measurement->median_us;
      fastest_config = row.config;
    }
  }
  ASSERT_TRUE(p.best && p.baseline && p.baseline->deploy_us);
  EXPECT_EQ(p.best->config, fastest_config);
  EXPECT_FALSE(p.best->rank_us);
  EXPECT_GT(p.speedup, 1.0);
  // Ranked and patience-counted by the deploy time; a rerun answers everything from the store.
  TuneOptions m;
  m.patience = 5;
  m.seed = 2;
  Tuner again(*store, backend, in_process);
  auto q = again.run({*backend.resolve("gemm")}, m);
  ASSERT_TRUE(q.ok()) << q.error().message();
  EXPECT_EQ(q->problems.at(0).stopped_by, "patience");
  EXPECT_EQ(backend.executions[Regime::kRank], 0);
  auto rerun = Tuner(*store, backend, in_process).run({*backend.resolve("gemm")}, m);
  ASSERT_TRUE(rerun.ok());
  EXPECT_EQ(rerun->problems.at(0).measured, 0);
  EXPECT_EQ(rerun->problems.at(0).evaluated, q->problems.at(0).evaluated);
}

// The configs a run visits, in order.
std::vector<std::string> visits(Store& store, Backend& backend, CandidateRunner& runner,
                                const std::string& problem, const TuneOptions& o) {
  std::vector<std::string> configs;
  Tuner t(store, backend, runner);
  auto r = t.run({*backend.resolve(problem)}, o,
                 [&](const TuneEvent& e) { configs.push_back(e.result.config); });
  EXPECT_TRUE(r.ok()) << r.error().message();
  return configs;
}

TEST_F(TunerTest, StrategyOptionsReachTheStrategyAndAnUnknownOneIsRefused) {
  TuneOptions o;
  o.strategy = "genetic";
  o.patience = 0;
  o.max_candidates = 12;
  testing::TempDir a, b, c;
  auto sa = std::move(*SqliteStore::open(a.file("a.db")));
  auto sb = std::move(*SqliteStore::open(b.file("b.db")));
  auto sc = std::move(*SqliteStore::open(c.file("c.db")));
  const auto plain = visits(*sa, sim, runner, "gemm", o);
  o.strategy_options = {{"population", "3"}};
  const auto small = visits(*sb, sim, runner, "gemm", o);
  EXPECT_EQ(small, visits(*sc, sim, runner, "gemm", o));
  EXPECT_NE(plain, small);

  o.strategy_options = {{"populace", "3"}};
  Tuner t(*store, sim, runner);
  auto r = t.run({*sim.resolve("gemm")}, o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("known: population, elite, tournament, mutation"),
            std::string::npos)
      << r.error().message();
}

// A prior fitted on the sim's own landscape, stored as `attune prior fit` would store it.
void store_prior(Store& store, SimBackend& sim, const Problem& problem) {
  const Space space = *sim.space(problem);
  const prior::Context context = prior::make_context(problem, *sim.fingerprint());
  prior::Prior p;
  for (auto e = space.enumerate(); auto point = e.next();) {
    auto t = sim.true_time_us(problem, space.config(*point), Regime::kDeploy);
    ASSERT_TRUE(t.ok());
    p.add(prior::make_row(space, *point, context, Verdict::kOk, *t));
  }
  ASSERT_TRUE(p.fit().ok());
  ASSERT_TRUE(p.usable());
  auto ck = p.save();
  ASSERT_TRUE(ck.ok());
  PriorRecord rec;
  rec.name = "default";
  rec.rows = ck->rows;
  rec.calibration = ck->calibration;
  rec.quarantined = ck->quarantined;
  rec.model = ck->model;
  rec.reservoir = ck->reservoir;
  ASSERT_TRUE(store.put_prior(rec).ok());
}

// The store's prior steers the strategy that takes one (mcts) and no other.
TEST_F(TunerTest, TheStoredPriorSteersOnlyAStrategyThatTakesOne) {
  Problem gemm = *sim.resolve("gemm");
  testing::TempDir cold_dir, warm_dir;
  auto cold = std::move(*SqliteStore::open(cold_dir.file("cold.db")));
  auto warm = std::move(*SqliteStore::open(warm_dir.file("warm.db")));
  store_prior(*warm, sim, gemm);
  TuneOptions o;
  o.patience = 0;
  o.max_candidates = 20;
  o.seed = 5;
  EXPECT_NE(visits(*cold, sim, runner, "gemm", o), visits(*warm, sim, runner, "gemm", o));
  o.strategy = "annealing";
  o.seed = 6;  // a new seed: nothing of the mcts runs above is in the way
  auto a = visits(*cold, sim, runner, "gemm:m=8", o);
  EXPECT_EQ(a, visits(*warm, sim, runner, "gemm:m=8", o));
}

// A backend measured in deploy only, whose baseline is its reference (as the command backend):
// time 10 us, 5 us at a=1,b=1 and at a=2,b=0 (a tie that fewer changed knobs and the config text
// break opposite ways), and the baseline fails when asked to. It counts executions per regime.
class DeployOnlyBackend final : public Backend {
 public:
  bool baseline_fails = false;
  bool lose_reference = false;  // the next execute() finds the reference gone
  std::map<Regime, int> executions;

  std::string name() const override { return "deploy-only"; }
  Result<DeviceFingerprint> fingerprint() override {
    DeviceFingerprint d;
    d.backend = "deploy-only";
    d.name = "test";
    return d;
  }
  std::vector<ProblemInfo> problems() const override { return {}; }
  Result<Problem> resolve(const std::string&) const override {
    return Problem("toy", {{"n", "1"}});
  }
  Result<Space> space(const Problem&) const override {
    return Space::make({Knob{"a", {0, 1, 2}}, Knob{"b", {0, 1}}});
  }
  Outcome execute(const Problem&, const Config& config, Regime regime) override {
    ++executions[regime];
    if (lose_reference) {
      lost = true;
      return Outcome::failed(Verdict::kCrashed, "crash: the baseline gave no reference output");
    }
    const bool baseline = config.get("a")->as_int() == 0 && config.get("b")->as_int() == 0;
    if (baseline && baseline_fails) return Outcome::failed(Verdict::kCrashed, "crash: exit code 1");
    Outcome o;
    o.measurement = Measurement{};
    o.measurement->regime = regime;
    o.measurement->samples = 1;
    const auto a = config.get("a")->as_int(), b = config.get("b")->as_int();
    o.measurement->median_us = (a == 1 && b == 1) || (a == 2 && b == 0) ? 5 : 10;
    return o;
  }
  bool isolated() const override { return false; }
  std::vector<Regime> regimes() const override { return {Regime::kDeploy}; }
  bool baseline_is_reference() const override { return true; }
  bool reference_lost(const Problem&) const override { return lost; }
  bool lost = false;
};

struct DeployOnlyTest : ::testing::Test {
  testing::TempDir dir;
  DeployOnlyBackend backend;
  InProcessRunner runner{backend};
  std::unique_ptr<SqliteStore> store = std::move(*SqliteStore::open(dir.file("t.db")));

  ProblemReport tune(TuneOptions o) {
    o.drift.anchor_every = 0;
    o.patience = 0;
    Tuner t(*store, backend, runner);
    auto r = t.run({*backend.resolve("")}, o);
    EXPECT_TRUE(r.ok()) << r.error().message();
    return r->problems.at(0);
  }
};

TEST_F(DeployOnlyTest, EachCandidateIsMeasuredOnceInDeployAndTiesGoToFewerChangedKnobs) {
  for (std::uint64_t seed : {0, 1, 2, 3, 4, 5}) {
    testing::TempDir fresh;
    store = std::move(*SqliteStore::open(fresh.file("t.db")));
    backend.executions.clear();
    TuneOptions o;
    o.strategy = "random";
    o.seed = seed;
    ProblemReport r = tune(o);
    EXPECT_EQ(r.evaluated, 6);
    EXPECT_EQ(backend.executions[Regime::kDeploy], 6);
    EXPECT_EQ(backend.executions[Regime::kRank], 0);
    ASSERT_TRUE(r.best);
    // Whichever of the two 5 us configs the seed visits first, the one changing one knob wins,
    // though its text sorts after the other's.
    EXPECT_EQ(r.best->config, "a=2,b=0") << "seed " << seed;
    EXPECT_FALSE(r.best->rank_us);  // no rank regime was measured
    MeasurementQuery q;
    q.regime = Regime::kRank;
    EXPECT_TRUE(store->measurements(q)->empty());
  }
}

TEST_F(DeployOnlyTest, AFailedBaselineStopsTheProblemThere) {
  backend.baseline_fails = true;
  ProblemReport r = tune(TuneOptions{});
  EXPECT_EQ(r.evaluated, 1);
  EXPECT_EQ(r.stopped_by, "baseline_failed");
  EXPECT_FALSE(r.best);
  EXPECT_EQ(backend.executions[Regime::kDeploy], 1);
}

// A rerun whose baseline comes from the store but whose reference then fails to come back (the
// defaults crash now): nothing of it is recorded, so the configs it would have blamed are not
// stored as failures, and the problem stops there.
TEST_F(DeployOnlyTest, ALostReferenceStopsTheProblemAndRecordsNothing) {
  TuneOptions o;
  o.strategy = "grid";
  o.max_candidates = 2;
  ProblemReport first = tune(o);
  EXPECT_EQ(first.evaluated, 2);
  backend.lose_reference = true;
  o.max_candidates.reset();
  ProblemReport r = tune(o);
  EXPECT_EQ(r.stopped_by, "baseline_failed");
  EXPECT_EQ(r.evaluated, 2);  // both answered from the store
  EXPECT_EQ(r.measured, 0);
  EXPECT_EQ(backend.executions[Regime::kDeploy], 3);  // two in the first run, one now
  auto rows = store->measurements({});
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(rows->size(), 2u);
  for (const auto& row : *rows) EXPECT_EQ(row.outcome.verdict, Verdict::kOk) << row.config;
}

TEST_F(DeployOnlyTest, AnInterruptIsNotRecordedAndClosesTheRunAsInterrupted) {
  std::atomic<bool> interrupted{true};
  TuneOptions o;
  o.interrupted = &interrupted;
  Tuner t(*store, backend, runner);
  auto r = t.run({*backend.resolve("")}, o);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_TRUE(r->interrupted);
  ASSERT_EQ(r->problems.size(), 1u);
  EXPECT_FALSE(r->problems[0].started);
  EXPECT_EQ(r->problems[0].stopped_by, "interrupted");
  EXPECT_EQ(backend.executions[Regime::kDeploy], 0);
  EXPECT_TRUE(store->measurements({})->empty());
  EXPECT_EQ(store->runs()->at(0).status, "interrupted");
}

}  // namespace
}  // namespace attune

namespace attune {
namespace {

// Tuner::measure (attune sweep's second pass): exactly the listed configs, each in the deploy
// regime with its noise and gate finding, down run()'s path: a second call measures nothing.
TEST_F(TunerTest, MeasureEvaluatesExactlyTheListedConfigsInTheDeployRegime) {
  const Problem p = *sim.resolve("rmsnorm");
  const std::vector<Config> list = {*Config::parse("threads=128,rows_per_block=2,vec=4,unroll=2"),
                                    *Config::parse("threads=512,rows_per_block=1,vec=8,unroll=1")};
  Tuner t(*store, sim, runner);
  TuneOptions o;
  o.patience = 1;  // not a search's: measure() ignores it
  auto r = t.measure({{p, list}}, o);
  ASSERT_TRUE(r.ok()) << r.error().message();
  const ProblemReport& a = r->problems.at(0);
  ASSERT_EQ(a.results.size(), 3u);  // the baseline first, then the list in order
  EXPECT_EQ(a.results[0].config, a.baseline->config);
  EXPECT_EQ(a.results[1].config, list[0].text());
  EXPECT_EQ(a.results[2].config, list[1].text());
  for (const auto& c : a.results) {
    ASSERT_TRUE(c.deploy_us) << c.config;
    ASSERT_TRUE(c.deploy_noise && c.deploy_check) << c.config;
    EXPECT_LE(c.deploy_check->value, c.deploy_check->tolerance);
  }
  EXPECT_EQ(a.stopped_by, "exhausted");
  auto again = t.measure({{p, list}}, o);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->problems.at(0).measured, 0);
  EXPECT_EQ(again->problems.at(0).results.at(2).deploy_us, a.results[2].deploy_us);
  // A config outside the space is refused before anything runs.
  EXPECT_FALSE(t.measure({{p, {*Config::parse("threads=7")}}}, o).ok());
}

}  // namespace
}  // namespace attune
