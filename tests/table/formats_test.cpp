// The CSV and C++ renderings of a table: the CSV's columns and quoting, and a generated header
// that compiles on its own (with another device's header beside it) and holds the rows.
#include "table/formats.h"
#include "core/files.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "support/temp_dir.h"

namespace attune::table {
namespace {

Table sample(const std::string& name = "NVIDIA H200", int sms = 132) {
  Table t;
  t.attune_version = "test";
  t.created_at = "2025-01-01T00:00:00Z";
  t.device = {"cuda", name, "sm_90", sms, 150ull << 30};
  OpTable g{"gemm", "bf16", {}, {}};
  Row r;
  r.problem = *Problem::parse("gemm:bias=0,dtype=bf16,k=4096,m=1,n=4096");
  r.backend = "cuda";
  r.config = "kernel=skinny_tc,tc_warps=4";
  r.median_us = 10;
  r.baseline_us = 12.5;
  r.baseline_config = "kernel=cublaslt,algo=0";
  r.error = {"max_rel_err", 1e-3, 2e-2};
  g.rows.push_back(r);
  t.ops.push_back(g);
  OpTable b{"gemm",
            "fp16",
            {MatchPolicy::Kind::kBucketed, "m", "no-harm, then \"least\" max regret"},
            {}};
  r.problem = *Problem::parse("gemm:bias=0,dtype=fp16,k=4096,n=4096");
  r.bucket = Bucket{"m", 1, 16, {1, 8, 16}};
  r.max_regret = 0.25;
  b.rows.push_back(r);
  t.ops.push_back(b);
  return t;
}

std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

TEST(Formats, CsvHasAHeaderAndOneQuotedLinePerRow) {
  auto lines = split_lines(to_csv_text(sample()));
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(
      lines[0],
      "device_key,op,dtype,match,axis,lo,hi,points,problem,structural_key,backend,config,median_us,"
      "baseline_us,baseline_config,speedup,error_metric,error_value,error_tolerance,max_regret");
  const std::string key = sample().device.key();
  const std::string skey =
      Problem::parse("gemm:bias=0,dtype=bf16,k=4096,m=1,n=4096")->structural_key();
  EXPECT_EQ(lines[1],
            key + ",gemm,bf16,exact,,,,,\"gemm:bias=0,dtype=bf16,k=4096,m=1,n=4096\"," + skey +
                ",cuda,\"kernel=skinny_tc,tc_warps=4\",10,12.5,\"kernel=cublaslt,algo=0\",1.25,"
                "max_rel_err,0.001,0.02,");
  EXPECT_NE(lines[2].find(",gemm,fp16,bucketed,m,1,16,1;8;16,"), std::string::npos) << lines[2];
  EXPECT_EQ(lines[2].substr(lines[2].rfind(',') + 1), "0.25");
}

TEST(Formats, RenderRefusesAnInvalidTableAndNamesFormats) {
  Table t = sample();
  t.ops[0].rows[0].median_us = 20;  // slower than its baseline
  EXPECT_FALSE(render(t, Format::kCsv).ok());
  EXPECT_FALSE(render(t, Format::kCpp).ok());
  EXPECT_EQ(*parse_format("cpp"), Format::kCpp);
  EXPECT_NE(parse_format("yaml").error().message().find("json, csv, cpp"), std::string::npos);
  EXPECT_EQ(extension(Format::kCpp), "h");
}

TEST(Formats, TheGeneratedHeaderCompilesAloneAndHoldsTheRows) {
  testing::TempDir dir;
  const Table h200 = sample();
  const Table other = sample("Other \"GPU\" \\ x", 7);  // a name that needs escaping
  ASSERT_TRUE(write_text_file(dir.file("h200.h"), *render(h200, Format::kCpp)).ok());
  ASSERT_TRUE(write_text_file(dir.file("other.h"), *render(other, Format::kCpp)).ok());
  const std::string ns = "attune_tuned::nvidia_h200_sm_90_132sm";
  const std::string tu =
      "#include \"h200.h\"\n#include \"other.h\"\n"
      "namespace t = " +
      ns +
      ";\n"
      "static_assert(t::kTableVersion == 1);\n"
      "static_assert(t::kDeviceKey == \"" +
      h200.device.key() +
      "\");\n"
      "static_assert(t::kDeviceSmCount == 132);\n"
      "static_assert(t::kRows.size() == 2);\n"
      "static_assert(t::kRows[0].config == \"kernel=skinny_tc,tc_warps=4\");\n"
      "static_assert(t::kRows[0].match == t::Match::kExact && t::kRows[0].lo == 0);\n"
      "static_assert(t::kRows[0].median_us == 10.0 && t::kRows[0].baseline_us == 12.5);\n"
      "static_assert(t::kRows[1].match == t::Match::kBucketed && t::kRows[1].lo == 1 && "
      "t::kRows[1].hi == 16);\n"
      "static_assert(t::kRows[1].max_regret == 0.25);\n"
      "static_assert(t::kBucketRules.size() == 1 && t::kBucketRules[0].axis == \"m\");\n"
      "static_assert(attune_tuned::other_gpu_x_sm_90_7sm::kDeviceName == \"Other \\\"GPU\\\" \\\\ "
      "x\");\n"
      "int main() { return static_cast<int>(t::kRows.size()) - 2; }\n";
  std::ofstream(dir.file("use.cpp")) << tu;
  const std::string cmd =
      std::string("'") + ATTUNE_CXX + "' -std=c++20 -Wall -Wextra -Werror -fsyntax-only -I '" +
      dir.path().string() + "' '" + dir.file("use.cpp") + "' 2>'" + dir.file("cc.log") + "'";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << testing::read_bytes(dir.file("cc.log")) << "\n"
                                         << testing::read_bytes(dir.file("h200.h"));
}

TEST(Formats, AnEmptyTableStillGivesACompilingHeader) {
  testing::TempDir dir;
  Table t = sample();
  t.ops.clear();
  ASSERT_TRUE(write_text_file(dir.file("empty.h"), to_cpp_header(t)).ok());
  std::ofstream(dir.file("use.cpp"))
      << "#include "
         "\"empty.h\"\nstatic_assert(attune_tuned::nvidia_h200_sm_90_132sm::kRows.empty());\n";
  const std::string cmd =
      std::string("'") + ATTUNE_CXX + "' -std=c++20 -Wall -Wextra -Werror -fsyntax-only -I '" +
      dir.path().string() + "' '" + dir.file("use.cpp") + "' 2>'" + dir.file("cc.log") + "'";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << testing::read_bytes(dir.file("cc.log"));
}

TEST(Formats, SaveTextReportsAnUnwritablePath) {
  testing::TempDir dir;
  auto st = write_text_file(dir.file("no/such/dir/t.csv"), "x");
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("cannot write"), std::string::npos);
}

}  // namespace
}  // namespace attune::table
