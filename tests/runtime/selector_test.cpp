// libattune-rt's dispatch decision on the CPU: tables refused at open, the fingerprint guard, the
// index (exact rows and buckets), counters, the ATTUNE_LOG_TUNED log and the ATTUNE_HARVEST round
// trip, and the slot map under concurrent first calls.
#include "runtime/selector.h"

#include <sys/stat.h>

#include <gtest/gtest.h>

#include <stdlib.h>

#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/shapes_file.h"
#include "runtime/fixtures.h"

namespace attune::runtime {
namespace {

using namespace attune::runtime::testing;

ShapeKey gemm(std::int64_t m, std::int64_t n = 4096, std::int64_t k = 4096, Dtype d = Dtype::kBf16,
              bool bias = false) {
  return ShapeKey{*op_kind("gemm"), d, bias, {m, n, k}};
}
ShapeKey rmsnorm(std::int64_t rows, std::int64_t hidden = 4096, bool residual = true) {
  return ShapeKey{*op_kind("rmsnorm"), Dtype::kBf16, residual, {rows, hidden}};
}

std::unique_ptr<Selector> open_ok(const std::string& path, const DeviceFingerprint& here = h200(),
                                  const SelectorOptions& o = {}) {
  auto s = Selector::open(path, here, o);
  EXPECT_TRUE(s.ok()) << s.error().message();
  return s ? std::move(*s) : nullptr;
}

std::string refusal(const std::string& path, const RowCheck& check = {}) {
  auto s = Selector::open(path, h200(), {}, check);
  return s ? "" : s.error().message();
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

TEST(RuntimeOpen, RefusesMalformedTablesWhole) {
  TempDir dir;
  const std::string good = table::to_json_text(sample_table());
  ASSERT_EQ(refusal(dir.write("good.json", good)), "");
  auto j = nlohmann::json::parse(good);

  const std::string truncated = dir.write("truncated.json", good.substr(0, good.size() / 2));
  std::string why = refusal(truncated);
  EXPECT_NE(why.find(truncated), std::string::npos) << why;  // the message names the file
  EXPECT_NE(why.find("truncated"), std::string::npos) << why;

  auto newer = j;
  newer["version"] = table::kVersion + 1;
  EXPECT_NE(refusal(dir.write("newer.json", newer.dump())).find("newer attune"), std::string::npos);
  auto older = j;
  older["version"] = 0;
  EXPECT_NE(refusal(dir.write("older.json", older.dump())).find("table version 0"),
            std::string::npos);

  auto dup = j;
  dup["ops"][0]["rows"].push_back(dup["ops"][0]["rows"][0]);
  EXPECT_NE(refusal(dir.write("dup.json", dup.dump())).find("duplicates"), std::string::npos);

  auto backend = j;
  backend["ops"][0]["rows"][0]["backend"] = "opencl";
  EXPECT_NE(refusal(dir.write("backend.json", backend.dump())).find("unknown backend 'opencl'"),
            std::string::npos);

  EXPECT_NE(refusal(dir.file("absent.json")).find("absent.json does not exist"), std::string::npos);
}

TEST(RuntimeOpen, RefusesRowsItCannotDispatch) {
  TempDir dir;
  auto j = nlohmann::json::parse(table::to_json_text(sample_table()));

  // A backend the table format knows (for tests) but the runtime cannot run.
  auto sim = j;
  sim["ops"][0]["rows"][1]["backend"] = "sim";
  std::string why = refusal(dir.write("sim.json", sim.dump()));
  EXPECT_NE(why.find("gemm bf16 row 2"), std::string::npos) << why;
  EXPECT_NE(why.find("backend 'sim' is not one libattune-rt runs"), std::string::npos) << why;

  // An attribute the entry points have no argument for.
  table::Table t = sample_table();
  t.ops[0].rows[0].problem = *Problem::parse("gemm:bias=0,dtype=bf16,k=4096,layout=tn,m=1,n=4096");
  why = refusal(dir.write("attr.json", table::to_json_text(t)));
  EXPECT_NE(why.find("attribute 'layout'"), std::string::npos) << why;

  // Buckets over an axis the runtime does not bucket.
  t = sample_table();
  t.ops[1].rows.pop_back();  // n=1024 would overlap once n is the axis
  t.ops[1].match.axis = "n";
  for (auto& r : t.ops[1].rows) {
    r.bucket->axis = "n";
    auto attrs = r.problem.attrs();
    attrs.erase("n");
    attrs["m"] = "1";
    r.problem = Problem("gemm", attrs);
  }
  why = refusal(dir.write("axis.json", table::to_json_text(t)));
  EXPECT_NE(why.find("a bucket over 'n'"), std::string::npos) << why;

  // Two rows the table tells apart by text that answer the same call (bias absent means 0).
  t = sample_table();
  t.ops[0].rows.push_back(row("gemm:dtype=bf16,k=4096,m=1,n=4096", kTiled));
  why = refusal(dir.write("same.json", table::to_json_text(t)));
  EXPECT_NE(why.find("answer the same shapes"), std::string::npos) << why;

  // The execution layer's plan check refuses a config: the whole table is refused.
  const std::string path = dir.write("plan.json", table::to_json_text(sample_table()));
  why = refusal(path, [](const Problem& p, const Config& c) -> Status {
    if (c.get("kernel") && c.get("kernel")->as_word() == "tiled")
      return Error::invalid_argument("no tiled kernel here");
    EXPECT_TRUE(p.attr("m") ||
                p.attr("rows"));  // bucket rows are checked at a point of their bucket
    return Status::success();
  });
  EXPECT_NE(why.find("cannot run: no tiled kernel here"), std::string::npos) << why;
  EXPECT_NE(why.find("gemm bf16 row 3"), std::string::npos) << why;
}

TEST(RuntimeOpen, UnknownOpTablesAreNotUsedAndSaySo) {
  TempDir dir;
  table::Table t = sample_table();
  table::OpTable user{"softmax", "bf16", {}, {}};
  user.rows.push_back(row("softmax:dtype=bf16,n=4096", "block=128"));
  t.ops.push_back(user);
  ::testing::internal::CaptureStderr();
  auto s = open_ok(dir.write("t.json", table::to_json_text(t)));
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("no entry point for 'softmax bf16'"), std::string::npos) << err;
  EXPECT_EQ(s->index().rows().size(), 9u);
}

TEST(RuntimeGuard, AnotherDevicesTableRunsTheBaselineForEveryCallWarnedOnce) {
  TempDir dir;
  const std::string path = dir.write("t.json", table::to_json_text(sample_table(a100())));
  ::testing::internal::CaptureStderr();
  auto s = open_ok(path, h200());
  for (int i = 0; i < 3; ++i) {
    for (const ShapeKey& k : {gemm(1), gemm(16), gemm(8, 4096, 4096, Dtype::kFp16), rmsnorm(16)}) {
      Slot& slot = s->select(k);
      EXPECT_EQ(slot.row.load(), nullptr) << slot.problem;
      EXPECT_EQ(slot.matched, nullptr);
      EXPECT_EQ(slot.why, "miss: the table was tuned for another device");
    }
  }
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(count(err, "attune-rt:"), 1u) << err;
  EXPECT_NE(err.find("was tuned for another device (NVIDIA A100-SXM4-80GB"), std::string::npos)
      << err;
  EXPECT_NE(err.find("this is NVIDIA H200"), std::string::npos) << err;
  EXPECT_TRUE(s->device_mismatch());
  Counters c = s->counters();
  EXPECT_EQ(c.hits, 0u);
  EXPECT_EQ(c.misses, 12u);
  EXPECT_EQ(c.shapes, 4u);

  // The same table on its own device engages.
  auto same = open_ok(path, a100());
  EXPECT_FALSE(same->device_mismatch());
  EXPECT_NE(same->select(gemm(1)).row.load(), nullptr);
}

TEST(RuntimeIndex, ExactRowsAndBuckets) {
  TempDir dir;
  auto s = open_ok(dir.write("t.json", table::to_json_text(sample_table())));
  auto row_of = [&](const ShapeKey& k) -> int {
    const IndexedRow* r = s->index().find(k);
    return r ? r->number : 0;
  };
  // Exact rows: every attribute must match.
  EXPECT_EQ(row_of(gemm(1)), 1);
  EXPECT_EQ(row_of(gemm(16)), 2);
  EXPECT_EQ(row_of(gemm(64)), 3);
  EXPECT_EQ(row_of(gemm(1, 4096, 4096, Dtype::kBf16, true)), 4);
  EXPECT_EQ(row_of(gemm(2)), 0);
  EXPECT_EQ(row_of(gemm(65)), 0);
  EXPECT_EQ(row_of(gemm(16, 4096, 4096, Dtype::kBf16, true)), 0);  // bias differs
  EXPECT_EQ(row_of(gemm(1, 4096, 1024)), 0);                       // k differs
  EXPECT_EQ(row_of(gemm(1, 1024, 4096)), 0);                       // n differs
  // Buckets: lo and hi inclusive, gaps and other groups miss.
  for (std::int64_t m : {1, 5, 16}) EXPECT_EQ(row_of(gemm(m, 4096, 4096, Dtype::kFp16)), 5) << m;
  for (std::int64_t m : {17, 33, 64}) EXPECT_EQ(row_of(gemm(m, 4096, 4096, Dtype::kFp16)), 6) << m;
  EXPECT_EQ(row_of(gemm(65, 4096, 4096, Dtype::kFp16)), 0);
  EXPECT_EQ(row_of(gemm(8, 1024, 4096, Dtype::kFp16)), 7);
  EXPECT_EQ(row_of(gemm(9, 1024, 4096, Dtype::kFp16)), 0);
  EXPECT_EQ(row_of(gemm(1, 4096, 4096, Dtype::kFp16, true)), 0);
  // rmsnorm: rows is the axis, hidden and residual the group.
  EXPECT_EQ(row_of(rmsnorm(16)), 8);
  EXPECT_EQ(row_of(rmsnorm(128)), 9);
  EXPECT_EQ(row_of(rmsnorm(16, 4096, false)), 0);
  EXPECT_EQ(row_of(rmsnorm(16, 2048)), 0);
  EXPECT_EQ(row_of(rmsnorm(17)), 0);
  // Every size of the key is part of the group, up to the sixth (attention's query tokens), not
  // only the three that gemm has: a key differing past them is another shape.
  for (std::size_t i = 3; i < kKeySizes; ++i) {
    ShapeKey wider = gemm(1);
    wider.sizes[i] = 1;
    EXPECT_EQ(row_of(wider), 0) << i;
    EXPECT_NE(hash(wider), hash(gemm(1))) << i;
  }

  Slot& b = s->select(gemm(5, 4096, 4096, Dtype::kFp16));
  EXPECT_EQ(b.why, "hit: m=5 in bucket [1, 16]");
  EXPECT_EQ(b.problem, "gemm:bias=0,dtype=fp16,k=4096,m=5,n=4096");
  EXPECT_EQ(s->select(gemm(1)).why, "hit");
  EXPECT_EQ(s->select(gemm(3)).why, "miss: no row for this shape");
}

// attention_decode's six sizes key its rows: a bucket over batch answers every batch in it at the
// row's KV depth, head size, heads and query tokens, and a call differing in any of them misses.
TEST(RuntimeIndex, AttentionDecodeRowsKeyAllSixSizes) {
  table::Table t = sample_table();
  table::OpTable a{"attention_decode",
                   "bf16",
                   {table::MatchPolicy::Kind::kBucketed, "batch", "no-harm, least max regret"},
                   {}};
  table::Row r = row("attention_decode:dtype=bf16,head=128,kv=4096,kv_heads=8,q_heads=32,q_len=1",
                     "kernel=flash,splits=8,kv_tile=32,warps=4,vec=8,q_rows=4");
  r.bucket = table::Bucket{"batch", 1, 8, {1, 2, 4, 8}};
  a.rows.push_back(r);
  t.ops.push_back(a);
  TempDir dir;
  auto s = open_ok(dir.write("t.json", table::to_json_text(t)));
  ASSERT_NE(s, nullptr);
  auto key = [](std::int64_t batch, std::int64_t kv, std::int64_t q_len) {
    return ShapeKey{
        *op_kind("attention_decode"), Dtype::kBf16, false, {batch, kv, 128, 32, 8, q_len}};
  };
  for (std::int64_t batch : {1, 5, 8}) {
    const IndexedRow* hit = s->index().find(key(batch, 4096, 1));
    ASSERT_NE(hit, nullptr) << batch;
    EXPECT_EQ(hit->row->config, r.config);
  }
  EXPECT_EQ(s->index().find(key(9, 4096, 1)), nullptr);
  EXPECT_EQ(s->index().find(key(4, 4097, 1)), nullptr);
  EXPECT_EQ(s->index().find(key(4, 4096, 2)), nullptr);  // the sixth size, query tokens
  EXPECT_EQ(s->select(key(5, 4096, 1)).why, "hit: batch=5 in bucket [1, 8]");
}

// rope's rows are keyed by both its flags: qk_norm and the optional llama3_scaling (Llama 3.1's
// frequencies), the bits libattune-rt's rope entry point sets from q_norm and RopeScaling; a
// call with other flags than a row's never takes it.
TEST(RuntimeIndex, RopeRowsAreKeyedByBothFlags) {
  constexpr const char* kPlain = "kernel=fused,vec=4,head_groups=4,head_blocks=2,tokens=1";
  constexpr const char* kLlama = "kernel=fused,vec=8,head_groups=8,head_blocks=4,tokens=1";
  table::Table t = sample_table();
  table::OpTable ro{"rope", "bf16", {}, {}};
  ro.rows.push_back(
      row("rope:batch=2,dtype=bf16,head=128,kv=6000,kv_heads=8,q_heads=32,"
          "qk_norm=0,seq=1,theta=500000",
          kPlain));
  ro.rows.push_back(
      row("rope:batch=2,dtype=bf16,head=128,kv=6000,kv_heads=8,llama3_scaling=1,"
          "q_heads=32,qk_norm=0,seq=1,theta=500000",
          kLlama));
  t.ops.push_back(ro);
  TempDir dir;
  auto s = open_ok(dir.write("t.json", table::to_json_text(t)));
  ASSERT_NE(s, nullptr);
  const std::uint8_t norm = *flag_bit("rope", "qk_norm"),
                     llama = *flag_bit("rope", "llama3_scaling");
  EXPECT_NE(norm, llama);
  auto key = [](std::uint8_t flags) {
    return ShapeKey{*op_kind("rope"), Dtype::kBf16, flags, {2, 1, 6000, 32, 8, 128, 500000}};
  };
  ASSERT_NE(s->index().find(key(0)), nullptr);
  EXPECT_EQ(s->index().find(key(0))->row->config, kPlain);
  ASSERT_NE(s->index().find(key(llama)), nullptr);
  EXPECT_EQ(s->index().find(key(llama))->row->config, kLlama);
  EXPECT_EQ(s->index().find(key(norm)), nullptr);
  EXPECT_EQ(s->index().find(key(static_cast<std::uint8_t>(norm | llama))), nullptr);
}

// gemm_rope's key holds all eight of its sizes: two rows that differ only in the last (the
// projection's hidden size) are two shapes, and a call of a third hidden size misses both.
TEST(RuntimeIndex, GemmRopeRowsAreKeyedByAllEightSizesAndBothFlags) {
  constexpr const char* kSmall =
      "kernel=tiled,tl_bm=64,tl_bn=128,tl_bk=32,tl_wm=2,tl_wn=2,tl_stages=3,tl_group=8";
  constexpr const char* kLarge =
      "kernel=tiled,tl_bm=128,tl_bn=256,tl_bk=64,tl_wm=2,tl_wn=4,tl_stages=2,tl_group=8";
  table::Table t = sample_table();
  table::OpTable gr{"gemm_rope", "bf16", {}, {}};
  const std::string sizes =
      "batch=1,dtype=bf16,head=128,hidden={},kv=128,kv_heads=8,q_heads=16,"
      "qk_norm=1,seq=128,theta=1000000";
  for (auto [hidden, config] : {std::pair{"1024", kSmall}, std::pair{"4096", kLarge}}) {
    std::string text = "gemm_rope:" + sizes;
    text.replace(text.find("{}"), 2, hidden);
    gr.rows.push_back(row(text, config));
  }
  t.ops.push_back(gr);
  TempDir dir;
  auto s = open_ok(dir.write("t.json", table::to_json_text(t)));
  ASSERT_NE(s, nullptr);
  const auto norm = *flag_bit("gemm_rope", "qk_norm");
  auto key = [norm](std::int64_t hidden, std::uint8_t flags) {
    return ShapeKey{
        *op_kind("gemm_rope"), Dtype::kBf16, flags, {1, 128, 128, 16, 8, 128, 1000000, hidden}};
  };
  ASSERT_NE(s->index().find(key(1024, norm)), nullptr);
  EXPECT_EQ(s->index().find(key(1024, norm))->row->config, kSmall);
  ASSERT_NE(s->index().find(key(4096, norm)), nullptr);
  EXPECT_EQ(s->index().find(key(4096, norm))->row->config, kLarge);
  EXPECT_EQ(s->index().find(key(2048, norm)), nullptr);
  EXPECT_EQ(s->index().find(key(1024, 0)), nullptr);
  EXPECT_EQ(
      problem_of(key(4096, norm))->text(), "gemm_rope:" + [&] {
        std::string t2 = sizes;
        t2.replace(t2.find("{}"), 2, "4096");
        return t2;
      }());
}

TEST(RuntimeCounters, CountEveryCallByWhatRan) {
  TempDir dir;
  auto s = open_ok(dir.write("t.json", table::to_json_text(sample_table())));
  for (int i = 0; i < 5; ++i) s->select(gemm(1));
  for (int i = 0; i < 3; ++i) s->select(gemm(7, 4096, 4096, Dtype::kFp16));
  for (int i = 0; i < 2; ++i) s->select(gemm(3));
  s->select(rmsnorm(16, 4096, false));
  Counters c = s->counters();
  EXPECT_EQ(c.hits, 8u);
  EXPECT_EQ(c.misses, 3u);
  EXPECT_EQ(c.shapes, 4u);

  // A row that cannot run here turns its shape's calls, past and future, into misses.
  ::testing::internal::CaptureStderr();
  Slot& slot = s->select(gemm(1));
  s->demote(slot, "it does not compile");
  s->demote(slot, "it does not compile");
  s->select(gemm(1));
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(count(err, "cannot run"), 1u) << err;
  EXPECT_NE(err.find("gemm bf16 row 1"), std::string::npos) << err;
  c = s->counters();
  EXPECT_EQ(c.hits, 3u);
  EXPECT_EQ(c.misses, 10u);

  // No table: everything is a miss.
  auto none = open_ok("");
  EXPECT_EQ(none->select(gemm(1)).why, "miss: no table");
  EXPECT_EQ(none->counters().misses, 1u);
}

TEST(RuntimeLog, OneLinePerDistinctShapeWithRowAndBucket) {
  TempDir dir;
  const std::string path = dir.write("t.json", table::to_json_text(sample_table()));
  ::setenv("ATTUNE_LOG_TUNED", "1", 1);
  const SelectorOptions o = SelectorOptions::from_env();
  ::unsetenv("ATTUNE_LOG_TUNED");
  ASSERT_TRUE(o.log_tuned);
  ::testing::internal::CaptureStderr();
  {
    auto s = open_ok(path, h200(), o);
    for (int i = 0; i < 4; ++i) {
      s->select(gemm(1));
      s->select(gemm(9, 4096, 4096, Dtype::kFp16));
      s->select(gemm(3));
    }
  }
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(count(err, "\n"), 4u) << err;  // three shapes and the summary
  EXPECT_EQ(count(err, "hit gemm:bias=0,dtype=bf16,k=4096,m=1,n=4096 -> gemm bf16 row 1"), 1u)
      << err;
  EXPECT_EQ(count(err, "hit gemm:bias=0,dtype=fp16,k=4096,m=9,n=4096 -> gemm fp16 row 1"), 1u)
      << err;
  EXPECT_EQ(count(err, "bucketed: m=9 in [1, 16]"), 1u) << err;
  EXPECT_EQ(count(err, kSkinnyTc), 2u) << err;
  EXPECT_EQ(
      count(err,
            "miss gemm:bias=0,dtype=bf16,k=4096,m=3,n=4096 (no row for this shape) -> baseline "
            "kernel=cublaslt,lt_algo=0,lt_split=0,lt_tile=0"),
      1u)
      << err;
  EXPECT_NE(err.find("8 hits, 4 misses over 3 distinct shapes"), std::string::npos) << err;

  // Off by default: nothing but warnings.
  ::testing::internal::CaptureStderr();
  {
    auto s = open_ok(path);
    s->select(gemm(1));
    s->select(gemm(3));
  }
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(RuntimeHarvest, MissedShapesAppendedOnceAndReadBackByTheTuner) {
  TempDir dir;
  const std::string table_path = dir.write("t.json", table::to_json_text(sample_table()));
  const std::string harvest = dir.file("shapes.txt");
  ::setenv("ATTUNE_HARVEST", harvest.c_str(), 1);
  const SelectorOptions o = SelectorOptions::from_env();
  ::unsetenv("ATTUNE_HARVEST");
  ASSERT_EQ(o.harvest_path, harvest);
  {
    auto s = open_ok(table_path, h200(), o);
    for (int i = 0; i < 3; ++i) {
      s->select(gemm(3));                             // miss
      s->select(gemm(1));                             // hit: not harvested
      s->select(rmsnorm(7, 1000, false));             // miss
      s->select(gemm(70, 4096, 4096, Dtype::kFp16));  // outside every bucket: miss
    }
  }
  {
    // A later process: shapes already in the file are not appended again.
    auto s = open_ok(table_path, h200(), o);
    s->select(gemm(3));
    s->select(gemm(2, 4096, 1024, Dtype::kBf16, true));
  }
  auto specs = read_shapes_file(harvest);  // the reader attune tune --shapes uses
  ASSERT_TRUE(specs.ok()) << specs.error().message();
  const std::vector<std::string> want = {"gemm:bias=0,dtype=bf16,k=4096,m=3,n=4096",
                                         "rmsnorm:dtype=bf16,hidden=1000,residual=0,rows=7",
                                         "gemm:bias=0,dtype=fp16,k=4096,m=70,n=4096",
                                         "gemm:bias=1,dtype=bf16,k=1024,m=2,n=4096"};
  EXPECT_EQ(*specs, want) << slurp(harvest);
  for (const auto& spec : *specs) {
    auto p = Problem::parse(spec);
    ASSERT_TRUE(p.ok()) << spec;
    EXPECT_EQ(p->text(), spec);  // canonical: the tuner keys what it reads by this text
  }

  // A file someone edited without a final newline still gets whole lines.
  std::ofstream(harvest, std::ios::binary | std::ios::trunc)
      << "# mine\ngemm:bias=0,dtype=bf16,k=4096,m=3,n=4096";
  {
    auto s = open_ok(table_path, h200(), o);
    s->select(gemm(3));
    s->select(gemm(5));
  }
  specs = read_shapes_file(harvest);
  ASSERT_TRUE(specs.ok()) << specs.error().message();
  EXPECT_EQ(*specs, (std::vector<std::string>{"gemm:bias=0,dtype=bf16,k=4096,m=3,n=4096",
                                              "gemm:bias=0,dtype=bf16,k=4096,m=5,n=4096"}))
      << slurp(harvest);

  // Under the guard every call misses, so every shape is harvested for this device's tune.
  const std::string other = dir.file("other.txt");
  SelectorOptions g;
  g.harvest_path = other;
  {
    auto s = open_ok(dir.write("a100.json", table::to_json_text(sample_table(a100()))), h200(), g);
    s->select(gemm(1));
  }
  EXPECT_EQ(slurp(other).find("gemm:bias=0,dtype=bf16,k=4096,m=1,n=4096\n") != std::string::npos,
            true)
      << slurp(other);
}

TEST(RuntimeHarvest, APipeOrDeviceIsNeverReadAndHarvestingStops) {
  TempDir dir;
  const std::string table_path = dir.write("t.json", table::to_json_text(sample_table()));
  // Reading a FIFO with no writer (or /dev/zero) at open would hang or never end inside the
  // user's program.
  ASSERT_EQ(::mkfifo(dir.file("fifo").c_str(), 0600), 0);
  for (const std::string& path : {dir.file("fifo"), std::string("/dev/zero")}) {
    SelectorOptions o;
    o.harvest_path = path;
    auto s = open_ok(table_path, h200(), o);
    ASSERT_NE(s, nullptr);
    s->select(gemm(3));  // a miss: nothing is written to the pipe or device
  }
  EXPECT_NE(refusal(dir.file("fifo")).find("is not a regular file"), std::string::npos);
}

TEST(RuntimeOptions, LoggingIsOffForZeroAndWordsForNo) {
  for (const char* off : {"0", "false", "no", "OFF", ""}) {
    ::setenv("ATTUNE_LOG_TUNED", off, 1);
    EXPECT_FALSE(SelectorOptions::from_env().log_tuned) << off;
  }
  for (const char* on : {"1", "yes", "true"}) {
    ::setenv("ATTUNE_LOG_TUNED", on, 1);
    EXPECT_TRUE(SelectorOptions::from_env().log_tuned) << on;
  }
  ::unsetenv("ATTUNE_LOG_TUNED");
}

TEST(RuntimeSlots, ConcurrentCallsMakeOneSlotPerShapeAndCountEveryCall) {
  TempDir dir;
  auto s = open_ok(dir.write("t.json", table::to_json_text(sample_table())));
  constexpr int kThreads = 8, kShapes = 300, kRounds = 4;  // enough shapes to grow the slot map
  std::vector<std::thread> threads;
  std::vector<std::vector<const Slot*>> seen(kThreads);
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRounds; ++r)
        for (int i = 0; i < kShapes; ++i) {
          const int m = 1 + (i * 7 + t) % kShapes;
          const Slot& slot = s->select(gemm(m));
          if (slot.key.axis() != m) std::abort();
          if (r == 0) seen[t].push_back(&slot);
        }
    });
  for (auto& th : threads) th.join();
  Counters c = s->counters();
  EXPECT_EQ(c.shapes, static_cast<std::uint64_t>(kShapes));
  EXPECT_EQ(c.hits + c.misses, static_cast<std::uint64_t>(kThreads * kShapes * kRounds));
  EXPECT_EQ(c.hits, static_cast<std::uint64_t>(kThreads * kRounds * 3));  // m = 1, 16, 64
  std::set<const Slot*> distinct;
  for (const auto& v : seen) distinct.insert(v.begin(), v.end());
  EXPECT_EQ(distinct.size(), static_cast<std::size_t>(kShapes));
}

}  // namespace
}  // namespace attune::runtime
