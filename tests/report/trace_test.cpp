// The evaluation trace of attune tune --trace: its columns, quoting and empty fields, and a file
// that holds every row written before the writer went away.
#include "report/trace.h"

#include <filesystem>

#include <gtest/gtest.h>

#include "support/temp_dir.h"

namespace attune {
namespace {

using testing::read_bytes;
using testing::TempDir;

TEST(Trace, TheHeaderExtendsSearchReplaysColumns) {
  EXPECT_EQ(trace_header(),
            "problem,strategy,seed,evaluation,config,verdict,time_us,best_us,replayed,new_best");
}

TEST(Trace, ARowQuotesConfigsAndLeavesTimesEmptyWhereThereAreNone) {
  const Problem p("rmsnorm", {{"rows", "8"}}, "rmsnorm");
  CandidateResult failed{"block=64,vec=2", Verdict::kCrashed, std::nullopt, std::nullopt, "", true};
  EXPECT_EQ(trace_row({p, 1, 40, failed, false, 1, std::nullopt, std::nullopt}, "mcts", 7),
            "rmsnorm,mcts,7,1,\"block=64,vec=2\",crashed,,,1,0");
  CandidateResult ok{"block=128", Verdict::kOk, 3.25, 3.5, "", false};
  EXPECT_EQ(trace_row({p, 2, 40, ok, true, 2, 3.25, 3.25}, "grid", 0),
            "rmsnorm,grid,0,2,block=128,ok,3.25,3.25,0,1");
  const Problem odd("user", {{"n", "1"}}, "say \"hi\", twice");
  EXPECT_EQ(trace_row({odd, 3, 40, ok, false, 3, 3.25, 1.5}, "mcts", 0),
            "\"say \"\"hi\"\", twice\",mcts,0,3,block=128,ok,3.25,1.5,0,0");
}

TEST(Trace, EachRowIsInTheFileAsSoonAsItIsWritten) {
  TempDir dir;
  auto w = TraceWriter::open(dir.file("t.csv"), "mcts", 1);
  ASSERT_TRUE(w.ok()) << w.error().message();
  EXPECT_EQ(read_bytes(dir.file("t.csv")), trace_header() + "\n");
  const Problem p("rmsnorm", {{"rows", "8"}}, "rmsnorm");
  CandidateResult ok{"block=128", Verdict::kOk, 3.25, 3.5, "", false};
  ASSERT_TRUE(w->write({p, 1, 40, ok, true, 1, 3.25, 3.25}).ok());
  // Still open: the row is on disk, as a killed run would leave it.
  EXPECT_EQ(read_bytes(dir.file("t.csv")),
            trace_header() + "\nrmsnorm,mcts,1,1,block=128,ok,3.25,3.25,0,1\n");
}

TEST(Trace, APathThatCannotBeWrittenIsAnErrorNamingIt) {
  TempDir dir;
  auto w = TraceWriter::open(dir.file("no/such/dir/t.csv"), "mcts", 0);
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.error().message().find("no/such/dir/t.csv"), std::string::npos);
  EXPECT_NE(w.error().message().find("No such file or directory"), std::string::npos)
      << w.error().message();
  EXPECT_FALSE(std::filesystem::exists(dir.file("no")));
}

}  // namespace
}  // namespace attune
