// stack tune into a real SQLite tuning database: a problem per provider (op "stack"), one row per
// candidate with its verdict, found again by the queries `attune eval` uses.
#include <gtest/gtest.h>

#include "backends/command/fixtures.h"
#include "store/store.h"
#include "tune/stack.h"

namespace attune::command {
namespace {

using testing::kFakeProvider;
using testing::TempDir;
using testing::write_file;

TEST(StackStore, ATuneLandsInTheSqliteDatabase) {
  TempDir dir;
  write_file(dir / "records.txt", "alpha\nbeta\n");
  write_file(dir / "stack.yaml",
             "stack: demo\n"
             "telltales: [InductorError]\n"
             "providers:\n"
             "  - name: encoder\n"
             "    command: [\"" +
                 kFakeProvider +
                 "\", \"--profile\", \"{variant}\", \"--in\", \"{sample}\","
                 " \"--rps\", \"{rps}\"]\n"
                 "    knobs: {variant: [instant, wrong, fail], rps: [10, 20]}\n"
                 "    defaults: {variant: instant, rps: 10}\n"
                 "    sample: {file: records.txt}\n"
                 "    throughput: {regex: \"rps=([0-9]+)\"}\n");
  auto stack = load_stack(dir / "stack.yaml");
  ASSERT_TRUE(stack.ok()) << stack.error().message();
  platform::HostFingerprint host;
  host.cpu_model = "Test CPU";
  host.logical_cpus = 4;
  std::string db = dir / "attune.db";
  {
    auto store = open_store(db, true);
    ASSERT_TRUE(store.ok()) << store.error().message();
    StackTuneOptions o;
    o.command.repeats = 1;
    auto r = tune_stack(*stack, host, **store, o);
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_EQ(table::stack_row(r->table, r->notes.providers[0])->config, "variant=instant,rps=20");
  }
  auto store = open_store(db, false);
  ASSERT_TRUE(store.ok()) << store.error().message();
  auto problem = (*store)->find_problem("demo/encoder");
  ASSERT_TRUE(problem.ok()) << problem.error().message();
  ASSERT_TRUE(problem->has_value());
  EXPECT_EQ((*problem)->problem.op(), "stack");

  MeasurementQuery q;
  q.problem = "demo/encoder";
  auto rows = (*store)->measurements(q);
  ASSERT_TRUE(rows.ok()) << rows.error().message();
  ASSERT_EQ(rows->size(), 6u);
  std::map<std::string, Verdict> verdicts;
  for (const auto& row : *rows) {
    verdicts[row.config] = row.outcome.verdict;
    EXPECT_EQ(row.device_key, host.device().key());
    EXPECT_EQ(row.backend, "command");
  }
  EXPECT_EQ(verdicts.at("variant=instant,rps=10"), Verdict::kOk);
  EXPECT_EQ(verdicts.at("variant=instant,rps=20"), Verdict::kOk);
  EXPECT_EQ(verdicts.at("variant=wrong,rps=20"), Verdict::kWrongOutput);
  EXPECT_EQ(verdicts.at("variant=fail,rps=10"), Verdict::kCrashed);

  q.failures_only = true;
  auto failures = (*store)->measurements(q);
  ASSERT_TRUE(failures.ok());
  EXPECT_EQ(failures->size(), 4u);
  // The op finds them too, as `attune eval variants --kernel stack` asks.
  MeasurementQuery by_op;
  by_op.problem = "stack";
  auto all = (*store)->measurements(by_op);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 6u);

  auto runs = (*store)->runs();
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 1u);
  EXPECT_EQ(runs->at(0).command, "stack tune");
  EXPECT_EQ(runs->at(0).status, "done");
}

}  // namespace
}  // namespace attune::command
