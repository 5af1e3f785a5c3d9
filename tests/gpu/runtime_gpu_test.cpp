// libattune-rt on a GPU, through its public APIs (C++ and C) only: a hand-made table for this
// device with a tiled row (split-K, so the runtime's workspace is used), a cuBLASLt row, a
// bucketed skinny_tc row and an rmsnorm row; calls on odd shapes that hit them and that miss.
// Every output is checked against a float64 CPU reference on random inputs, with outputs poisoned
// before the call, and every dispatch report must name the row's config (or the baseline's).
// Registered through gpu_gate, which skips it where no driver or GPU exists.
#include <gtest/gtest.h>

#include <cuda.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "attune/runtime.h"
#include "attune/runtime_c.h"
#include "cuda/cuda_device.h"
#include "support/run.h"
#include "table/table.h"

namespace attune {
namespace {

namespace fs = std::filesystem;
using rt::DType;

constexpr const char* kTiled =
    "kernel=tiled,lt_algo=0,lt_split=0,lt_tile=0,sk_warps=4,sk_nb=2,sk_vec=8,sk_unroll=1,tc_warps="
    "4,tc_nt=1,"
    "tc_unroll=1,tl_bm=64,tl_bn=64,tl_bk=32,tl_wm=2,tl_wn=2,tl_stages=3,tl_split=2,tl_group=8";
constexpr const char* kSkinnyTc =
    "kernel=skinny_tc,lt_algo=0,lt_split=0,lt_tile=0,sk_warps=4,sk_nb=2,sk_vec=8,sk_unroll=1,tc_"
    "warps=2,tc_nt=2,"
    "tc_unroll=2,tl_bm=128,tl_bn=128,tl_bk=32,tl_wm=2,tl_wn=2,tl_stages=3,tl_split=1,tl_group=8";
constexpr const char* kLt =
    "kernel=cublaslt,lt_algo=1,lt_split=0,lt_tile=0,sk_warps=4,sk_nb=2,sk_vec=8,sk_unroll=1,tc_"
    "warps=4,tc_nt=1,"
    "tc_unroll=1,tl_bm=128,tl_bn=128,tl_bk=32,tl_wm=2,tl_wn=2,tl_stages=3,tl_split=1,tl_group=8";
constexpr const char* kRms = "threads=64,rows_per_block=2,vec=4,unroll=1";
constexpr const char* kGemmBaseline = "kernel=cublaslt,lt_algo=0,lt_split=0,lt_tile=0";
constexpr const char* kRmsBaseline = "threads=256,rows_per_block=1,vec=1,unroll=1";

// ---- 16-bit floats on the host

double to_double(std::uint16_t bits, bool bf16) {
  if (bf16) {
    std::uint32_t u = static_cast<std::uint32_t>(bits) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
  const int sign = bits >> 15, exp = (bits >> 10) & 31, man = bits & 1023;
  double v = exp == 0    ? std::ldexp(man, -24)
             : exp == 31 ? (man ? NAN : INFINITY)
                         : std::ldexp(1024 + man, exp - 25);
  return sign ? -v : v;
}

// Random values in +-[2^-6, 1): exact in both formats, never zero.
std::vector<std::uint16_t> random_bits(std::size_t n, bool bf16, std::mt19937& rng) {
  std::vector<std::uint16_t> v(n);
  for (auto& x : v) {
    const std::uint32_t r = rng();
    const std::uint16_t sign = (r & 1) << 15;
    if (bf16)
      x = sign | static_cast<std::uint16_t>((121 + (r >> 1) % 6) << 7) |
          static_cast<std::uint16_t>((r >> 8) & 0x70);
    else
      x = sign | static_cast<std::uint16_t>((9 + (r >> 1) % 6) << 10) |
          static_cast<std::uint16_t>((r >> 8) & 0x3f0);
  }
  return v;
}

// ---- device memory in the runtime's (primary) context

struct Buffer {
  CUdeviceptr ptr = 0;
  std::size_t elements = 0;
  Buffer(std::size_t n, const std::vector<std::uint16_t>* init) : elements(n) {
    EXPECT_EQ(cuMemAlloc(&ptr, std::max<std::size_t>(n, 8) * 2), CUDA_SUCCESS);
    if (init)
      EXPECT_EQ(cuMemcpyHtoD(ptr, init->data(), n * 2), CUDA_SUCCESS);
    else
      EXPECT_EQ(cuMemsetD16(ptr, 0xffff, n), CUDA_SUCCESS);  // NaN poison: unwritten outputs fail
  }
  ~Buffer() { cuMemFree(ptr); }
  Buffer(const Buffer&) = delete;
  void* p() const { return reinterpret_cast<void*>(ptr); }
  std::vector<std::uint16_t> get() const {
    std::vector<std::uint16_t> v(elements);
    EXPECT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
    EXPECT_EQ(cuMemcpyDtoH(v.data(), ptr, elements * 2), CUDA_SUCCESS);
    return v;
  }
};

// Every element finite and within 2% of the reference (plus 0.02 absolute): a wrong kernel, a
// wrong shape or an unwritten element is off by far more.
void expect_close(const std::vector<std::uint16_t>& got, const std::vector<double>& want, bool bf16,
                  const std::string& what, double atol = 0.02) {
  ASSERT_EQ(got.size(), want.size());
  std::size_t bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double g = to_double(got[i], bf16);
    if (!std::isfinite(g) || std::fabs(g - want[i]) > 0.02 * std::fabs(want[i]) + atol) {
      if (++bad <= 3)
        ADD_FAILURE() << what << ": element " << i << " is " << g << ", want " << want[i];
    }
  }
  EXPECT_EQ(bad, 0u) << what;
}

struct Gemm {
  std::int64_t m, n, k;
  bool bf16, bias;
};

// Runs C = A . B^T (+ bias) through the runtime and checks it; returns what ran.
rt::Dispatch run_gemm(rt::Runtime& runtime, const Gemm& g, std::mt19937& rng) {
  const auto m = static_cast<std::size_t>(g.m), n = static_cast<std::size_t>(g.n),
             k = static_cast<std::size_t>(g.k);
  auto a = random_bits(m * k, g.bf16, rng), b = random_bits(n * k, g.bf16, rng),
       bias = random_bits(n, g.bf16, rng);
  Buffer da(m * k, &a), db(n * k, &b), dbias(n, &bias), dc(m * n, nullptr);
  const rt::Dispatch* d = nullptr;
  rt::Status s = runtime.gemm(g.m, g.n, g.k, g.bf16 ? DType::kBf16 : DType::kFp16, da.p(), db.p(),
                              dc.p(), g.bias ? dbias.p() : nullptr, nullptr, &d);
  EXPECT_TRUE(s.ok()) << s.message();
  if (!s.ok() || !d) return {};
  EXPECT_EQ(runtime.last_dispatch(), d);
  std::vector<double> want(m * n);
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      double acc = g.bias ? to_double(bias[j], g.bf16) : 0.0;
      for (std::size_t p = 0; p < k; ++p)
        acc += to_double(a[i * k + p], g.bf16) * to_double(b[j * k + p], g.bf16);
      want[i * n + j] = acc;
    }
  expect_close(dc.get(), want, g.bf16, d->problem + " (" + d->config + ")");
  return *d;
}

struct Rms {
  std::int64_t rows, hidden;
  bool bf16, residual;
};

rt::Dispatch run_rmsnorm(rt::Runtime& runtime, const Rms& r, std::mt19937& rng) {
  const auto rows = static_cast<std::size_t>(r.rows), hidden = static_cast<std::size_t>(r.hidden),
             count = rows * hidden;
  auto x = random_bits(count, r.bf16, rng), res = random_bits(count, r.bf16, rng),
       w = random_bits(hidden, r.bf16, rng);
  Buffer dx(count, &x), dr(count, &res), dw(hidden, &w), dy(count, nullptr), dh(count, nullptr);
  const rt::Dispatch* d = nullptr;
  rt::Status s = runtime.rmsnorm(r.rows, r.hidden, r.bf16 ? DType::kBf16 : DType::kFp16, dy.p(),
                                 r.residual ? dh.p() : nullptr, dx.p(),
                                 r.residual ? dr.p() : nullptr, dw.p(), nullptr, &d);
  EXPECT_TRUE(s.ok()) << s.message();
  if (!s.ok() || !d) return {};
  std::vector<double> want_y(count), want_h(count);
  for (std::size_t i = 0; i < rows; ++i) {
    double ss = 0;
    for (std::size_t j = 0; j < hidden; ++j) {
      double h = to_double(x[i * hidden + j], r.bf16) +
                 (r.residual ? to_double(res[i * hidden + j], r.bf16) : 0.0);
      want_h[i * hidden + j] = h;
      ss += h * h;
    }
    const double scale = 1.0 / std::sqrt(ss / static_cast<double>(hidden) + 1e-6);
    for (std::size_t j = 0; j < hidden; ++j)
      want_y[i * hidden + j] = want_h[i * hidden + j] * scale * to_double(w[j], r.bf16);
  }
  expect_close(dy.get(), want_y, r.bf16, d->problem + " y (" + d->config + ")");
  if (r.residual) expect_close(dh.get(), want_h, r.bf16, d->problem + " h");
  return *d;
}

table::Row row(const std::string& problem, const std::string& config) {
  table::Row r;
  r.problem = *Problem::parse(problem);
  r.backend = "cuda";
  r.config = config;
  r.median_us = 10;
  r.baseline_us = 12;
  r.error = {"max_rel_err", 1e-3, 2e-2};
  return r;
}

// Rows, 1-based in this order: 1 tiled, 2 cuBLASLt, 3 skinny_tc bucket m=[1, 8], 4 rmsnorm.
table::Table hand_made(const DeviceFingerprint& device) {
  table::Table t;
  t.attune_version = "gpu-test";
  t.device = device;
  table::OpTable g{"gemm", "bf16", {}, {}};
  g.rows.push_back(row("gemm:bias=0,dtype=bf16,k=264,m=37,n=200", kTiled));
  g.rows.push_back(row("gemm:bias=1,dtype=bf16,k=256,m=64,n=512", kLt));
  t.ops.push_back(g);
  table::OpTable f{
      "gemm", "fp16", {table::MatchPolicy::Kind::kBucketed, "m", "no-harm, least max regret"}, {}};
  table::Row b = row("gemm:bias=1,dtype=fp16,k=136,n=300", kSkinnyTc);
  b.bucket = table::Bucket{"m", 1, 8, {1, 4, 8}};
  f.rows.push_back(b);
  t.ops.push_back(f);
  table::OpTable n{"rmsnorm", "bf16", {}, {}};
  n.rows.push_back(row("rmsnorm:dtype=bf16,hidden=1000,residual=1,rows=7", kRms));
  t.ops.push_back(n);
  return t;
}

class RuntimeGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    auto fp = cuda::fingerprint(*cuda::device_ordinal());
    if (!fp) GTEST_SKIP() << "no GPU: " << fp.error().message();
    device_ = *fp;
    dir_ = fs::temp_directory_path() / ("attune-rt-gpu-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string write_table(const table::Table& t, const std::string& name) {
    const std::string path = (dir_ / name).string();
    auto s = table::save_table(t, path);
    EXPECT_TRUE(s.ok()) << s.error().message();
    return path;
  }
  DeviceFingerprint device_;
  fs::path dir_;
};

// A tuned cuBLASLt row binds to the algorithm the tuner measured: `attune tune` walks cuBLASLt's
// heuristic algorithms (lt_algo) on a skinny shape, where they differ, and records the variant
// each chose (its report's best carries cuBLASLt's own description); the runtime, given a row
// with the best's config, must dispatch the same variant (its dispatch record, the same text).
// lt_algo is a rank in cuBLASLt's heuristic list, so this fails if the list differs between the
// tuner's process and the runtime's.
TEST_F(RuntimeGpu, ACublasLtRowRunsTheAlgorithmTheTunerMeasured) {
  const std::string attune = testing::gpu_attune_binary();
  if (attune.empty()) GTEST_SKIP() << "no attune binary (ATTUNE_BIN)";
  const std::string problem = "gemm:bias=0,dtype=bf16,k=4096,m=8,n=6144";
  const std::string db = (dir_ / "lt.db").string();
  const auto r = testing::run_binary(attune,
                                     "--json --db '" + db + "' tune --problem '" + problem +
                                         "' --pin kernel=cublaslt --pin lt_split=0 --pin "
                                         "lt_tile=0 --strategy grid --patience 0",
                                     dir_.string());
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out;
  const auto& best = j["problems"][0]["best"];
  ASSERT_TRUE(best.is_object()) << r.out;
  const std::string config = best["config"].get<std::string>();
  const std::string measured = best.value("message", "");
  EXPECT_EQ(measured.rfind("cublasLtMatmul algo=", 0), 0u) << measured;
  std::cout << "tuner: " << config << ": " << measured << "\n";

  table::Table t;
  t.attune_version = "gpu-test";
  t.device = device_;
  table::OpTable g{"gemm", "bf16", {}, {}};
  g.rows.push_back(row(problem, config));
  t.ops.push_back(g);
  std::unique_ptr<rt::Runtime> runtime;
  rt::Status s = rt::Runtime::open(write_table(t, "lt.json"), &runtime);
  ASSERT_TRUE(s.ok()) << s.message();
  std::mt19937 rng(77);
  rt::Dispatch d = run_gemm(*runtime, {8, 6144, 4096, true, false}, rng);
  EXPECT_TRUE(d.tuned) << d.why;
  EXPECT_EQ(d.config, config);
  ASSERT_EQ(d.kernels.size(), 1u);
  std::cout << "runtime: " << d.kernels[0] << "\n";
  EXPECT_EQ(d.kernels[0], measured);
}

TEST_F(RuntimeGpu, RowsRunTheirConfigsAndMissesRunTheBaseline) {
  const std::string path = write_table(hand_made(device_), "table.json");
  fs::create_directories(path + ".cubin");  // the table's own cubin directory is used when present
  std::unique_ptr<rt::Runtime> runtime;
  rt::Status s = rt::Runtime::open(path, &runtime);
  ASSERT_TRUE(s.ok()) << s.message();
  std::mt19937 rng(1234);

  rt::Dispatch d = run_gemm(*runtime, {37, 200, 264, true, false}, rng);
  EXPECT_TRUE(d.tuned);
  EXPECT_EQ(d.row, 1);
  EXPECT_EQ(d.why, "hit");
  EXPECT_EQ(d.config, kTiled);
  EXPECT_EQ(d.kernels, (std::vector<std::string>{"gemm_tiled"}));  // split-K: one cluster launch
  ASSERT_EQ(d.cache_key.size(), 32u) << d.cache_key;
  EXPECT_TRUE(fs::exists(fs::path(path + ".cubin") / (d.cache_key + ".cubin")))
      << "the cubin went to the table's directory";

  d = run_gemm(*runtime, {64, 512, 256, true, true}, rng);
  EXPECT_TRUE(d.tuned);
  EXPECT_EQ(d.row, 2);
  EXPECT_EQ(d.config, kLt);
  ASSERT_EQ(d.kernels.size(), 1u);
  EXPECT_EQ(d.kernels[0].rfind("cublasLtMatmul algo=", 0), 0u) << d.kernels[0];
  EXPECT_EQ(d.cache_key, "");

  d = run_gemm(*runtime, {5, 300, 136, false, true}, rng);
  EXPECT_TRUE(d.tuned);
  EXPECT_EQ(d.row, 3);
  EXPECT_EQ(d.why, "hit: m=5 in bucket [1, 8]");
  EXPECT_EQ(d.problem, "gemm:bias=1,dtype=fp16,k=136,m=5,n=300");
  EXPECT_EQ(d.config, kSkinnyTc);
  EXPECT_EQ(d.kernels, std::vector<std::string>{"gemm_skinny_tc"});

  d = run_rmsnorm(*runtime, {7, 1000, true, true}, rng);
  EXPECT_TRUE(d.tuned);
  EXPECT_EQ(d.row, 4);
  EXPECT_EQ(d.config, kRms);
  EXPECT_EQ(d.kernels, std::vector<std::string>{"rmsnorm"});

  // Misses: a gemm outside the bucket, other shapes, an rmsnorm without a residual, fp16.
  for (const Gemm& g : {Gemm{9, 300, 136, false, true}, Gemm{3, 100, 72, true, false},
                        Gemm{37, 200, 264, true, true}}) {
    d = run_gemm(*runtime, g, rng);
    EXPECT_FALSE(d.tuned) << d.problem;
    EXPECT_EQ(d.row, 0);
    EXPECT_EQ(d.why, "miss: no row for this shape");
    EXPECT_EQ(d.config, kGemmBaseline);
    ASSERT_EQ(d.kernels.size(), 1u);
    EXPECT_EQ(d.kernels[0].rfind("cublasLtMatmul", 0), 0u);
  }
  d = run_rmsnorm(*runtime, {5, 333, false, false}, rng);
  EXPECT_FALSE(d.tuned);
  EXPECT_EQ(d.config, kRmsBaseline);
  EXPECT_FALSE(d.cache_key.empty());

  // Again: the prepared launches, the same reports.
  d = run_gemm(*runtime, {37, 200, 264, true, false}, rng);
  EXPECT_EQ(d.config, kTiled);
  rt::Counters c = runtime->counters();
  EXPECT_EQ(c.hits, 5u);
  EXPECT_EQ(c.misses, 4u);
  EXPECT_EQ(c.shapes, 8u);
  EXPECT_FALSE(c.device_mismatch);

  // attune verify's hook: the public entry point timed in the deploy regime.
  rt::Timing t;
  s = runtime->time_problem("gemm:bias=0,dtype=bf16,k=264,m=37,n=200", &t);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_GT(t.median_us, 0);
  EXPECT_LE(t.min_us, t.median_us);
  EXPECT_GE(t.samples, 10);
  EXPECT_EQ(t.dispatch.config, kTiled);
}

TEST_F(RuntimeGpu, CApiRunsAndTimesRows) {
  const std::string path = write_table(hand_made(device_), "table.json");
  ASSERT_EQ(attune_rt_abi_version(), ATTUNE_RT_ABI_VERSION);
  attune_rt* h = nullptr;
  ASSERT_EQ(attune_rt_open(path.c_str(), -1, &h), ATTUNE_RT_OK) << attune_rt_last_error();
  ASSERT_EQ(attune_rt_row_count(h), 4);
  attune_rt_row r{};
  ASSERT_EQ(attune_rt_row_get(h, 3, &r), ATTUNE_RT_OK);
  EXPECT_STREQ(r.config, kSkinnyTc);
  EXPECT_EQ(r.bucketed, 1);
  EXPECT_STREQ(r.axis, "m");
  ASSERT_EQ(r.point_count, 3u);
  EXPECT_EQ(r.points[1], 4);

  for (int row = 1; row <= 4; ++row) {
    attune_rt_timing t{};
    ASSERT_EQ(attune_rt_time_row(h, row, 0, &t), ATTUNE_RT_OK)
        << row << ": " << attune_rt_last_error();
    EXPECT_GT(t.median_us, 0);
    EXPECT_EQ(t.dispatch.tuned, 1) << t.dispatch.why;
    EXPECT_EQ(t.dispatch.row, row);
    ASSERT_EQ(attune_rt_row_get(h, row, &r), ATTUNE_RT_OK);
    EXPECT_STREQ(t.dispatch.config, r.config);
  }
  attune_rt_timing t{};
  EXPECT_EQ(attune_rt_time_row(h, 3, 9, &t), ATTUNE_RT_INVALID_ARGUMENT);  // outside the bucket
  EXPECT_NE(std::string(attune_rt_last_error()).find("outside"), std::string::npos);
  ASSERT_EQ(attune_rt_time_problem(h, "rmsnorm:dtype=fp16,hidden=999,residual=0,rows=5", &t),
            ATTUNE_RT_OK)
      << attune_rt_last_error();
  EXPECT_EQ(t.dispatch.tuned, 0);
  EXPECT_STREQ(t.dispatch.config, kRmsBaseline);

  {  // A call through the C entry point, and its report (buffers freed before the close).
    std::mt19937 rng(7);
    const auto a = random_bits(64 * 256, true, rng), b = random_bits(512 * 256, true, rng),
               bias = random_bits(512, true, rng);
    Buffer da(a.size(), &a), db(b.size(), &b), dbias(bias.size(), &bias), dc(64 * 512, nullptr);
    const attune_rt_dispatch* d = nullptr;
    ASSERT_EQ(attune_rt_gemm(h, 64, 512, 256, ATTUNE_RT_BF16, da.p(), db.p(), dc.p(), dbias.p(),
                             nullptr, &d),
              ATTUNE_RT_OK)
        << attune_rt_last_error();
    ASSERT_NE(d, nullptr);
    EXPECT_EQ(attune_rt_last_dispatch(h), d);
    EXPECT_STREQ(d->config, kLt);
    EXPECT_EQ(attune_rt_gemm(h, 0, 512, 256, ATTUNE_RT_BF16, da.p(), db.p(), dc.p(), nullptr,
                             nullptr, nullptr),
              ATTUNE_RT_INVALID_ARGUMENT);
  }
  attune_rt_counters c{};
  ASSERT_EQ(attune_rt_counters_get(h, &c), ATTUNE_RT_OK);
  EXPECT_GT(c.hits, 0u);
  attune_rt_close(h);

  // A malformed table is refused whole.
  const std::string bad = (dir_ / "bad.json").string();
  { std::ofstream(bad) << "{\"format\": \"attune.table\", \"version\": 1, "; }
  h = nullptr;
  EXPECT_EQ(attune_rt_open(bad.c_str(), -1, &h), ATTUNE_RT_BAD_TABLE);
  EXPECT_EQ(h, nullptr);
  EXPECT_NE(std::string(attune_rt_last_error()).find("truncated"), std::string::npos)
      << attune_rt_last_error();
}

TEST_F(RuntimeGpu, AnotherDevicesTableRunsTheBaselineCorrectly) {
  DeviceFingerprint other = device_;
  other.sm_count += 1;
  const std::string path = write_table(hand_made(other), "other.json");
  std::unique_ptr<rt::Runtime> runtime;
  rt::Status s = rt::Runtime::open(path, &runtime);
  ASSERT_TRUE(s.ok()) << s.message();
  std::mt19937 rng(99);
  rt::Dispatch d = run_gemm(*runtime, {37, 200, 264, true, false}, rng);
  EXPECT_FALSE(d.tuned);
  EXPECT_EQ(d.why, "miss: the table was tuned for another device");
  EXPECT_EQ(d.config, kGemmBaseline);
  d = run_rmsnorm(*runtime, {7, 1000, true, true}, rng);
  EXPECT_FALSE(d.tuned);
  EXPECT_EQ(d.config, kRmsBaseline);
  EXPECT_TRUE(runtime->counters().device_mismatch);
  EXPECT_EQ(runtime->counters().hits, 0u);
}

struct Attn {
  std::int64_t batch, kv, head, q_heads, kv_heads, q_len;
  bool bf16;
};

// Decode attention through the runtime against a float64 CPU reference (PyTorch SDPA's layout,
// causal among the new tokens); returns what ran. prefill: the whole prompt through
// attention_prefill instead (a.kv == a.q_len: every token new, token t sees keys 0 .. t).
rt::Dispatch run_attention(rt::Runtime& runtime, const Attn& a, std::mt19937& rng,
                           bool prefill = false) {
  const auto q_elems = static_cast<std::size_t>(a.batch * a.q_heads * a.q_len * a.head),
             kv_elems = static_cast<std::size_t>(a.batch * a.kv_heads * a.kv * a.head);
  auto q = random_bits(q_elems, a.bf16, rng), k = random_bits(kv_elems, a.bf16, rng),
       v = random_bits(kv_elems, a.bf16, rng);
  Buffer dq(q_elems, &q), dk(kv_elems, &k), dv(kv_elems, &v), doo(q_elems, nullptr);
  const rt::Dispatch* d = nullptr;
  const DType dt = a.bf16 ? DType::kBf16 : DType::kFp16;
  EXPECT_TRUE(!prefill || a.kv == a.q_len);
  rt::Status s =
      prefill ? runtime.attention_prefill(a.kv, a.batch, a.head, a.q_heads, a.kv_heads, dt, doo.p(),
                                          dq.p(), dk.p(), dv.p(), nullptr, &d)
              : runtime.attention_decode(a.batch, a.kv, a.head, a.q_heads, a.kv_heads, a.q_len, dt,
                                         doo.p(), dq.p(), dk.p(), dv.p(), nullptr, &d);
  EXPECT_TRUE(s.ok()) << s.message();
  if (!s.ok() || !d) return {};
  const std::size_t head = static_cast<std::size_t>(a.head);
  const std::int64_t group = a.q_heads / a.kv_heads;
  std::vector<double> want(q_elems), p(static_cast<std::size_t>(a.kv));
  for (std::int64_t b = 0; b < a.batch; ++b)
    for (std::int64_t h = 0; h < a.q_heads; ++h)
      for (std::int64_t t = 0; t < a.q_len; ++t) {
        const std::size_t qi = static_cast<std::size_t>(((b * a.q_heads + h) * a.q_len + t)) * head;
        const std::size_t kv0 =
            static_cast<std::size_t>((b * a.kv_heads + h / group) * a.kv) * head;
        const std::int64_t seen = a.kv - a.q_len + t + 1;
        double top = -INFINITY, sum = 0;
        for (std::int64_t j = 0; j < seen; ++j) {
          double dot = 0;
          for (std::size_t e = 0; e < head; ++e)
            dot += to_double(q[qi + e], a.bf16) *
                   to_double(k[kv0 + static_cast<std::size_t>(j) * head + e], a.bf16);
          p[static_cast<std::size_t>(j)] = dot / std::sqrt(static_cast<double>(head));
          top = std::max(top, p[static_cast<std::size_t>(j)]);
        }
        for (std::int64_t j = 0; j < seen; ++j)
          sum += p[static_cast<std::size_t>(j)] = std::exp(p[static_cast<std::size_t>(j)] - top);
        for (std::size_t e = 0; e < head; ++e) {
          double acc = 0;
          for (std::int64_t j = 0; j < seen; ++j)
            acc += p[static_cast<std::size_t>(j)] *
                   to_double(v[kv0 + static_cast<std::size_t>(j) * head + e], a.bf16);
          want[qi + e] = acc / sum;
        }
      }
  expect_close(doo.get(), want, a.bf16, d->problem + " (" + d->config + ")");
  return *d;
}

// attention_decode through the runtime: a bucketed flash row over batch and the split baseline
// (cuBLASLt scores, softmax kernel, cuBLASLt values: a chain) on a miss, both against the float64
// reference; the verify hook times both; a head size the kernels are not written for is refused.
TEST_F(RuntimeGpu, AttentionDecodeRowsAndTheSplitBaseline) {
  constexpr const char* kFlash = "kernel=flash,splits=4,kv_tile=32,warps=2,vec=8,q_rows=4";
  table::Table t;
  t.attune_version = "gpu-test";
  t.device = device_;
  table::OpTable a{"attention_decode",
                   "bf16",
                   {table::MatchPolicy::Kind::kBucketed, "batch", "no-harm, least max regret"},
                   {}};
  table::Row r =
      row("attention_decode:dtype=bf16,head=64,kv=1000,kv_heads=2,q_heads=16,q_len=3", kFlash);
  r.bucket = table::Bucket{"batch", 1, 4, {1, 2, 4}};
  a.rows.push_back(r);
  t.ops.push_back(a);
  const std::string path = write_table(t, "attention.json");
  std::unique_ptr<rt::Runtime> runtime;
  rt::Status s = rt::Runtime::open(path, &runtime);
  ASSERT_TRUE(s.ok()) << s.message();
  std::mt19937 rng(4321);

  rt::Dispatch d = run_attention(*runtime, {3, 1000, 64, 16, 2, 3, true}, rng);
  EXPECT_TRUE(d.tuned);
  EXPECT_EQ(d.why, "hit: batch=3 in bucket [1, 4]");
  EXPECT_EQ(d.config, kFlash);
  EXPECT_EQ(d.kernels[0], "attn_decode_flash");

  const std::string baseline =
      "kernel=split,splits=1,kv_tile=16,warps=4,vec=8,q_rows=1,combine=kernel";
  for (const Attn& miss : {Attn{5, 1000, 64, 16, 2, 3, true}, Attn{2, 777, 128, 8, 8, 1, false},
                           Attn{1, 4097, 256, 8, 2, 2, true}}) {
    d = run_attention(*runtime, miss, rng);
    EXPECT_FALSE(d.tuned) << d.problem;
    EXPECT_EQ(d.config, baseline);
    ASSERT_EQ(d.kernels.size(), 3u) << d.problem;
    EXPECT_EQ(d.kernels[0].rfind("cublasLtMatmul", 0), 0u) << d.kernels[0];
    EXPECT_EQ(d.kernels[1], "attn_decode_softmax");
    EXPECT_EQ(d.kernels[2].rfind("cublasLtMatmul", 0), 0u) << d.kernels[2];
  }

  rt::Timing timing;
  s = runtime->time_problem(
      "attention_decode:batch=2,dtype=bf16,head=64,kv=1000,kv_heads=2,q_heads=16,q_len=3", &timing);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(timing.dispatch.config, kFlash);
  EXPECT_GT(timing.median_us, 0);

  Buffer x(64, nullptr);
  s = runtime->attention_decode(1, 64, 96, 4, 4, 1, DType::kBf16, x.p(), x.p(), x.p(), x.p(),
                                nullptr);
  EXPECT_EQ(s.code(), rt::Code::kInvalidArgument);
  EXPECT_NE(s.message().find("head=96"), std::string::npos) << s.message();
}

// attention_prefill through the runtime: a bucketed wgmma row over the prompt length, and the
// split baseline (scores GEMM, softmax, values GEMM) on a miss, both against the float64
// reference; the C entry point; the verify hook times a row; a head size the kernels are not
// written for is refused.
TEST_F(RuntimeGpu, AttentionPrefillRowsAndTheSplitBaseline) {
  constexpr const char* kWgmma = "kernel=wgmma,block_n=64,consumers=2,stages=3,overlap=1";
  table::Table t;
  t.attune_version = "gpu-test";
  t.device = device_;
  table::OpTable a{"attention_prefill",
                   "bf16",
                   {table::MatchPolicy::Kind::kBucketed, "seq", "no-harm, least max regret"},
                   {}};
  table::Row r = row("attention_prefill:batch=2,dtype=bf16,head=128,kv_heads=2,q_heads=8", kWgmma);
  r.bucket = table::Bucket{"seq", 200, 400, {200, 300, 400}};
  a.rows.push_back(r);
  t.ops.push_back(a);
  const std::string path = write_table(t, "prefill.json");
  std::unique_ptr<rt::Runtime> runtime;
  rt::Status s = rt::Runtime::open(path, &runtime);
  ASSERT_TRUE(s.ok()) << s.message();
  std::mt19937 rng(8765);

  for (std::int64_t seq : {200, 333}) {
    rt::Dispatch d = run_attention(*runtime, {2, seq, 128, 8, 2, seq, true}, rng, true);
    EXPECT_TRUE(d.tuned) << d.why;
    EXPECT_EQ(d.config, kWgmma);
    ASSERT_EQ(d.kernels.size(), 1u);
    EXPECT_EQ(d.kernels[0], "attn_prefill_wgmma");
  }
  const std::string baseline =
      "kernel=split,block_n=128,consumers=2,stages=2,overlap=1,blocks_per_sm=1";
  for (const Attn& miss : {Attn{2, 500, 128, 8, 2, 500, true}, Attn{1, 77, 64, 4, 4, 77, false}}) {
    rt::Dispatch d = run_attention(*runtime, miss, rng, true);
    EXPECT_FALSE(d.tuned) << d.problem;
    EXPECT_EQ(d.config, baseline);
    ASSERT_EQ(d.kernels.size(), 3u) << d.problem;
    EXPECT_EQ(d.kernels[1], "attn_decode_softmax");
  }

  rt::Timing timing;
  s = runtime->time_problem(
      "attention_prefill:batch=2,dtype=bf16,head=128,kv_heads=2,q_heads=8,seq=256", &timing);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(timing.dispatch.config, kWgmma);
  EXPECT_GT(timing.median_us, 0);

  Buffer x(64, nullptr);
  s = runtime->attention_prefill(64, 1, 96, 4, 4, DType::kBf16, x.p(), x.p(), x.p(), x.p(),
                                 nullptr);
  EXPECT_EQ(s.code(), rt::Code::kInvalidArgument);
  EXPECT_NE(s.message().find("head=96"), std::string::npos) << s.message();
  EXPECT_EQ(attune_rt_attention_prefill(nullptr, 64, 1, 128, 4, 4, ATTUNE_RT_BF16, x.p(), x.p(),
                                        x.p(), x.p(), nullptr, nullptr),
            ATTUNE_RT_INVALID_ARGUMENT);
}

// ---- rope and silu_mul (issue 17)

struct Rope {
  std::int64_t batch, seq, kv, q_heads, kv_heads, head, theta;
  bool bf16, qk_norm;
  bool llama3 = false;  // Llama 3.1's frequency rewrite (RopeScaling::kLlama3)
};

// Llama 3.1's rewrite of a frequency (its rope_scaling: factor 8, low_freq_factor 1,
// high_freq_factor 4, original_max_position_embeddings 8192), as its reference code writes it.
double llama3_frequency(double f) {
  const double pi = 3.14159265358979323846, wavelen = 2 * pi / f;
  if (wavelen < 8192.0 / 4) return f;
  if (wavelen > 8192.0 / 1) return f / 8;
  const double a = (8192.0 / wavelen - 1) / (4 - 1);
  return (1 - a) * f / 8 + a * f;
}

// Runs rope through the runtime on random qkv and caches whose old rows hold random values, and
// checks q and the new cache rows against a float64 CPU reference and the old rows bit for bit;
// returns what ran.
rt::Dispatch run_rope(rt::Runtime& runtime, const Rope& r, std::mt19937& rng) {
  const auto tokens = static_cast<std::size_t>(r.batch * r.seq),
             heads = static_cast<std::size_t>(r.q_heads + 2 * r.kv_heads),
             head = static_cast<std::size_t>(r.head), half = head / 2;
  const std::size_t q_elems = tokens * static_cast<std::size_t>(r.q_heads) * head,
                    cache_elems = static_cast<std::size_t>(r.batch * r.kv_heads * r.kv) * head;
  auto qkv = random_bits(tokens * heads * head, r.bf16, rng), qn = random_bits(head, r.bf16, rng),
       kn = random_bits(head, r.bf16, rng), k_old = random_bits(cache_elems, r.bf16, rng),
       v_old = random_bits(cache_elems, r.bf16, rng);
  Buffer dqkv(qkv.size(), &qkv), dqn(head, &qn), dkn(head, &kn), dq(q_elems, nullptr),
      dk(cache_elems, &k_old), dv(cache_elems, &v_old);
  const rt::Dispatch* d = nullptr;
  rt::Status s =
      runtime.rope(r.batch, r.seq, r.kv, r.q_heads, r.kv_heads, r.head, r.theta,
                   r.bf16 ? DType::kBf16 : DType::kFp16, dq.p(), dk.p(), dv.p(), dqkv.p(),
                   r.qk_norm ? dqn.p() : nullptr, r.qk_norm ? dkn.p() : nullptr,
                   r.llama3 ? rt::RopeScaling::kLlama3 : rt::RopeScaling::kPlain, nullptr, &d);
  EXPECT_TRUE(s.ok()) << s.message();
  if (!s.ok() || !d) return {};
  std::vector<double> want_q(q_elems), want_k(cache_elems), want_v(cache_elems);
  for (std::size_t i = 0; i < cache_elems; ++i) {
    want_k[i] = to_double(k_old[i], r.bf16);
    want_v[i] = to_double(v_old[i], r.bf16);
  }
  for (std::size_t t = 0; t < tokens; ++t) {
    const std::size_t b = t / static_cast<std::size_t>(r.seq),
                      sq = t % static_cast<std::size_t>(r.seq);
    const std::size_t pos = static_cast<std::size_t>(r.kv - r.seq) + sq;
    for (std::size_t h = 0; h < heads; ++h) {
      const std::uint16_t* x = &qkv[(t * heads + h) * head];
      const auto qh = static_cast<std::size_t>(r.q_heads),
                 kvh = static_cast<std::size_t>(r.kv_heads);
      if (h >= qh + kvh) {
        double* dst =
            &want_v[((b * kvh + (h - qh - kvh)) * static_cast<std::size_t>(r.kv) + pos) * head];
        for (std::size_t e = 0; e < head; ++e) dst[e] = to_double(x[e], r.bf16);
        continue;
      }
      double scale = 1;
      if (r.qk_norm) {
        double ss = 0;
        for (std::size_t e = 0; e < head; ++e)
          ss += to_double(x[e], r.bf16) * to_double(x[e], r.bf16);
        scale = 1.0 / std::sqrt(ss / static_cast<double>(head) + 1e-6);
      }
      const auto& w = h < qh ? qn : kn;
      double* dst =
          h < qh ? &want_q[((b * qh + h) * static_cast<std::size_t>(r.seq) + sq) * head]
                 : &want_k[((b * kvh + (h - qh)) * static_cast<std::size_t>(r.kv) + pos) * head];
      for (std::size_t i = 0; i < half; ++i) {
        double x1 = to_double(x[i], r.bf16) * scale, x2 = to_double(x[half + i], r.bf16) * scale;
        if (r.qk_norm) {
          x1 *= to_double(w[i], r.bf16);
          x2 *= to_double(w[half + i], r.bf16);
        }
        const double f = std::pow(static_cast<double>(r.theta),
                                  -2.0 * static_cast<double>(i) / static_cast<double>(head));
        const double angle = static_cast<double>(pos) * (r.llama3 ? llama3_frequency(f) : f);
        dst[i] = x1 * std::cos(angle) - x2 * std::sin(angle);
        dst[half + i] = x2 * std::cos(angle) + x1 * std::sin(angle);
      }
    }
  }
  expect_close(dq.get(), want_q, r.bf16, d->problem + " q (" + d->config + ")");
  const auto k_got = dk.get(), v_got = dv.get();
  expect_close(k_got, want_k, r.bf16, d->problem + " k cache (" + d->config + ")");
  expect_close(v_got, want_v, r.bf16, d->problem + " v cache (" + d->config + ")");
  // The rows before the new tokens are left as they were, bit for bit.
  std::size_t touched = 0;
  for (std::size_t i = 0; i < cache_elems; ++i)
    if ((i / head) % static_cast<std::size_t>(r.kv) < static_cast<std::size_t>(r.kv - r.seq) &&
        (k_got[i] != k_old[i] || v_got[i] != v_old[i]))
      ++touched;
  EXPECT_EQ(touched, 0u) << d->problem << ": old cache rows written";
  return *d;
}

// Runs silu_mul through the C entry point and checks it against a float64 CPU reference.
std::string run_silu_mul(attune_rt* rt, std::int64_t rows, std::int64_t inter, bool bf16,
                         std::mt19937& rng) {
  const auto n = static_cast<std::size_t>(rows * inter);
  auto gu = random_bits(2 * n, bf16, rng);
  Buffer dgu(2 * n, &gu), dy(n, nullptr);
  const attune_rt_dispatch* d = nullptr;
  EXPECT_EQ(attune_rt_silu_mul(rt, rows, inter, bf16 ? ATTUNE_RT_BF16 : ATTUNE_RT_FP16, dy.p(),
                               dgu.p(), nullptr, &d),
            ATTUNE_RT_OK)
      << attune_rt_last_error();
  if (!d) return "";
  std::vector<double> want(n);
  for (std::size_t r = 0; r < static_cast<std::size_t>(rows); ++r)
    for (std::size_t c = 0; c < static_cast<std::size_t>(inter); ++c) {
      const double g = to_double(gu[r * 2 * static_cast<std::size_t>(inter) + c], bf16),
                   u = to_double(gu[(r * 2 + 1) * static_cast<std::size_t>(inter) + c], bf16);
      want[r * static_cast<std::size_t>(inter) + c] = g / (1 + std::exp(-g)) * u;
    }
  expect_close(dy.get(), want, bf16, std::string(d->problem) + " (" + d->config + ")");
  return d->config;
}

// Runs gemm_silu_mul (w: the gate's rows, then the up's) through the C++ entry point and checks it
// against a float64 CPU reference; returns what ran.
rt::Dispatch run_gemm_silu_mul(rt::Runtime& runtime, std::int64_t m, std::int64_t inter,
                               std::int64_t k, std::mt19937& rng) {
  const auto mm = static_cast<std::size_t>(m), in = static_cast<std::size_t>(inter),
             kk = static_cast<std::size_t>(k);
  auto a = random_bits(mm * kk, true, rng), w = random_bits(2 * in * kk, true, rng);
  Buffer da(mm * kk, &a), dw(2 * in * kk, &w), dc(mm * in, nullptr);
  const rt::Dispatch* d = nullptr;
  rt::Status s =
      runtime.gemm_silu_mul(m, inter, k, DType::kBf16, da.p(), dw.p(), dc.p(), nullptr, &d);
  EXPECT_TRUE(s.ok()) << s.message();
  if (!s.ok() || !d) return {};
  std::vector<double> want(mm * in);
  auto dot = [&](std::size_t i, std::size_t row) {
    double acc = 0;
    for (std::size_t p = 0; p < kk; ++p)
      acc += to_double(a[i * kk + p], true) * to_double(w[row * kk + p], true);
    return acc;
  };
  for (std::size_t i = 0; i < mm; ++i)
    for (std::size_t j = 0; j < in; ++j) {
      const double g = dot(i, j), u = dot(i, in + j);
      want[i * in + j] = g / (1 + std::exp(-g)) * u;
    }
  expect_close(dc.get(), want, true, d->problem + " (" + d->config + ")");
  return *d;
}

// Runs gemm_fused (rms_norm: rows of a scaled by their reciprocal RMS; residual: c += a . w^T in
// place, c holding the residual on entry; silu_mul: w the gate's rows then the up's) through the
// C API and checks it against a float64 CPU reference; returns the dispatched config.
std::string run_gemm_fused(attune_rt* rt, std::int64_t m, std::int64_t n, std::int64_t k, bool rms,
                           bool residual, bool silu, std::mt19937& rng) {
  const auto mm = static_cast<std::size_t>(m), nn = static_cast<std::size_t>(n),
             kk = static_cast<std::size_t>(k), out_n = silu ? nn / 2 : nn;
  auto a = random_bits(mm * kk, true, rng), w = random_bits(nn * kk, true, rng),
       c0 = random_bits(mm * out_n, true, rng);
  Buffer da(mm * kk, &a), dw(nn * kk, &w), dc(mm * out_n, residual ? &c0 : nullptr);
  const attune_rt_dispatch* d = nullptr;
  EXPECT_EQ(attune_rt_gemm_fused(rt, m, n, k, ATTUNE_RT_BF16, da.p(), dw.p(), dc.p(), rms ? 1 : 0,
                                 residual ? dc.p() : nullptr, silu ? 1 : 0, nullptr, &d),
            ATTUNE_RT_OK)
      << attune_rt_last_error();
  if (!d) return "";
  std::vector<double> want(mm * out_n);
  for (std::size_t i = 0; i < mm; ++i) {
    double ss = 0;
    for (std::size_t p = 0; p < kk; ++p) ss += std::pow(to_double(a[i * kk + p], true), 2);
    const double scale = rms ? 1.0 / std::sqrt(ss / static_cast<double>(kk) + 1e-6) : 1.0;
    auto dot = [&](std::size_t row) {
      double acc = 0;
      for (std::size_t p = 0; p < kk; ++p)
        acc += to_double(a[i * kk + p], true) * to_double(w[row * kk + p], true);
      return acc * scale;
    };
    for (std::size_t j = 0; j < out_n; ++j) {
      double v = silu ? dot(j) / (1 + std::exp(-dot(j))) * dot(out_n + j) : dot(j);
      if (residual) v += to_double(c0[i * out_n + j], true);
      want[i * out_n + j] = v;
    }
  }
  // The split form (cuBLASLt's) rounds the normalized A to bf16 before the matmul: each of the k
  // terms carries a rounding of up to 2^-9 of itself, about 0.03 absolute at k = 1000 on these
  // unit-RMS rows (measured on an H100: 0.04 at k 1000, 0.08 after SiLU * mul at k 264), where the
  // wgmma form scales its fp32 accumulators. A missing or wrong row scale is off by O(1).
  const bool split = rms && std::string(d->config).rfind("kernel=cublaslt", 0) == 0;
  expect_close(dc.get(), want, true, std::string(d->problem) + " (" + d->config + ")",
               split ? 0.004 * std::sqrt(static_cast<double>(k)) * (silu ? 2 : 1) : 0.02);
  return d->config;
}

// A decoder layer's folded projections through the runtime (attune tune's norm=gemm grouping):
// wgmma rows with the RMSNorm folded in (with SiLU * mul, and with a residual), a K-split wgmma
// row adding the residual in place, and on misses the split baseline (the row kernel, cuBLASLt,
// its beta = 1 residual, the SiLU * mul kernel), all against float64; the verify hook times a
// row; a residual under SiLU * mul is refused.
TEST_F(RuntimeGpu, GemmFusedRowsAndTheSplitBaseline) {
  constexpr const char* kRms = "kernel=wgmma,wg_bm=64,wg_bn=128,wg_stages=6,wg_split=1";
  constexpr const char* kRmsSilu =
      "kernel=wgmma,wg_bm=128,wg_bn=128,wg_stages=4,wg_split=1,wg_tma_store=1";
  constexpr const char* kResidual = "kernel=wgmma,wg_bm=64,wg_bn=128,wg_stages=8,wg_split=4";
  constexpr const char* kBoth =
      "kernel=wgmma,wg_bm=64,wg_bn=64,wg_stages=4,wg_split=1,wg_tiles=2,wg_pingpong=1";
  table::Table t;
  t.attune_version = "gpu-test";
  t.device = device_;
  table::OpTable g{"gemm", "bf16", {}, {}};
  g.rows.push_back(row("gemm:bias=0,dtype=bf16,k=1000,m=77,n=520,rms_norm=1", kRms));
  g.rows.push_back(
      row("gemm:bias=0,dtype=bf16,k=512,m=130,n=1040,rms_norm=1,silu_mul=1", kRmsSilu));
  g.rows.push_back(row("gemm:bias=0,dtype=bf16,k=2048,m=128,n=264,residual=1", kResidual));
  g.rows.push_back(row("gemm:bias=0,dtype=bf16,k=256,m=200,n=136,residual=1,rms_norm=1", kBoth));
  t.ops.push_back(g);
  const std::string path = write_table(t, "gemm-fused.json");
  attune_rt* rt = nullptr;
  ASSERT_EQ(attune_rt_open(path.c_str(), -1, &rt), ATTUNE_RT_OK) << attune_rt_last_error();
  std::mt19937 rng(17);
  EXPECT_EQ(run_gemm_fused(rt, 77, 520, 1000, true, false, false, rng), kRms);
  EXPECT_EQ(run_gemm_fused(rt, 130, 1040, 512, true, false, true, rng), kRmsSilu);
  EXPECT_EQ(run_gemm_fused(rt, 128, 264, 2048, false, true, false, rng), kResidual);
  EXPECT_EQ(run_gemm_fused(rt, 200, 136, 256, true, true, false, rng), kBoth);
  // Misses: the split form (with SiLU * mul, with a residual, and a residual alone: cuBLASLt).
  const std::string baseline = "kernel=cublaslt,lt_algo=0,lt_split=0,lt_tile=0";
  EXPECT_EQ(run_gemm_fused(rt, 9, 1002, 264, true, false, true, rng), baseline);
  EXPECT_EQ(run_gemm_fused(rt, 33, 520, 1000, true, true, false, rng), baseline);
  EXPECT_EQ(run_gemm_fused(rt, 33, 520, 1000, false, true, false, rng), baseline);

  attune_rt_timing timing{};
  EXPECT_EQ(
      attune_rt_time_problem(rt, "gemm:bias=0,dtype=bf16,k=2048,m=128,n=264,residual=1", &timing),
      ATTUNE_RT_OK)
      << attune_rt_last_error();
  EXPECT_GT(timing.median_us, 0);
  Buffer x(64 * 64, nullptr);
  EXPECT_EQ(attune_rt_gemm_fused(rt, 8, 64, 64, ATTUNE_RT_BF16, x.p(), x.p(), x.p(), 0, x.p(), 1,
                                 nullptr, nullptr),
            ATTUNE_RT_INVALID_ARGUMENT);
  attune_rt_close(rt);
}

// gemm with SiLU * mul in its epilogue through the runtime: a tensor-core skinny row with a K
// split (one launch), the split baseline on a miss (cuBLASLt's matmul, then silu_mul's kernel),
// both against float64; the verify hook times the row through the same entry point.
TEST_F(RuntimeGpu, GemmSiluMulRowAndTheSplitBaseline) {
  constexpr const char* kTc = "kernel=skinny_tc,tc_warps=4,tc_nt=2,tc_unroll=1,tc_split=2";
  table::Table t;
  t.attune_version = "gpu-test";
  t.device = device_;
  table::OpTable g{"gemm", "bf16", {}, {}};
  g.rows.push_back(row("gemm:bias=0,dtype=bf16,k=256,m=8,n=2048,silu_mul=1", kTc));
  t.ops.push_back(g);
  const std::string path = write_table(t, "gemm-silu.json");
  std::unique_ptr<rt::Runtime> runtime;
  rt::Status s = rt::Runtime::open(path, &runtime);
  ASSERT_TRUE(s.ok()) << s.message();
  std::mt19937 rng(2026);

  rt::Dispatch hit = run_gemm_silu_mul(*runtime, 8, 1024, 256, rng);
  EXPECT_TRUE(hit.tuned) << hit.why;
  EXPECT_EQ(hit.config, kTc);
  EXPECT_EQ(hit.kernels, (std::vector<std::string>{"gemm_skinny_tc"}));
  rt::Dispatch miss = run_gemm_silu_mul(*runtime, 5, 1001, 264, rng);
  EXPECT_FALSE(miss.tuned);
  EXPECT_EQ(miss.problem, "gemm:bias=0,dtype=bf16,k=264,m=5,n=2002,silu_mul=1");
  ASSERT_EQ(miss.kernels.size(), 2u);
  EXPECT_EQ(miss.kernels[0].rfind("cublasLtMatmul", 0), 0u) << miss.kernels[0];
  EXPECT_EQ(miss.kernels[1], "silu_mul_vector");
  // The plain gemm of the same sizes is another shape: no row, cuBLASLt alone.
  rt::Dispatch plain = run_gemm(*runtime, {8, 2048, 256, true, false}, rng);
  EXPECT_FALSE(plain.tuned);

  rt::Timing timing;
  s = runtime->time_problem("gemm:bias=0,dtype=bf16,k=256,m=8,n=2048,silu_mul=1", &timing);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(timing.dispatch.config, kTc);
  EXPECT_GT(timing.median_us, 0);
}

// The wgmma GEMM through the runtime: its launches take the TMA descriptors of A and B, which the
// runtime encodes from the caller's pointers at every call (bound launches and the verify hook's
// timing alike). A split-K row with bias on a shape with tails on every side, called twice with
// fresh buffers (the second call's maps must be of its own pointers), and a SiLU * mul row, all
// against float64.
TEST_F(RuntimeGpu, WgmmaRowsEncodeTheirTensorMapsPerCall) {
  constexpr const char* kSplit = "kernel=wgmma,wg_bm=64,wg_bn=128,wg_stages=4,wg_split=2";
  constexpr const char* kSilu = "kernel=wgmma,wg_bm=128,wg_bn=64,wg_stages=3,wg_split=1";
  table::Table t;
  t.attune_version = "gpu-test";
  t.device = device_;
  table::OpTable g{"gemm", "bf16", {}, {}};
  g.rows.push_back(row("gemm:bias=1,dtype=bf16,k=1000,m=77,n=520", kSplit));
  g.rows.push_back(row("gemm:bias=0,dtype=bf16,k=512,m=130,n=2080,silu_mul=1", kSilu));
  t.ops.push_back(g);
  const std::string path = write_table(t, "gemm-wgmma.json");
  std::unique_ptr<rt::Runtime> runtime;
  rt::Status s = rt::Runtime::open(path, &runtime);
  ASSERT_TRUE(s.ok()) << s.message();
  std::mt19937 rng(90);

  for (int call = 0; call < 2; ++call) {
    rt::Dispatch d = run_gemm(*runtime, {77, 520, 1000, true, true}, rng);
    EXPECT_TRUE(d.tuned) << d.why;
    EXPECT_EQ(d.config, kSplit);
    EXPECT_EQ(d.kernels, (std::vector<std::string>{"gemm_wgmma"}));
  }
  rt::Dispatch silu = run_gemm_silu_mul(*runtime, 130, 1040, 512, rng);
  EXPECT_TRUE(silu.tuned) << silu.why;
  EXPECT_EQ(silu.config, kSilu);
  EXPECT_EQ(silu.kernels, (std::vector<std::string>{"gemm_wgmma"}));

  rt::Timing timing;
  s = runtime->time_problem("gemm:bias=1,dtype=bf16,k=1000,m=77,n=520", &timing);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(timing.dispatch.config, kSplit);
  EXPECT_GT(timing.median_us, 0);
}

// rope and silu_mul through the runtime: a fused rope row with the q/k norm (a decode step into a
// deep cache and its row), the chain baseline on misses (with and without the norm, fp16, a
// prefill), a vector silu_mul row and the naive baseline through the C API, all against float64
// references; the verify hook times both rows; sizes the kernels are not written for and a lone
// norm weight are refused.
TEST_F(RuntimeGpu, RopeAndSiluMulRowsAndTheirBaselines) {
  constexpr const char* kFused = "kernel=fused,vec=4,head_groups=4,head_blocks=2,tokens=1";
  constexpr const char* kVector = "kernel=vector,vec=8,threads=128,unroll=2,rows_per_block=2";
  table::Table t;
  t.attune_version = "gpu-test";
  t.device = device_;
  table::OpTable ro{"rope", "bf16", {}, {}};
  ro.rows.push_back(
      row("rope:batch=3,dtype=bf16,head=128,kv=1000,kv_heads=2,q_heads=8,qk_norm=1,"
          "seq=1,theta=1000000",
          kFused));
  ro.rows.push_back(
      row("rope:batch=2,dtype=bf16,head=128,kv=6000,kv_heads=8,llama3_scaling=1,q_heads=32,"
          "qk_norm=0,seq=1,theta=500000",
          kFused));
  t.ops.push_back(ro);
  table::OpTable sm{"silu_mul", "bf16", {}, {}};
  sm.rows.push_back(row("silu_mul:dtype=bf16,inter=3072,rows=9", kVector));
  t.ops.push_back(sm);
  const std::string path = write_table(t, "layer-ops.json");
  std::unique_ptr<rt::Runtime> runtime;
  rt::Status s = rt::Runtime::open(path, &runtime);
  ASSERT_TRUE(s.ok()) << s.message();
  std::mt19937 rng(1717);

  rt::Dispatch hit = run_rope(*runtime, {3, 1, 1000, 8, 2, 128, 1000000, true, true}, rng);
  EXPECT_TRUE(hit.tuned) << hit.why;
  EXPECT_EQ(hit.config, kFused);
  ASSERT_EQ(hit.kernels.size(), 1u);
  EXPECT_EQ(hit.kernels[0], "rope_fused");
  // Llama 3.1's rows are the rope problems with llama3_scaling=1: its rewrite hits them, and the
  // same sizes without it are another problem (the chain baseline, plain frequencies).
  rt::Dispatch llama =
      run_rope(*runtime, {2, 1, 6000, 8 * 4, 8, 128, 500000, true, false, true}, rng);
  EXPECT_TRUE(llama.tuned) << llama.why;
  EXPECT_EQ(llama.config, kFused);
  EXPECT_NE(llama.problem.find("llama3_scaling=1"), std::string::npos) << llama.problem;
  for (const Rope& miss : {Rope{2, 1, 6000, 32, 8, 128, 500000, true, false},
                           Rope{1, 7, 4000, 4, 2, 64, 500000, false, true, true},
                           Rope{3, 1, 1000, 8, 2, 128, 1000000, true, false},
                           Rope{2, 77, 77, 4, 4, 64, 10000, false, true},
                           Rope{1, 5, 9, 2, 1, 256, 500000, true, true}}) {
    rt::Dispatch d = run_rope(*runtime, miss, rng);
    EXPECT_FALSE(d.tuned) << d.problem;
    EXPECT_EQ(d.config, "kernel=chain,vec=1,head_groups=1,head_blocks=1,tokens=1");
    EXPECT_EQ(d.kernels.size(), miss.qk_norm ? 3u : 2u) << d.problem;
  }

  attune_rt* c = nullptr;
  ASSERT_EQ(attune_rt_open(path.c_str(), -1, &c), ATTUNE_RT_OK) << attune_rt_last_error();
  EXPECT_EQ(run_silu_mul(c, 9, 3072, true, rng), kVector);
  EXPECT_EQ(run_silu_mul(c, 5, 1001, true, rng),
            "kernel=naive,vec=1,threads=256,unroll=1,rows_per_block=1");
  EXPECT_EQ(run_silu_mul(c, 33, 768, false, rng),
            "kernel=naive,vec=1,threads=256,unroll=1,rows_per_block=1");
  attune_rt_timing timing;
  ASSERT_EQ(attune_rt_time_row(c, 3, 0, &timing), ATTUNE_RT_OK) << attune_rt_last_error();
  EXPECT_STREQ(timing.dispatch.config, kVector);
  EXPECT_GT(timing.median_us, 0);
  attune_rt_close(c);

  rt::Timing rope_timing;
  s = runtime->time_problem(
      "rope:batch=3,dtype=bf16,head=128,kv=1000,kv_heads=2,q_heads=8,qk_norm=1,seq=1,"
      "theta=1000000",
      &rope_timing);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(rope_timing.dispatch.config, kFused);
  EXPECT_GT(rope_timing.median_us, 0);

  Buffer x(4096, nullptr);
  s = runtime->rope(1, 1, 8, 4, 4, 96, 10000, DType::kBf16, x.p(), x.p(), x.p(), x.p(), nullptr,
                    nullptr, nullptr);
  EXPECT_EQ(s.code(), rt::Code::kInvalidArgument);
  EXPECT_NE(s.message().find("head=96"), std::string::npos) << s.message();
  s = runtime->rope(1, 1, 8, 4, 4, 64, 10000, DType::kBf16, x.p(), x.p(), x.p(), x.p(), x.p(),
                    nullptr, nullptr);
  EXPECT_EQ(s.code(), rt::Code::kInvalidArgument);
  EXPECT_NE(s.message().find("q_norm and k_norm go together"), std::string::npos) << s.message();
  EXPECT_EQ(attune_rt_rope(nullptr, 1, 1, 8, 4, 4, 64, 10000, ATTUNE_RT_BF16, x.p(), x.p(), x.p(),
                           x.p(), nullptr, nullptr, nullptr, nullptr),
            ATTUNE_RT_INVALID_ARGUMENT);
  attune_rt* c2 = nullptr;
  ASSERT_EQ(attune_rt_open(path.c_str(), -1, &c2), ATTUNE_RT_OK) << attune_rt_last_error();
  EXPECT_EQ(attune_rt_rope_scaled(c2, 1, 1, 8, 4, 4, 64, 10000, ATTUNE_RT_BF16, x.p(), x.p(), x.p(),
                                  x.p(), nullptr, nullptr, 7, nullptr, nullptr),
            ATTUNE_RT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(attune_rt_last_error()).find("scaling must be"), std::string::npos)
      << attune_rt_last_error();
  attune_rt_close(c2);
  EXPECT_EQ(attune_rt_silu_mul(nullptr, 1, 8, ATTUNE_RT_BF16, x.p(), x.p(), nullptr, nullptr),
            ATTUNE_RT_INVALID_ARGUMENT);
}

struct GemmRope {
  Rope r;
  std::int64_t hidden;
};

// gemm_rope through the runtime against what it fuses, run through the same runtime: the
// projection by gemm() into qkv, then rope(), on the same inputs and the same caches' old rows.
// The fused call must write the same q and cache rows (to the allowance of qkv's rounding, which
// only the unfused path does) and leave the old rows as they were; returns what it ran. With
// `rms` both fold the input RMSNorm in: gemm_fused's rms_norm, then rope(), against gemm_rope's
// (the allowance then also covers the split form's rounding of the normalized x, as
// GemmFusedRowsAndTheSplitBaseline's).
rt::Dispatch run_gemm_rope(rt::Runtime& runtime, const GemmRope& g, std::mt19937& rng,
                           bool rms = false) {
  const Rope& r = g.r;
  const auto tokens = static_cast<std::size_t>(r.batch * r.seq),
             n = static_cast<std::size_t>((r.q_heads + 2 * r.kv_heads) * r.head),
             hidden = static_cast<std::size_t>(g.hidden), head = static_cast<std::size_t>(r.head);
  const std::size_t q_elems = tokens * static_cast<std::size_t>(r.q_heads) * head,
                    cache_elems = static_cast<std::size_t>(r.batch * r.kv_heads * r.kv) * head;
  auto x = random_bits(tokens * hidden, r.bf16, rng), w = random_bits(n * hidden, r.bf16, rng),
       qn = random_bits(head, r.bf16, rng), kn = random_bits(head, r.bf16, rng),
       k_old = random_bits(cache_elems, r.bf16, rng), v_old = random_bits(cache_elems, r.bf16, rng);
  // The projection's outputs are sums of `hidden` products: scaled down so they stay O(1).
  for (auto& e : w) e = static_cast<std::uint16_t>(e - (r.bf16 ? 3u << 7 : 3u << 10));
  Buffer dx(x.size(), &x), dw(w.size(), &w), dqn(head, &qn), dkn(head, &kn),
      qkv(tokens * n, nullptr), q1(q_elems, nullptr), k1(cache_elems, &k_old),
      v1(cache_elems, &v_old), q2(q_elems, nullptr), k2(cache_elems, &k_old),
      v2(cache_elems, &v_old);
  const DType dt = r.bf16 ? DType::kBf16 : DType::kFp16;
  const rt::RopeScaling scaling = r.llama3 ? rt::RopeScaling::kLlama3 : rt::RopeScaling::kPlain;
  const void* wq = r.qk_norm ? dqn.p() : nullptr;
  const void* wk = r.qk_norm ? dkn.p() : nullptr;
  const rt::Runtime::GemmFusion fusion{rms, nullptr, false};
  rt::Status s = runtime.gemm_fused(static_cast<std::int64_t>(tokens), static_cast<std::int64_t>(n),
                                    g.hidden, dt, dx.p(), dw.p(), qkv.p(), fusion, nullptr);
  EXPECT_TRUE(s.ok()) << s.message();
  s = runtime.rope(r.batch, r.seq, r.kv, r.q_heads, r.kv_heads, r.head, r.theta, dt, q1.p(), k1.p(),
                   v1.p(), qkv.p(), wq, wk, scaling, nullptr);
  EXPECT_TRUE(s.ok()) << s.message();
  const rt::Dispatch* d = nullptr;
  s = runtime.gemm_rope(r.batch, r.seq, r.kv, r.q_heads, r.kv_heads, r.head, r.theta, g.hidden, dt,
                        q2.p(), k2.p(), v2.p(), dx.p(), dw.p(), wq, wk, scaling, fusion, nullptr,
                        &d);
  EXPECT_TRUE(s.ok()) << s.message();
  if (!s.ok() || !d) return {};
  auto as_double = [&](const std::vector<std::uint16_t>& v) {
    std::vector<double> out(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) out[i] = to_double(v[i], r.bf16);
    return out;
  };
  const double atol = rms ? 0.004 * std::sqrt(static_cast<double>(g.hidden)) : 0.02;
  expect_close(q2.get(), as_double(q1.get()), r.bf16, d->problem + " q (" + d->config + ")", atol);
  const auto k_got = k2.get(), v_got = v2.get();
  expect_close(k_got, as_double(k1.get()), r.bf16, d->problem + " k cache (" + d->config + ")",
               atol);
  expect_close(v_got, as_double(v1.get()), r.bf16, d->problem + " v cache (" + d->config + ")",
               atol);
  std::size_t touched = 0;
  for (std::size_t i = 0; i < cache_elems; ++i)
    if ((i / head) % static_cast<std::size_t>(r.kv) < static_cast<std::size_t>(r.kv - r.seq) &&
        (k_got[i] != k_old[i] || v_got[i] != v_old[i]))
      ++touched;
  EXPECT_EQ(touched, 0u) << d->problem << ": old cache rows written";
  return *d;
}

// The QKV projection with RoPE in its epilogue through the runtime: a tiled row (one launch of
// gemm_tiled_rope) on a prefill with the q/k norm, a wgmma row (gemm_wgmma_rope, two consumer
// warpgroups, a partial last tile of tokens) without it, the split baseline (cuBLASLt's matmul,
// then the RoPE kernel) on misses (a decode step with Llama 3.1's scaling in fp16, a head of 64),
// each against the unfused gemm() then rope(); the timing hook runs the row; bad calls are refused.
TEST_F(RuntimeGpu, GemmRopeRowAndBaselineMatchTheGemmThenRope) {
  constexpr const char* kTiled =
      "kernel=tiled,tl_bm=64,tl_bn=128,tl_bk=32,tl_wm=2,tl_wn=2,tl_stages=3,tl_group=8";
  constexpr const char* kWgmma = "kernel=wgmma,wg_bm=128,wg_bn=128,wg_stages=4";
  table::Table t;
  t.attune_version = "gpu-test";
  t.device = device_;
  table::OpTable gr{"gemm_rope", "bf16", {}, {}};
  gr.rows.push_back(
      row("gemm_rope:batch=3,dtype=bf16,head=128,hidden=1032,kv=100,kv_heads=2,"
          "q_heads=8,qk_norm=1,seq=77,theta=1000000",
          kTiled));
  gr.rows.push_back(
      row("gemm_rope:batch=1,dtype=bf16,head=128,hidden=1032,kv=130,kv_heads=2,"
          "q_heads=8,qk_norm=0,seq=130,theta=500000",
          kWgmma));
  // The input RMSNorm folded in (rms_norm=1): a wgmma row with ping-pong consumers.
  constexpr const char* kWgmmaRms =
      "kernel=wgmma,wg_bm=64,wg_bn=128,wg_stages=6,wg_tiles=2,wg_pingpong=1,wg_staged=1";
  gr.rows.push_back(
      row("gemm_rope:batch=2,dtype=bf16,head=128,hidden=1032,kv=100,kv_heads=2,"
          "q_heads=8,qk_norm=1,rms_norm=1,seq=77,theta=1000000",
          kWgmmaRms));
  t.ops.push_back(gr);
  const std::string path = write_table(t, "gemm-rope.json");
  std::unique_ptr<rt::Runtime> runtime;
  rt::Status s = rt::Runtime::open(path, &runtime);
  ASSERT_TRUE(s.ok()) << s.message();
  std::mt19937 rng(2424);

  rt::Dispatch hit =
      run_gemm_rope(*runtime, {{3, 77, 100, 8, 2, 128, 1000000, true, true}, 1032}, rng);
  EXPECT_TRUE(hit.tuned) << hit.why;
  EXPECT_EQ(hit.config, kTiled);
  EXPECT_EQ(hit.kernels, std::vector<std::string>{"gemm_tiled_rope"});
  rt::Dispatch wgmma =
      run_gemm_rope(*runtime, {{1, 130, 130, 8, 2, 128, 500000, true, false}, 1032}, rng);
  EXPECT_TRUE(wgmma.tuned) << wgmma.why;
  EXPECT_EQ(wgmma.config, kWgmma);
  EXPECT_EQ(wgmma.kernels, std::vector<std::string>{"gemm_wgmma_rope"});
  rt::Dispatch rms =
      run_gemm_rope(*runtime, {{2, 77, 100, 8, 2, 128, 1000000, true, true}, 1032}, rng, true);
  EXPECT_TRUE(rms.tuned) << rms.why;
  EXPECT_EQ(rms.config, kWgmmaRms);
  // Its miss: the split form with the RMSNorm kernel first.
  rt::Dispatch rms_miss =
      run_gemm_rope(*runtime, {{3, 33, 40, 4, 4, 64, 10000, true, false}, 264}, rng, true);
  EXPECT_FALSE(rms_miss.tuned) << rms_miss.problem;
  ASSERT_EQ(rms_miss.kernels.size(), 3u);
  EXPECT_EQ(rms_miss.kernels[0], "gemm_row_rms");
  EXPECT_EQ(rms_miss.kernels[1].rfind("cublasLtMatmul", 0), 0u) << rms_miss.kernels[1];
  EXPECT_EQ(rms_miss.kernels[2], "rope_fused");
  for (const GemmRope& miss : {GemmRope{{5, 1, 1001, 8, 2, 64, 500000, false, false, true}, 520},
                               GemmRope{{2, 33, 33, 4, 4, 128, 10000, true, false}, 264}}) {
    rt::Dispatch d = run_gemm_rope(*runtime, miss, rng);
    EXPECT_FALSE(d.tuned) << d.problem;
    EXPECT_EQ(d.config,
              "kernel=split,tl_bm=128,tl_bn=128,tl_bk=32,tl_wm=2,tl_wn=2,tl_stages=3,tl_group=8,"
              "wg_bm=128,wg_bn=128,wg_stages=4,wg_tiles=1,wg_cluster=1,wg_staged=0,"
              "wg_pingpong=0");
  }

  rt::Timing timing;
  s = runtime->time_problem(
      "gemm_rope:batch=3,dtype=bf16,head=128,hidden=1032,kv=100,kv_heads=2,q_heads=8,qk_norm=1,"
      "seq=77,theta=1000000",
      &timing);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(timing.dispatch.config, kTiled);
  EXPECT_GT(timing.median_us, 0);

  Buffer b(4096, nullptr);
  s = runtime->gemm_rope(1, 1, 8, 4, 4, 64, 10000, 100, DType::kBf16, b.p(), b.p(), b.p(), b.p(),
                         b.p(), nullptr, nullptr, rt::RopeScaling::kPlain, nullptr);
  EXPECT_EQ(s.code(), rt::Code::kInvalidArgument);
  EXPECT_NE(s.message().find("hidden=100"), std::string::npos) << s.message();
  EXPECT_EQ(attune_rt_gemm_rope(nullptr, 1, 1, 8, 4, 4, 64, 10000, 64, ATTUNE_RT_BF16, b.p(), b.p(),
                                b.p(), b.p(), b.p(), nullptr, nullptr, ATTUNE_RT_ROPE_PLAIN,
                                nullptr, nullptr),
            ATTUNE_RT_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace attune
