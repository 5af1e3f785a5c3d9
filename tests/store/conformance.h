// The Store contract (src/store/store.h) as one typed test suite that every store passes
// unchanged. A store's test file instantiates it with a factory trait in one line:
//
//   INSTANTIATE_TYPED_TEST_SUITE_P(Sqlite, StoreConformance, SqliteStoreFactory);   // in namespace
//   attune
//
// where the factory is default-constructed once per test around a fresh, empty database and has
//
//   Result<std::unique_ptr<Store>> open();   // a new connection to that database (called again
//                                            // for a second connection or a reopen)
//
// Tests run one at a time; a factory may hold files or a server-side schema for its database. A
// factory whose database server may be absent also has
//
//   std::string unavailable();  // "" when open() can work, else why not (the test skips)
//   bool must_fail();           // whether that absence is a failure, not a skip
#pragma once

#include <unistd.h>

#include <cmath>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/config.h"
#include "store/store.h"
#include "support/rows.h"
#include "support/store_rows.h"

namespace attune {

template <typename Factory>
class StoreConformance : public ::testing::Test {
 protected:
  void SetUp() override {
    if constexpr (requires(Factory f) { f.unavailable(); }) {
      if (const std::string why = factory_.unavailable(); !why.empty()) {
        if (factory_.must_fail()) FAIL() << why;
        GTEST_SKIP() << why;
      }
    }
    auto s = factory_.open();
    ASSERT_TRUE(s.ok()) << s.error().message();
    store_ = std::move(*s);
  }

  Store& store() { return *store_; }
  std::unique_ptr<Store> connect() {
    auto s = factory_.open();
    EXPECT_TRUE(s.ok()) << s.error().message();
    return s.ok() ? std::move(*s) : nullptr;
  }

  static DeviceFingerprint device(const std::string& name = "attune simulated GPU") {
    return store_rows::device(name);
  }
  static MeasurementRow row(const Problem& p, const std::string& config, double us,
                            const DeviceFingerprint& d = device()) {
    return store_rows::row(p, config, us, d);
  }
  static MeasurementRow failure(const Problem& p, const std::string& config, Verdict v) {
    MeasurementRow r = row(p, config, 0);
    r.outcome = Outcome::failed(v, "planted " + std::string(to_string(v)));
    return r;
  }
  // The device and problem stored, so rows may name them.
  Problem known(const std::string& spec, const DeviceFingerprint& d = device()) {
    Problem p = *Problem::parse(spec);
    EXPECT_TRUE(store().put_device(d).ok());
    EXPECT_TRUE(store().put_problem(p).ok());
    return p;
  }
  std::vector<std::string> configs(const MeasurementQuery& q) {
    std::vector<std::string> out;
    auto rows = store().measurements(q);
    EXPECT_TRUE(rows.ok()) << rows.error().message();
    if (rows.ok())
      for (const auto& r : *rows) out.push_back(r.config);
    return out;
  }
  std::optional<MeasurementRow> find(const MeasurementRow& like) {
    auto f = store().find(like.device_key, like.problem_key, like.backend, like.regime,
                          like.config_hash);
    EXPECT_TRUE(f.ok()) << f.error().message();
    return f.ok() ? *f : std::nullopt;
  }

  Factory factory_;
  std::unique_ptr<Store> store_;
};

TYPED_TEST_SUITE_P(StoreConformance);

TYPED_TEST_P(StoreConformance, RunsBeginRunningAndFinishWithAStatus) {
  Store& s = this->store();
  RunInfo info{0, "tune", R"(["attune","tune"])", "mcts", (1ull << 63) + 5, "0.9", "abc"};
  auto first = s.begin_run(info);
  ASSERT_TRUE(first.ok()) << first.error().message();
  auto second = s.begin_run({0, "stack", "[]", "grid", 1});
  ASSERT_TRUE(second.ok());
  EXPECT_GT(*second, *first);
  ASSERT_TRUE(s.finish_run(*first, "done").ok());
  auto runs = s.runs();
  ASSERT_TRUE(runs.ok()) << runs.error().message();
  ASSERT_EQ(runs->size(), 2u);
  const RunInfo& a = (*runs)[0];
  EXPECT_EQ(a.id, *first);
  EXPECT_EQ(a.command, "tune");
  EXPECT_EQ(a.arguments, info.arguments);
  EXPECT_EQ(a.strategy, "mcts");
  EXPECT_EQ(a.seed, info.seed);  // all 64 bits of a seed
  EXPECT_EQ(a.version, "0.9");
  EXPECT_EQ(a.device_key, "abc");
  EXPECT_FALSE(a.started_at.empty());
  EXPECT_FALSE(a.finished_at.empty());
  EXPECT_EQ(a.status, "done");
  const RunInfo& b = (*runs)[1];
  EXPECT_EQ(b.id, *second);
  EXPECT_EQ(b.status, "running");
  EXPECT_TRUE(b.finished_at.empty());
}

TYPED_TEST_P(StoreConformance, ARunNamesItsOwnerItsSearchAndTheRunItResumes) {
  Store& s = this->store();
  RunInfo first{0, "tune", "[]", "mcts", 7};
  first.search_key = "3f2a9c";
  first.host = "not-this-host";  // the store fills the owner, whatever is given
  first.pid = 1;
  auto a = s.begin_run(first);
  ASSERT_TRUE(a.ok()) << a.error().message();
  RunInfo again = first;
  again.resumes = *a;
  auto b = s.begin_run(again);
  ASSERT_TRUE(b.ok()) << b.error().message();
  auto runs = s.runs();
  ASSERT_TRUE(runs.ok()) << runs.error().message();
  ASSERT_EQ(runs->size(), 2u);
  EXPECT_EQ((*runs)[0].search_key, "3f2a9c");
  EXPECT_EQ((*runs)[0].resumes, 0);
  EXPECT_EQ((*runs)[1].resumes, *a);
  for (const RunInfo& r : *runs) {
    EXPECT_EQ(r.pid, static_cast<std::int64_t>(getpid()));
    EXPECT_NE(r.host, "not-this-host");
    EXPECT_FALSE(r.host.empty());
  }
  // Opening the store again leaves the runs of this live process running.
  auto other = this->connect();
  ASSERT_TRUE(other);
  auto closed = other->close_orphaned_runs();
  ASSERT_TRUE(closed.ok()) << closed.error().message();
  EXPECT_EQ(*closed, 0);
  auto after = other->runs();
  ASSERT_TRUE(after.ok()) << after.error().message();
  for (const RunInfo& r : *after) EXPECT_EQ(r.status, "running");
}

TYPED_TEST_P(StoreConformance, ACandidateIsClaimedByOneRunAtATimeUntilReleasedOrMeasured) {
  Store& s = this->store();
  Problem p = this->known("gemm:m=1,n=64,k=64");
  auto a = s.begin_run({0, "tune", "[]", "mcts", 1});
  auto b = s.begin_run({0, "tune", "[]", "mcts", 1});
  ASSERT_TRUE(a.ok() && b.ok());
  MeasurementRow r = this->row(p, "t=1", 3.0);
  const ClaimKey key{r.device_key, r.problem_key, r.backend, r.regime, r.config_hash};
  auto claim = [&](const ClaimKey& k, std::int64_t run) {
    auto c = s.claim(k, run);
    EXPECT_TRUE(c.ok()) << c.error().message();
    return c.ok() ? *c : ClaimResult::kHeld;
  };
  EXPECT_EQ(claim(key, *a), ClaimResult::kOurs);
  EXPECT_EQ(claim(key, *a), ClaimResult::kOurs);  // asking again
  EXPECT_EQ(claim(key, *b), ClaimResult::kHeld);  // a still runs: b measures something else
  // A second connection (another process) sees the claim.
  auto other = this->connect();
  ASSERT_TRUE(other);
  EXPECT_EQ(*other->claim(key, *b), ClaimResult::kHeld);

  // Every other device, problem, backend, regime or config is another candidate.
  for (ClaimKey k :
       {ClaimKey{"other", key.problem_key, key.backend, key.regime, key.config_hash},
        ClaimKey{key.device_key, "other", key.backend, key.regime, key.config_hash},
        ClaimKey{key.device_key, key.problem_key, "cuda", key.regime, key.config_hash},
        ClaimKey{key.device_key, key.problem_key, key.backend, Regime::kDeploy, key.config_hash},
        ClaimKey{key.device_key, key.problem_key, key.backend, key.regime, "other"}})
    EXPECT_EQ(claim(k, *b), ClaimResult::kOurs) << k.device_key << " " << k.config_hash;

  // Releasing another run's claim leaves it; releasing one's own frees it.
  ASSERT_TRUE(s.release(key, *b).ok());
  EXPECT_EQ(claim(key, *b), ClaimResult::kHeld);
  ASSERT_TRUE(s.release(key, *a).ok());
  EXPECT_EQ(claim(key, *b), ClaimResult::kOurs);
  EXPECT_EQ(claim(key, *a), ClaimResult::kHeld);

  // Once a row is recorded the candidate is measured, for every run; a discarded row is not.
  r.run_id = *b;
  auto id = s.record(r);
  ASSERT_TRUE(id.ok()) << id.error().message();
  ASSERT_TRUE(s.release(key, *b).ok());
  EXPECT_EQ(claim(key, *a), ClaimResult::kMeasured);
  EXPECT_EQ(claim(key, *b), ClaimResult::kMeasured);
  ASSERT_TRUE(s.discard({*id}, "the anchor moved").ok());
  EXPECT_EQ(claim(key, *a), ClaimResult::kOurs);
}

TYPED_TEST_P(StoreConformance, FinishingARunDropsItsClaims) {
  Store& s = this->store();
  Problem p = this->known("gemm:m=1,n=64,k=64");
  auto a = s.begin_run({0, "tune", "[]", "mcts", 1});
  auto b = s.begin_run({0, "tune", "[]", "mcts", 1});
  ASSERT_TRUE(a.ok() && b.ok());
  std::vector<ClaimKey> keys;
  for (const char* c : {"t=1", "t=2", "t=3"}) {
    MeasurementRow r = this->row(p, c, 1.0);
    keys.push_back({r.device_key, r.problem_key, r.backend, r.regime, r.config_hash});
    EXPECT_EQ(*s.claim(keys.back(), *a), ClaimResult::kOurs);
    EXPECT_EQ(*s.claim(keys.back(), *b), ClaimResult::kHeld);
  }
  ASSERT_TRUE(s.finish_run(*a, "failed").ok());
  for (const ClaimKey& k : keys) EXPECT_EQ(*s.claim(k, *b), ClaimResult::kOurs);
}

TYPED_TEST_P(StoreConformance, DevicesAreKeptOncePerKeyWithTheNewestFingerprint) {
  Store& s = this->store();
  DeviceFingerprint a = this->device("A"), b = this->device("B");
  ASSERT_TRUE(s.put_device(a).ok());
  ASSERT_TRUE(s.put_device(b).ok());
  a.driver_version = "sim-2";  // a driver update: the same key, a refreshed record
  a.extra["note"] = "updated";
  ASSERT_TRUE(s.put_device(a).ok());
  auto all = s.devices();
  ASSERT_TRUE(all.ok()) << all.error().message();
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].key(), a.key());  // first seen first
  EXPECT_EQ((*all)[0].driver_version, "sim-2");
  EXPECT_EQ((*all)[0].extra, a.extra);
  EXPECT_EQ((*all)[0].memory_bytes, a.memory_bytes);
  EXPECT_EQ((*all)[1].key(), b.key());
}

TYPED_TEST_P(StoreConformance, ProblemsAreFoundByKeyOrNameAndRefreshedByKey) {
  Store& s = this->store();
  Problem p = *Problem::parse("gemm:m=16,n=64,k=64");
  p.set_name("decode");
  ASSERT_TRUE(s.put_problem(p, "recorded space").ok());
  auto by_key = s.find_problem(p.structural_key());
  ASSERT_TRUE(by_key.ok() && by_key->has_value());
  EXPECT_EQ((**by_key).key, p.structural_key());
  EXPECT_EQ((**by_key).problem.text(), p.text());
  EXPECT_EQ((**by_key).problem.name(), "decode");
  EXPECT_EQ((**by_key).payload, "recorded space");
  auto by_name = s.find_problem("decode");
  ASSERT_TRUE(by_name.ok() && by_name->has_value());
  EXPECT_EQ((**by_name).key, p.structural_key());
  EXPECT_FALSE(s.find_problem("prefill")->has_value());

  // The same problem again: one record, the newest name, the payload kept unless a new one is
  // given.
  p.set_name("prefill");
  ASSERT_TRUE(s.put_problem(p).ok());
  auto again = s.find_problem(p.structural_key());
  ASSERT_TRUE(again.ok() && again->has_value());
  EXPECT_EQ((**again).problem.name(), "prefill");
  EXPECT_EQ((**again).payload, "recorded space");
  ASSERT_TRUE(s.put_problem(p, "another space").ok());
  EXPECT_EQ((**s.find_problem("prefill")).payload, "another space");

  // A key wins over a name: a second problem named like the first one's key.
  Problem q = *Problem::parse("rmsnorm:rows=8,hidden=64");
  q.set_name(p.structural_key());
  ASSERT_TRUE(s.put_problem(q).ok());
  EXPECT_EQ((**s.find_problem(p.structural_key())).key, p.structural_key());
  auto all = s.problems();
  ASSERT_TRUE(all.ok()) << all.error().message();
  ASSERT_EQ(all->size(), 2u);
  std::set<std::string> keys;
  for (const auto& r : *all) keys.insert(r.key);
  EXPECT_EQ(keys, (std::set<std::string>{p.structural_key(), q.structural_key()}));
  // By name.
  EXPECT_LE((*all)[0].problem.name(), (*all)[1].problem.name());

  // A name two problems share (one kernel at two sizes) finds neither: it names both keys.
  Problem r = *Problem::parse("rmsnorm:rows=16,hidden=64");
  Problem t = *Problem::parse("rmsnorm:rows=32,hidden=64");
  r.set_name("norm");
  t.set_name("norm");
  ASSERT_TRUE(s.put_problem(r).ok());
  ASSERT_TRUE(s.put_problem(t).ok());
  auto shared = s.find_problem("norm");
  ASSERT_FALSE(shared.ok());
  EXPECT_NE(shared.error().message().find(r.structural_key()), std::string::npos)
      << shared.error().message();
  EXPECT_NE(shared.error().message().find(t.structural_key()), std::string::npos);
  EXPECT_EQ((**s.find_problem(t.structural_key())).key, t.structural_key());
}

TYPED_TEST_P(StoreConformance, EveryFieldOfAMeasurementReadsBackAsWritten) {
  Store& s = this->store();
  Problem p = this->known("gemm:m=1,n=64,k=64");
  auto run = s.begin_run({0, "tune", "[]", "random", 7});
  ASSERT_TRUE(run.ok());
  MeasurementRow ok = this->row(p, "a=1,b=2", 12.5);
  ok.run_id = *run;
  ok.regime = Regime::kDeploy;
  ok.outcome.measurement->regime = Regime::kDeploy;
  ok.outcome.measurement->cache = CacheState::kCold;
  ok.outcome.measurement->throttle = "sw_thermal";
  ok.outcome.message = "timed as a graph";
  ok.cost_s = 0.75;
  auto id = s.record(ok);
  ASSERT_TRUE(id.ok()) << id.error().message();
  MeasurementRow nan = this->row(p, "a=2,b=2", 0);
  nan.outcome =
      Outcome{Verdict::kNonFinite, std::nullopt, ErrorCheck{"max_rel_err", NAN, 1e-5}, "NaN at 3"};
  auto nan_id = s.record(nan);
  ASSERT_TRUE(nan_id.ok()) << nan_id.error().message();
  EXPECT_GT(*nan_id, *id);

  auto f = this->find(ok);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->id, *id);
  EXPECT_EQ(f->run_id, *run);
  EXPECT_EQ(f->device_key, ok.device_key);
  EXPECT_EQ(f->problem_key, ok.problem_key);
  EXPECT_EQ(f->backend, "sim");
  EXPECT_EQ(f->config, "a=1,b=2");
  EXPECT_EQ(f->config_hash, ok.config_hash);
  EXPECT_EQ(f->regime, Regime::kDeploy);
  EXPECT_EQ(f->outcome.verdict, Verdict::kOk);
  EXPECT_EQ(f->outcome.message, "timed as a graph");
  EXPECT_DOUBLE_EQ(f->cost_s, 0.75);
  EXPECT_FALSE(f->created_at.empty());
  ASSERT_TRUE(f->outcome.measurement);
  const Measurement& m = *f->outcome.measurement;
  EXPECT_EQ(m.regime, Regime::kDeploy);
  EXPECT_EQ(m.cache, CacheState::kCold);
  EXPECT_EQ(m.samples, 20);
  EXPECT_DOUBLE_EQ(m.median_us, 12.5);
  EXPECT_DOUBLE_EQ(m.min_us, 12.5 * 0.99);
  EXPECT_DOUBLE_EQ(m.max_us, 12.5 * 1.02);
  EXPECT_DOUBLE_EQ(m.noise, 0.003);
  EXPECT_EQ(m.sm_clock_mhz, 1980);
  EXPECT_EQ(m.throttle, "sw_thermal");
  ASSERT_TRUE(f->outcome.check);
  EXPECT_EQ(f->outcome.check->metric, "max_rel_err");
  EXPECT_DOUBLE_EQ(f->outcome.check->value, 1e-7);
  EXPECT_DOUBLE_EQ(f->outcome.check->tolerance, 1e-5);

  auto g = this->find(nan);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->run_id, 0);  // no run
  EXPECT_EQ(g->outcome.verdict, Verdict::kNonFinite);
  EXPECT_FALSE(g->outcome.measurement);
  ASSERT_TRUE(g->outcome.check);
  EXPECT_TRUE(std::isnan(g->outcome.check->value));
  EXPECT_EQ(g->outcome.message, "NaN at 3");
  EXPECT_EQ(g->cost_s, 0);  // not known: charged nothing

  // A failure that never ran has neither a measurement nor a check.
  MeasurementRow refused = this->failure(p, "a=3,b=2", Verdict::kUnsupported);
  ASSERT_TRUE(s.record(refused).ok());
  auto h = this->find(refused);
  ASSERT_TRUE(h);
  EXPECT_EQ(h->outcome.verdict, Verdict::kUnsupported);
  EXPECT_FALSE(h->outcome.measurement);
  EXPECT_FALSE(h->outcome.check);
}

TYPED_TEST_P(StoreConformance, FindAnswersTheNewestRowOfExactlyItsKey) {
  Store& s = this->store();
  Problem p = this->known("gemm:m=1,n=64,k=64");
  Problem other = this->known("gemm:m=2,n=64,k=64", this->device("B"));
  MeasurementRow r = this->row(p, "a=1", 10.0);
  ASSERT_TRUE(s.record(r).ok());
  MeasurementRow again = this->row(p, "a=1", 9.0);  // measured again: both are kept
  auto newest = s.record(again);
  ASSERT_TRUE(newest.ok());
  auto f = this->find(r);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->id, *newest);
  EXPECT_DOUBLE_EQ(f->outcome.measurement->median_us, 9.0);
  EXPECT_EQ(this->configs({}).size(), 2u);

  // Each other device, problem, backend, regime or config is another question.
  const std::string dev = r.device_key, key = r.problem_key, hash = r.config_hash;
  EXPECT_FALSE(s.find(this->device("B").key(), key, "sim", Regime::kRank, hash)->has_value());
  EXPECT_FALSE(s.find(dev, other.structural_key(), "sim", Regime::kRank, hash)->has_value());
  EXPECT_FALSE(s.find(dev, key, "cuda", Regime::kRank, hash)->has_value());
  EXPECT_FALSE(s.find(dev, key, "sim", Regime::kDeploy, hash)->has_value());
  EXPECT_FALSE(
      s.find(dev, key, "sim", Regime::kRank, Config::parse("a=2")->hash_hex())->has_value());
}

TYPED_TEST_P(StoreConformance, MeasurementsMatchEveryFieldOfTheQueryOldestFirst) {
  Store& s = this->store();
  Problem gemm = this->known("gemm:m=1,n=64,k=64");
  gemm.set_name("decode");
  ASSERT_TRUE(s.put_problem(gemm).ok());
  Problem norm = this->known("rmsnorm:rows=8,hidden=64", this->device("B"));
  MeasurementRow cuda = this->row(gemm, "c=1", 3.0);
  cuda.backend = "cuda";
  MeasurementRow deploy = this->row(gemm, "c=2", 4.0);
  deploy.regime = Regime::kDeploy;
  for (const MeasurementRow& r :
       {this->row(gemm, "c=0", 2.0), cuda, deploy, this->failure(gemm, "c=3", Verdict::kCrashed),
        this->row(norm, "c=4", 1.0, this->device("B"))})
    ASSERT_TRUE(s.record(r).ok());
  using V = std::vector<std::string>;
  EXPECT_EQ(this->configs({}), (V{"c=0", "c=1", "c=2", "c=3", "c=4"}));
  EXPECT_EQ(this->configs({gemm.structural_key()}), (V{"c=0", "c=1", "c=2", "c=3"}));
  EXPECT_EQ(this->configs({"decode"}), (V{"c=0", "c=1", "c=2", "c=3"}));  // a problem's name
  EXPECT_EQ(this->configs({"rmsnorm"}), (V{"c=4"}));                      // an op
  EXPECT_EQ(this->configs({"", this->device("B").key()}), (V{"c=4"}));
  EXPECT_EQ(this->configs({"", "", "cuda"}), (V{"c=1"}));
  EXPECT_EQ(this->configs({"", "", "", Regime::kDeploy}), (V{"c=2"}));
  EXPECT_EQ(this->configs({"", "", "", std::nullopt, true}), (V{"c=3"}));
  EXPECT_EQ(this->configs({"gemm", this->device().key(), "sim", Regime::kRank}), (V{"c=0", "c=3"}));
  EXPECT_TRUE(this->configs({"no such problem"}).empty());
}

TYPED_TEST_P(StoreConformance, DiscardedRowsAreNeverAnsweredAgain) {
  Store& s = this->store();
  Problem p = this->known("rmsnorm:rows=8,hidden=64");
  MeasurementRow before = this->row(p, "t=1", 3.0);
  auto kept = s.record(before);
  ASSERT_TRUE(kept.ok());
  auto drifted = s.record(this->row(p, "t=1", 4.2));
  auto also = s.record(this->row(p, "t=2", 5.0));
  ASSERT_TRUE(drifted.ok() && also.ok());
  ASSERT_TRUE(s.discard({*drifted, *also}, "the anchor moved +40%").ok());
  auto f = this->find(before);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->id, *kept);  // the clean older row answers again
  EXPECT_FALSE(this->find(this->row(p, "t=2", 0)));
  EXPECT_EQ(this->configs({}), (std::vector<std::string>{"t=1"}));
  // Asked for, they come back with their reason (what attune report shows of drift).
  MeasurementQuery all;
  all.include_discarded = true;
  auto rows = s.measurements(all);
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 3u);
  EXPECT_EQ((*rows)[0].discarded, "");
  EXPECT_EQ((*rows)[1].discarded, "the anchor moved +40%");
  EXPECT_EQ((*rows)[2].discarded, "the anchor moved +40%");
  EXPECT_EQ((*rows)[2].config, "t=2");
  EXPECT_TRUE(s.discard({}, "nothing").ok());
  // Measured again after the back-off: the new row answers.
  auto fresh = s.record(this->row(p, "t=2", 5.1));
  ASSERT_TRUE(fresh.ok());
  EXPECT_EQ(this->find(this->row(p, "t=2", 0))->id, *fresh);
}

TYPED_TEST_P(StoreConformance, RowsNamingWhatTheStoreDoesNotKnowAreRefused) {
  Store& s = this->store();
  Problem p = this->known("gemm:m=8,n=8,k=8");
  Problem unknown = *Problem::parse("gemm:m=9,n=9,k=9");
  MeasurementRow no_device = this->row(p, "a=1", 1.0, this->device("never stored"));
  EXPECT_FALSE(s.record(no_device).ok());
  EXPECT_FALSE(s.record(this->row(unknown, "a=1", 1.0)).ok());
  MeasurementRow no_run = this->row(p, "a=1", 1.0);
  no_run.run_id = 987654;
  EXPECT_FALSE(s.record(no_run).ok());
  EXPECT_TRUE(this->configs({}).empty());  // nothing stored dangling

  const std::string dev = this->device().key();
  EXPECT_FALSE(s.put_baseline({dev, unknown.structural_key(), "sim", "a=1", "h", ""}).ok());
  EXPECT_FALSE(s.put_baseline(
                    {this->device("never stored").key(), p.structural_key(), "sim", "a=1", "h", ""})
                   .ok());
  EXPECT_FALSE(s.find_baseline(dev, unknown.structural_key(), "sim")->has_value());
  EXPECT_FALSE(
      s.put_search_nodes(dev, unknown.structural_key(), "mcts", {{"a=1", 1, 1.0, ""}}).ok());
  EXPECT_TRUE(s.search_nodes(dev, unknown.structural_key(), "mcts")->empty());
}

TYPED_TEST_P(StoreConformance, SearchNodesAreReplacedByPathAndKeptPerStrategy) {
  Store& s = this->store();
  Problem p = this->known("gemm:m=8,n=8,k=8");
  const std::string dev = this->device().key(), key = p.structural_key();
  ASSERT_TRUE(
      s.put_search_nodes(dev, key, "mcts", {{"b=1", 2, 5.0, R"({"q":1})"}, {"a=1", 3, 4.5, "{}"}})
          .ok());
  ASSERT_TRUE(
      s.put_search_nodes(dev, key, "mcts", {{"a=1", 7, 4.0, R"({"q":2})"}, {"c=1", 1, 0, ""}})
          .ok());
  auto nodes = s.search_nodes(dev, key, "mcts");
  ASSERT_TRUE(nodes.ok()) << nodes.error().message();
  ASSERT_EQ(nodes->size(), 3u);
  EXPECT_EQ((*nodes)[0].path, "a=1");  // by path
  EXPECT_EQ((*nodes)[0].visits, 7);
  EXPECT_DOUBLE_EQ((*nodes)[0].best_us, 4.0);
  EXPECT_EQ((*nodes)[0].payload, R"({"q":2})");
  EXPECT_EQ((*nodes)[1].path, "b=1");
  EXPECT_EQ((*nodes)[1].payload, R"({"q":1})");
  EXPECT_EQ((*nodes)[2].path, "c=1");
  EXPECT_TRUE(s.search_nodes(dev, key, "annealing")->empty());
  EXPECT_TRUE(s.search_nodes(this->device("B").key(), key, "mcts")->empty());
  EXPECT_TRUE(s.put_search_nodes(dev, key, "mcts", {}).ok());
  EXPECT_EQ(s.search_nodes(dev, key, "mcts")->size(), 3u);
}

TYPED_TEST_P(StoreConformance, BaselinesAreKeptPerDeviceProblemAndBackendAndTheNewestWins) {
  Store& s = this->store();
  Problem p = this->known("rmsnorm:rows=8,hidden=64");
  const std::string dev = this->device().key(), key = p.structural_key();
  EXPECT_FALSE(s.find_baseline(dev, key, "sim")->has_value());
  ASSERT_TRUE(s.put_baseline({dev, key, "sim", "t=1", Config::parse("t=1")->hash_hex(), ""}).ok());
  ASSERT_TRUE(s.put_baseline({dev, key, "cuda", "t=9", Config::parse("t=9")->hash_hex(), ""}).ok());
  ASSERT_TRUE(s.put_baseline({dev, key, "sim", "t=2", Config::parse("t=2")->hash_hex(), ""}).ok());
  auto b = s.find_baseline(dev, key, "sim");
  ASSERT_TRUE(b.ok() && b->has_value()) << (b.ok() ? "none" : b.error().message());
  EXPECT_EQ((**b).device_key, dev);
  EXPECT_EQ((**b).problem_key, key);
  EXPECT_EQ((**b).backend, "sim");
  EXPECT_EQ((**b).config, "t=2");
  EXPECT_EQ((**b).config_hash, Config::parse("t=2")->hash_hex());
  EXPECT_FALSE((**b).recorded_at.empty());
  EXPECT_EQ((**s.find_baseline(dev, key, "cuda")).config, "t=9");
  EXPECT_FALSE(s.find_baseline(this->device("B").key(), key, "sim")->has_value());
}

TYPED_TEST_P(StoreConformance, PriorsKeepTheirBytesAndTheNewestOfANameAnswers) {
  Store& s = this->store();
  EXPECT_FALSE(s.latest_prior("default")->has_value());
  const std::string model("\x00\x01\x02model\xff", 9), reservoir("rows\x00more", 9);
  auto first = s.put_prior({0, "default", "", 120, 0.8, false, model, reservoir});
  ASSERT_TRUE(first.ok()) << first.error().message();
  auto other = s.put_prior({0, "gemm-only", "", 5, 0.1, true, "m", "r"});
  auto second = s.put_prior({0, "default", "", 240, 0.9, true, model + model, reservoir});
  ASSERT_TRUE(other.ok() && second.ok());
  EXPECT_GT(*second, *first);
  auto p = s.latest_prior("default");
  ASSERT_TRUE(p.ok() && p->has_value());
  EXPECT_EQ((**p).id, *second);
  EXPECT_EQ((**p).name, "default");
  EXPECT_FALSE((**p).created_at.empty());
  EXPECT_EQ((**p).rows, 240);
  EXPECT_DOUBLE_EQ((**p).calibration, 0.9);
  EXPECT_TRUE((**p).quarantined);
  EXPECT_EQ((**p).model, model + model);
  EXPECT_EQ((**p).reservoir, reservoir);
  EXPECT_EQ((**s.latest_prior("gemm-only")).model, "m");
}

TYPED_TEST_P(StoreConformance, WritingTheSameThingTwiceKeepsOneRecord) {
  Store& s = this->store();
  Problem p = this->known("gemm:m=8,n=8,k=8");
  this->known("gemm:m=8,n=8,k=8");  // the device and problem again
  const std::string dev = this->device().key(), key = p.structural_key();
  const BaselineRecord b{dev, key, "sim", "a=1", Config::parse("a=1")->hash_hex(), ""};
  const std::vector<SearchNode> nodes{{"a=1", 3, 4.5, "{}"}};
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(s.put_baseline(b).ok());
    ASSERT_TRUE(s.put_search_nodes(dev, key, "mcts", nodes).ok());
  }
  EXPECT_EQ(s.devices()->size(), 1u);
  EXPECT_EQ(s.problems()->size(), 1u);
  EXPECT_EQ(s.search_nodes(dev, key, "mcts")->size(), 1u);
  EXPECT_EQ((**s.find_baseline(dev, key, "sim")).config, "a=1");
}

TYPED_TEST_P(StoreConformance, WhatIsWrittenIsSeenByASecondConnectionAndAfterReopening) {
  Problem p = this->known("rmsnorm:rows=8,hidden=4096");
  auto second = this->connect();
  ASSERT_TRUE(second);
  ASSERT_TRUE(this->store().record(this->row(p, "t=1", 3.0)).ok());
  ASSERT_TRUE(this->store().put_prior({0, "default", "", 1, 0.5, false, "m", "r"}).ok());
  // Committed when record() returned: another connection (another process) sees it at once.
  EXPECT_EQ(second->measurements({})->size(), 1u);
  EXPECT_TRUE(second->latest_prior("default")->has_value());
  ASSERT_TRUE(second->record(this->row(p, "t=2", 4.0)).ok());
  EXPECT_EQ(this->store().measurements({})->size(), 2u);
  second.reset();
  this->store_.reset();
  auto reopened = this->connect();
  ASSERT_TRUE(reopened);
  EXPECT_EQ(reopened->measurements({})->size(), 2u);
  EXPECT_EQ(reopened->devices()->size(), 1u);
  EXPECT_TRUE(reopened->find_problem(p.structural_key())->has_value());
}

TYPED_TEST_P(StoreConformance, WorkItemsAreLeasedOnceOldestFirstAndOnlyForTheirDevice) {
  Store& s = this->store();
  const std::string key = this->device().key(), kind = device_kind(this->device());
  auto item = [&](const std::string& device, const std::string& problem) {
    WorkItem w;
    w.device = device;
    w.backend = "sim";
    w.problem = problem;
    w.problem_name = "p-" + problem;
    w.options = R"({"seed":3})";
    auto id = s.enqueue(w);
    EXPECT_TRUE(id.ok()) << id.error().message();
    return id.ok() ? *id : 0;
  };
  const std::int64_t a = item(key, "gemm:m=1,n=8,k=8"), b = item(key, "gemm:m=2,n=8,k=8");
  const std::int64_t c = item(kind, "gemm:m=3,n=8,k=8"), d = item("another-device", "x");
  EXPECT_LT(a, b);
  auto first = s.lease_work({key}, key, 60);
  ASSERT_TRUE(first.ok()) << first.error().message();
  ASSERT_TRUE(first->has_value());
  const WorkItem& w = **first;
  EXPECT_EQ(w.id, a);
  EXPECT_EQ(w.state, "leased");
  EXPECT_EQ(w.attempts, 1);
  EXPECT_EQ(w.problem, "gemm:m=1,n=8,k=8");
  EXPECT_EQ(w.problem_name, "p-gemm:m=1,n=8,k=8");
  EXPECT_EQ(w.options, R"({"seed":3})");
  EXPECT_EQ(w.holder_pid, static_cast<std::int64_t>(getpid()));
  EXPECT_EQ(w.holder_device, key);
  EXPECT_FALSE(w.lease_until.empty());
  // Another connection (another worker) takes the next one, never the leased one.
  auto other = this->connect();
  ASSERT_TRUE(other);
  auto second = other->lease_work({key, kind}, key, 60);
  ASSERT_TRUE(second.ok() && second->has_value());
  EXPECT_EQ((**second).id, b);
  auto third = s.lease_work({key, kind}, key, 60);
  ASSERT_TRUE(third.ok() && third->has_value());
  EXPECT_EQ((**third).id, c);  // asked for by kind
  auto none = s.lease_work({key, kind}, key, 60);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());  // d is for another device

  // Renewing and finishing name the lease; a wrong token is not ours.
  EXPECT_FALSE(*s.renew_lease(a, w.lease_token + 1, 60));
  EXPECT_TRUE(*s.renew_lease(a, w.lease_token, 60));
  auto run = s.begin_run({0, "tune", "[]", "mcts", 1});
  ASSERT_TRUE(run.ok());
  EXPECT_FALSE(*s.finish_work(a, w.lease_token + 1, "done", "exhausted", *run));
  EXPECT_TRUE(*s.finish_work(a, w.lease_token, "done", "exhausted", *run));
  EXPECT_FALSE(*s.finish_work(a, w.lease_token, "done", "exhausted", *run));  // done already
  EXPECT_FALSE(*s.renew_lease(a, w.lease_token, 60));
  EXPECT_FALSE(s.finish_work(b, (**second).lease_token, "lost", "", 0).ok());  // not a state
  // Handed back, an item is leased again by the next worker, its attempts counted.
  EXPECT_TRUE(*other->finish_work(b, (**second).lease_token, "queued", "stopped", 0));
  auto again = s.lease_work({key}, key, 60);
  ASSERT_TRUE(again.ok() && again->has_value());
  EXPECT_EQ((**again).id, b);
  EXPECT_EQ((**again).attempts, 2);
  EXPECT_NE((**again).lease_token, (**second).lease_token);
  EXPECT_FALSE(*other->renew_lease(b, (**second).lease_token, 60));  // the old lease is gone

  auto items = s.work_items();
  ASSERT_TRUE(items.ok()) << items.error().message();
  ASSERT_EQ(items->size(), 4u);
  EXPECT_EQ((*items)[0].id, a);
  EXPECT_EQ((*items)[0].state, "done");
  EXPECT_EQ((*items)[0].message, "exhausted");
  EXPECT_EQ((*items)[0].run_id, *run);
  EXPECT_FALSE((*items)[0].finished_at.empty());
  EXPECT_TRUE((*items)[0].lease_until.empty());
  EXPECT_EQ((*items)[1].state, "leased");
  EXPECT_EQ((*items)[2].state, "leased");
  EXPECT_EQ((*items)[3].id, d);
  EXPECT_EQ((*items)[3].state, "queued");
  EXPECT_FALSE((*items)[3].created_at.empty());
}

TYPED_TEST_P(StoreConformance, ALeaseThatRanOutIsTakenAgainAndItsHoldersRunsAreInterrupted) {
  Store& s = this->store();
  Problem p = this->known("gemm:m=1,n=64,k=64");
  const std::string key = this->device().key();
  WorkItem item;
  item.device = key;
  item.backend = "sim";
  item.problem = p.text();
  item.options = "{}";
  auto id = s.enqueue(item);
  ASSERT_TRUE(id.ok()) << id.error().message();
  // A worker leases it for a moment, begins its run and claims a candidate, then stops renewing.
  auto lease = s.lease_work({key}, key, 0.01);
  ASSERT_TRUE(lease.ok() && lease->has_value());
  auto held = s.begin_run({0, "tune", "[]", "mcts", 1});
  auto other_run = s.begin_run({0, "tune", "[]", "mcts", 1});
  ASSERT_TRUE(held.ok() && other_run.ok());
  MeasurementRow r = this->row(p, "t=1", 3.0);
  const ClaimKey claim{r.device_key, r.problem_key, r.backend, r.regime, r.config_hash};
  EXPECT_EQ(*s.claim(claim, *held), ClaimResult::kOurs);
  EXPECT_EQ(*s.claim(claim, *other_run), ClaimResult::kHeld);
  usleep(200 * 1000);  // 20 times the lease

  auto taken = this->connect()->lease_work({key}, key, 60);
  ASSERT_TRUE(taken.ok()) << taken.error().message();
  ASSERT_TRUE(taken->has_value());
  EXPECT_EQ((**taken).id, *id);
  EXPECT_EQ((**taken).attempts, 2);
  // The former holder's runs (this process's, as the holder was) are closed and their claims
  // free; the former lease can be neither renewed nor finished.
  auto runs = s.runs();
  ASSERT_TRUE(runs.ok()) << runs.error().message();
  ASSERT_EQ(runs->size(), 2u);
  for (const RunInfo& run : *runs) EXPECT_EQ(run.status, "interrupted") << run.id;
  EXPECT_EQ(*s.claim(claim, *other_run), ClaimResult::kOurs);
  EXPECT_FALSE(*s.renew_lease(*id, (**lease).lease_token, 60));
  EXPECT_FALSE(*s.finish_work(*id, (**lease).lease_token, "done", "", 0));
  EXPECT_TRUE(*s.finish_work(*id, (**taken).lease_token, "done", "exhausted", 0));
}

REGISTER_TYPED_TEST_SUITE_P(
    StoreConformance, RunsBeginRunningAndFinishWithAStatus,
    ARunNamesItsOwnerItsSearchAndTheRunItResumes,
    ACandidateIsClaimedByOneRunAtATimeUntilReleasedOrMeasured, FinishingARunDropsItsClaims,
    DevicesAreKeptOncePerKeyWithTheNewestFingerprint, ProblemsAreFoundByKeyOrNameAndRefreshedByKey,
    EveryFieldOfAMeasurementReadsBackAsWritten, FindAnswersTheNewestRowOfExactlyItsKey,
    MeasurementsMatchEveryFieldOfTheQueryOldestFirst, DiscardedRowsAreNeverAnsweredAgain,
    RowsNamingWhatTheStoreDoesNotKnowAreRefused, SearchNodesAreReplacedByPathAndKeptPerStrategy,
    BaselinesAreKeptPerDeviceProblemAndBackendAndTheNewestWins,
    PriorsKeepTheirBytesAndTheNewestOfANameAnswers, WritingTheSameThingTwiceKeepsOneRecord,
    WhatIsWrittenIsSeenByASecondConnectionAndAfterReopening,
    WorkItemsAreLeasedOnceOldestFirstAndOnlyForTheirDevice,
    ALeaseThatRanOutIsTakenAgainAndItsHoldersRunsAreInterrupted);

}  // namespace attune
