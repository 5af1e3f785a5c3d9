// The table format: a round trip, and the malformed tables libattune-rt must refuse at open.
#include "table/table.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace attune::table {
namespace {

Table sample() {
  Table t;
  t.attune_version = "test";
  t.device.backend = "cuda";
  t.device.name = "NVIDIA H200";
  t.device.arch = "sm_90";
  t.device.sm_count = 132;
  t.device.memory_bytes = 150ull << 30;
  OpTable g{"gemm", "bf16", {}, {}};
  Row r;
  r.problem = *Problem::parse("gemm:bias=0,dtype=bf16,k=4096,m=1,n=4096");
  r.backend = "cuda";
  r.config = "kernel=skinny_tc,tc_warps=4";
  r.median_us = 10;
  r.baseline_us = 12;
  r.error = {"max_rel_err", 1e-3, 2e-2};
  g.rows.push_back(r);
  t.ops.push_back(g);
  OpTable b{"gemm", "fp16", {MatchPolicy::Kind::kBucketed, "m", "no-harm, least max regret"}, {}};
  r.problem = *Problem::parse("gemm:bias=0,dtype=fp16,k=4096,n=4096");
  r.bucket = Bucket{"m", 1, 16, {1, 8, 16}};
  b.rows.push_back(r);
  r.bucket = Bucket{"m", 17, 64, {32, 64}};
  b.rows.push_back(r);
  t.ops.push_back(b);
  return t;
}

TEST(Table, RoundTripsAndMatches) {
  auto back = parse_table(to_json_text(sample()));
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_EQ(to_json_text(*back), to_json_text(sample()));
  const OpTable* exact = back->find("gemm", "bf16");
  ASSERT_NE(exact, nullptr);
  EXPECT_NE(match(*exact, *Problem::parse("gemm:bias=0,dtype=bf16,k=4096,m=1,n=4096")), nullptr);
  EXPECT_EQ(match(*exact, *Problem::parse("gemm:bias=0,dtype=bf16,k=4096,m=2,n=4096")), nullptr);
  const OpTable* bucketed = back->find("gemm", "fp16");
  ASSERT_NE(bucketed, nullptr);
  const Row* r = match(*bucketed, *Problem::parse("gemm:bias=0,dtype=fp16,k=4096,m=20,n=4096"));
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->bucket->lo, 17);
  EXPECT_EQ(match(*bucketed, *Problem::parse("gemm:bias=0,dtype=fp16,k=4096,m=65,n=4096")),
            nullptr);
}

std::string refusal(const std::string& text) {
  auto t = parse_table(text);
  return t ? "" : t.error().message();
}

TEST(Table, RefusesMalformedTables) {
  const std::string good = to_json_text(sample());
  EXPECT_NE(refusal(good.substr(0, good.size() / 2)).find("truncated"), std::string::npos);
  auto j = nlohmann::json::parse(good);

  auto newer = j;
  newer["version"] = kVersion + 1;
  EXPECT_NE(refusal(newer.dump()).find("newer attune"), std::string::npos);

  auto dup = j;
  dup["ops"][0]["rows"].push_back(dup["ops"][0]["rows"][0]);
  EXPECT_NE(refusal(dup.dump()).find("duplicates"), std::string::npos);

  auto overlap = j;
  overlap["ops"][1]["rows"][1]["bucket"]["lo"] = 16;
  EXPECT_NE(refusal(overlap.dump()).find("overlaps"), std::string::npos);

  auto backend = j;
  backend["ops"][0]["rows"][0]["backend"] = "opencl";
  EXPECT_NE(refusal(backend.dump()).find("unknown backend 'opencl'"), std::string::npos);

  auto slower = j;
  slower["ops"][0]["rows"][0]["median_us"] = 13.0;
  EXPECT_NE(refusal(slower.dump()).find("slower than its baseline"), std::string::npos);

  auto wrong = j;
  wrong["ops"][0]["rows"][0]["error"]["value"] = 0.5;
  EXPECT_NE(refusal(wrong.dump()).find("correctness gate"), std::string::npos);

  auto key = j;
  key["device"]["sm_count"] = 114;
  EXPECT_NE(refusal(key.dump()).find("device_key"), std::string::npos);

  auto timed = j;  // per-point times: one per point, and no point slower than its baseline
  timed["ops"][1]["rows"][0]["bucket"]["point_us"] = {9.0, 11.0, 12.0};
  timed["ops"][1]["rows"][0]["bucket"]["baseline_point_us"] = {10.0, 12.0, 12.5};
  EXPECT_EQ(refusal(timed.dump()), "");
  auto harm = timed;
  harm["ops"][1]["rows"][0]["bucket"]["point_us"][1] = 12.5;
  EXPECT_NE(refusal(harm.dump()).find("slower than its baseline at m=8"), std::string::npos);
  auto short_times = timed;
  short_times["ops"][1]["rows"][0]["bucket"]["point_us"].erase(2);
  EXPECT_NE(refusal(short_times.dump()).find("one time per point"), std::string::npos);

  auto missing = j;
  missing["ops"][0]["rows"][0].erase("config");
  EXPECT_NE(refusal(missing.dump()).find("malformed table"), std::string::npos);

  EXPECT_NE(refusal(R"({"format": "something else"})").find("not an attune table"),
            std::string::npos);

  // Wrong JSON types are refused, never thrown or cast: a number where a string or a whole
  // number belongs, lists given as objects, sizes beyond int64.
  EXPECT_NE(refusal(R"({"format": 5})").find("not an attune table"), std::string::npos);
  EXPECT_NE(refusal(R"({"format": null})").find("not an attune table"), std::string::npos);
  for (const nlohmann::json& version : {nlohmann::json(1.99), nlohmann::json(4294967297ull),
                                        nlohmann::json(1e300), nlohmann::json("1")}) {
    auto v = j;
    v["version"] = version;
    EXPECT_NE(refusal(v.dump()).find("version"), std::string::npos) << version;
    EXPECT_EQ(refusal(v.dump()).find("version 1 "), std::string::npos) << version;
  }
  auto ops_object = j;
  ops_object["ops"] = nlohmann::json{{"first", j["ops"][0]}};
  EXPECT_NE(refusal(ops_object.dump()).find("\"ops\" must be a list"), std::string::npos);
  auto rows_object = j;
  rows_object["ops"][0]["rows"] = nlohmann::json{{"r", j["ops"][0]["rows"][0]}};
  EXPECT_NE(refusal(rows_object.dump()).find("\"rows\" must be a list"), std::string::npos);
  auto huge = j;
  huge["ops"][1]["rows"][0]["bucket"]["hi"] = 18446744073709551615ull;
  EXPECT_NE(refusal(huge.dump()).find("bucket hi 18446744073709551615 is more than"),
            std::string::npos);
  auto fraction = j;
  fraction["ops"][1]["rows"][0]["bucket"]["points"][0] = 1.5;
  EXPECT_NE(refusal(fraction.dump()).find("a bucket point must be a whole number"),
            std::string::npos);
  auto sms = j;
  sms["device"]["sm_count"] = 1e300;
  EXPECT_NE(refusal(sms.dump()).find("sm_count must be a whole number"), std::string::npos);
}

TEST(Table, ProblemsWithoutADtypeBelongToTheNoneOpTable) {
  Table t = sample();
  Row r = t.ops[0].rows[0];
  r.problem = *Problem::parse("rmsnorm:hidden=4096,rows=8");  // the sim's problems carry no dtype
  EXPECT_EQ(dtype_of(r.problem), kNoDtype);
  t.ops.push_back(OpTable{"rmsnorm", std::string(kNoDtype), {}, {r}});
  EXPECT_TRUE(validate(t).ok()) << validate(t).error().message();
  auto back = parse_table(to_json_text(t));
  ASSERT_TRUE(back) << back.error().message();
  // A query that names a dtype never lands in it.
  EXPECT_EQ(back->find("rmsnorm", "bf16"), nullptr);
  t.ops.back().dtype = "bf16";
  EXPECT_NE(validate(t).error().message().find("dtype is not 'bf16'"), std::string::npos);
}

}  // namespace
}  // namespace attune::table
