// attune report as a user runs it: a page from a sim tune, its selections, and bad input (a missing
// plotting library, an unknown run or problem, a --verify file that is not verify's) refused with
// one line, exit 2, the database untouched.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/run.h"

namespace attune {
namespace {

using testing::BadInput;
using testing::expect_refused;
using testing::read_bytes;
using testing::run_attune;
using testing::TempDir;
using testing::write_bytes;

struct ReportCli : ::testing::Test {
  TempDir dir;
  void SetUp() override {
    auto r = run_attune("tune --backend sim --problem rmsnorm --max-candidates 20", dir.path());
    ASSERT_EQ(r.code, 0) << r.err;
  }
};

TEST_F(ReportCli, WritesOnePageThatFetchesNothing) {
  auto r = run_attune("report -o page.html", dir.path());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("wrote page.html: 1 problems, 1 runs"), std::string::npos) << r.err;
  const std::string page = read_bytes(dir.file("page.html"));
  EXPECT_NE(page.find("Chart.js v3"), std::string::npos);  // the library, inlined
  for (const char* s : {"overview", "problems", "shapes", "failures", "health"})
    EXPECT_NE(page.find(std::string("<section id=\"") + s + "\""), std::string::npos) << s;
  EXPECT_EQ(page.find("<script src"), std::string::npos);
  EXPECT_EQ(page.find("<link"), std::string::npos);
  auto one = run_attune("report --run 1 --problem rmsnorm -o one.html", dir.path());
  EXPECT_EQ(one.code, 0) << one.err;
}

TEST_F(ReportCli, BadInputIsOneLineAndExitTwo) {
  write_bytes(dir.file("not-verify.json"), R"({"rows": 3})");
  const BadInput cases[] = {
      {"report --run 7 -o p.html", "no run 7 in the database (it holds runs 1 to 1)"},
      {"report --problem nosuch -o p.html", "no problem or op named 'nosuch'"},
      {"report --verify v.json -o p.html", "--verify needs --table"},
      {"report --table missing.json -o p.html", "missing.json"},
      {"report", "--out is required"},
  };
  for (const auto& c : cases) expect_refused(c, dir, "attune.db");
  // Without Chart.js no page can be written: the line names the Debian package.
  auto r = run_attune("report -o p.html", dir.path(), "ATTUNE_CHART_JS=/nonexistent/chart.min.js");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(testing::lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("install Debian's libjs-chart.js"), std::string::npos) << r.err;
  auto none = run_attune("--db nosuch.db report -o p.html", dir.path());
  EXPECT_EQ(none.code, 2) << none.err;
}

}  // namespace
}  // namespace attune
