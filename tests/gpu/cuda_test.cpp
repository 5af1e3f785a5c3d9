// The CUDA backend on a real GPU: fingerprint, and every config of the rmsnorm family's space on
// odd shapes against the float64 reference, with poisoned outputs and guard elements.
#include <algorithm>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>

#include <cstdio>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "core/op.h"
#include "gpu/gpu_support.h"
#include "support/run.h"

namespace attune {
namespace {

TEST(CudaGpu, FingerprintNamesTheDevice) {
  ATTUNE_REQUIRE_GPU(cuda);
  auto fp = cuda->fingerprint();
  ASSERT_TRUE(fp.ok());
  EXPECT_EQ(fp->backend, "cuda");
  EXPECT_FALSE(fp->name.empty());
  EXPECT_GT(fp->sm_count, 0);
  EXPECT_GT(fp->memory_bytes, 1ull << 30);
  EXPECT_GT(fp->l2_bytes, 0u);
  EXPECT_EQ(fp->arch.rfind("sm_", 0), 0u);
  std::cout << "device: " << fp->name << " " << fp->arch << " " << fp->sm_count << " SMs, driver "
            << fp->driver_version << ", max SM clock " << fp->max_sm_clock_mhz << " MHz\n";
}

// The backend counts the GPUs this process sees and fingerprints each; the one in use is among
// them, and an index past the last is refused naming the count.
TEST(CudaGpu, EnumeratesItsDevicesAndRefusesAnIndexPastThem) {
  ATTUNE_REQUIRE_GPU(cuda);
  auto all = cuda->devices();
  ASSERT_TRUE(all.ok()) << all.error().message();
  ASSERT_GE(all->size(), 1u);
  ASSERT_LT(static_cast<std::size_t>(cuda->device_index()), all->size());
  EXPECT_EQ((*all)[static_cast<std::size_t>(cuda->device_index())].key(),
            cuda->fingerprint()->key());
  for (const auto& d : *all) EXPECT_EQ(d.backend, "cuda");
  const int count = static_cast<int>(all->size());
  Status past = cuda->select_device(count);
  ASSERT_FALSE(past.ok());
  EXPECT_NE(past.error().message().find("has " + std::to_string(count) + " device"),
            std::string::npos)
      << past.error().message();
  ASSERT_TRUE(cuda->select_device(count - 1).ok());
  EXPECT_EQ(cuda->device_index(), count - 1);
  const auto& last = (*all)[static_cast<std::size_t>(count - 1)];
  EXPECT_EQ(cuda->fingerprint()->extra.at("pci_bus_id"), last.extra.at("pci_bus_id"));
}

// Every config of attune's own kernels, and every cuBLASLt algorithm as its heuristic returns it,
// passes the gate. cuBLASLt's split-K and tile variants that it accepts may still compute a
// wrong answer (seen on the H200: split-K 16 with a bias epilogue, rel. err 0.3); the gate must
// reject those as wrong_output, and the search goes on. Counts the configs that ran.
bool must_pass(const Config& c) {
  return c.get("kernel") == nullptr || c.get("kernel")->as_word() != "cublaslt" ||
         (c.get("lt_split")->as_int() == 0 && c.get("lt_tile")->as_int() == 0);
}

// The configs of `problem`'s space that `keep` accepts, in enumeration order (none, with a test
// failure, when the backend cannot make the space).
std::vector<Config> configs_where(Backend& cuda, const Problem& problem,
                                  const std::function<bool(const Config&)>& keep) {
  auto space = cuda.space(problem);
  if (!space.ok()) {
    ADD_FAILURE() << space.error().message();
    return {};
  }
  std::vector<Config> out;
  for (auto e = space->enumerate(); auto pt = e.next();)
    if (Config c = space->config(*pt); keep(c)) out.push_back(std::move(c));
  return out;
}

// Every config of the space, except the tiled and wgmma GEMMs' hundreds: a seeded sample of
// `sample` of them, compiled ahead on the backend's compile threads.
void every_config_passes(Backend& cuda, const std::string& spec, std::size_t expect_min,
                         std::size_t sample = 24) {
  auto p = cuda.resolve(spec);
  ASSERT_TRUE(p.ok()) << p.error().message();
  auto space = cuda.space(*p);
  ASSERT_TRUE(space.ok()) << space.error().message();
  std::vector<Config> configs, sampled;
  for (auto e = space->enumerate(); auto pt = e.next();) {
    Config c = space->config(*pt);
    const Value* kernel = c.get("kernel");
    const bool many = kernel && (kernel->as_word() == "tiled" || kernel->as_word() == "wgmma");
    (many ? sampled : configs).push_back(std::move(c));
  }
  std::mt19937_64 rng(20261129);
  std::shuffle(sampled.begin(), sampled.end(), rng);
  if (sampled.size() > sample) sampled.resize(sample);
  std::cout << spec << ": " << configs.size() << " configs + " << sampled.size()
            << " sampled tiled and wgmma configs\n";
  configs.insert(configs.end(), sampled.begin(), sampled.end());
  for (const Config& c : configs) cuda.prepare(*p, c);
  std::size_t n = 0;
  for (const Config& c : configs) {
    if (cuda.can_implement(*p, c)) continue;
    Outcome o = cuda.execute(*p, c, Regime::kRank);
    if (o.verdict == Verdict::kUnsupported) continue;
    if (must_pass(c)) {
      EXPECT_EQ(o.verdict, Verdict::kOk) << spec << " " << c.text() << ": " << o.message;
    } else {
      EXPECT_TRUE(o.verdict == Verdict::kOk || o.verdict == Verdict::kWrongOutput)
          << c.text() << ": " << o.message;
      if (o.verdict != Verdict::kOk)
        std::cout << "gate rejected " << spec << " " << c.text() << ": " << o.message << "\n";
    }
    if (o.verdict == Verdict::kOk) {
      EXPECT_TRUE(o.measurement && o.measurement->median_us > 0);
      EXPECT_TRUE(o.check && o.check->value <= o.check->tolerance);
    }
    ++n;
  }
  EXPECT_GE(n, expect_min) << spec;
}

// Every registered op (kernels/ops.h) has its CUDA family: the plugin offers problems of it,
// resolves its example shape, and its Space's baseline is the signature's baseline config (the
// config libattune-rt runs on a miss and tuned rows must beat).
TEST(CudaGpu, EveryRegisteredOpHasItsFamilyWithTheSignaturesBaseline) {
  ATTUNE_REQUIRE_GPU(cuda);
  std::set<std::string> offered;
  for (const auto& info : cuda->problems()) offered.insert(info.problem.op());
  for (const OpSignature* op : registered_ops()) {
    SCOPED_TRACE(op->name);
    EXPECT_EQ(offered.count(op->name), 1u);
    auto shape = op->problem_from_shape(op->example_shape, "");
    ASSERT_TRUE(shape.ok()) << shape.error().message();
    auto p = cuda->resolve(shape->text());
    ASSERT_TRUE(p.ok()) << p.error().message();
    auto space = cuda->space(*p);
    ASSERT_TRUE(space.ok()) << space.error().message();
    const Config baseline = space->config(space->baseline());
    const Config signature = *Config::parse(op->baseline_config);
    for (const auto& [name, value] : signature.entries()) {
      ASSERT_NE(baseline.get(name), nullptr) << name;
      EXPECT_EQ(baseline.get(name)->text(), value.text()) << name << " in " << baseline.text();
    }
  }
}

TEST(CudaGpu, RmsnormEveryConfigOnOddShapes) {
  ATTUNE_REQUIRE_GPU(cuda);
  every_config_passes(*cuda, "rmsnorm:rows=37,hidden=1000,residual=1", 50);
  every_config_passes(*cuda, "rmsnorm:rows=5,hidden=999,dtype=fp16", 10);
  every_config_passes(*cuda, "rmsnorm:rows=333,hidden=5120", 50);
}

TEST(CudaGpu, GemmEveryConfigOnOddShapes) {
  ATTUNE_REQUIRE_GPU(cuda);
  every_config_passes(*cuda, "gemm:m=3,n=1001,k=1000,bias=1", 100);   // skinny and cuBLASLt
  every_config_passes(*cuda, "gemm:m=7,n=517,k=999,dtype=fp16", 20);  // odd K: scalar loads only
  every_config_passes(*cuda, "gemm:m=77,n=129,k=1000", 5);            // cuBLASLt and tiled
  every_config_passes(*cuda, "gemm:m=1000,n=1000,k=2056,bias=1", 5);  // fp32-output reference path
  every_config_passes(*cuda, "gemm:m=333,n=1031,k=4104,dtype=fp16", 5,
                      32);  // tiled tails on every side
}

// gemm with SiLU * mul in its epilogue (silu_mul=1): every skinny and tensor-core skinny config,
// a sample of tiled ones (split-K's reduction applies the epilogue) and cuBLASLt's split form
// (matmul, then silu_mul's kernel) against the float64 product's SiLU(gate) * up, on odd row
// counts, an inter size that is no multiple of the tiles, and the reference's fp32-output path.
TEST(CudaGpu, GemmSiluMulEpilogueEveryConfigOnOddShapes) {
  ATTUNE_REQUIRE_GPU(cuda);
  every_config_passes(*cuda, "gemm:m=3,n=1002,k=1000,silu_mul=1", 100);  // skinny, split form
  every_config_passes(*cuda, "gemm:m=9,n=6144,k=1024,silu_mul=1,dtype=fp16", 50);
  every_config_passes(*cuda, "gemm:m=77,n=1056,k=1000,silu_mul=1", 5, 32);    // tiled tails
  every_config_passes(*cuda, "gemm:m=1000,n=6144,k=1024,silu_mul=1", 5, 16);  // fp32 reference
}

// The tiled GEMM's K split, a thread block cluster summing partial tiles through distributed shared
// memory: every block tile, warp layout and split (at one pipeline depth and raster order) against
// the float64 reference, plain and with the SiLU * mul epilogue, on shapes with tails on every
// side.
TEST(CudaGpu, GemmTiledClusterSplitEveryTileAndWarpLayout) {
  ATTUNE_REQUIRE_GPU(cuda);
  for (const char* spec :
       {"gemm:m=133,n=1031,k=2056,bias=1", "gemm:m=77,n=1056,k=1000,silu_mul=1"}) {
    SCOPED_TRACE(spec);
    auto p = cuda->resolve(spec);
    ASSERT_TRUE(p.ok()) << p.error().message();
    const std::vector<Config> configs = configs_where(*cuda, *p, [](const Config& c) {
      return c.get("kernel")->as_word() == "tiled" && c.get("tl_split")->as_int() > 1 &&
             c.get("tl_stages")->as_int() == 3 && c.get("tl_group")->as_int() == 8 &&
             c.get("tl_bk")->as_int() == 32;
    });
    for (const Config& c : configs) cuda->prepare(*p, c);
    std::size_t ran = 0;
    for (const Config& c : configs) {
      if (cuda->can_implement(*p, c)) continue;
      Outcome o = cuda->execute(*p, c, Regime::kRank);
      if (o.verdict == Verdict::kUnsupported) continue;
      EXPECT_EQ(o.verdict, Verdict::kOk) << c.text() << ": " << o.message;
      ++ran;
    }
    std::cout << spec << ": " << ran << " of " << configs.size() << " split configs ran\n";
    EXPECT_GE(ran, 60u);
  }
}

// Every wgmma config of gemm problem p (all built first, in parallel) passes the gate; at least
// 20 of them run on this device.
void expect_every_wgmma_config_passes(Backend& cuda, const Problem& p, const char* spec) {
  const std::vector<Config> configs =
      configs_where(cuda, p, [](const Config& c) { return c.get("kernel")->as_word() == "wgmma"; });
  for (const Config& c : configs) cuda.prepare(p, c);
  std::size_t ran = 0;
  for (const Config& c : configs) {
    if (cuda.can_implement(p, c)) continue;
    Outcome o = cuda.execute(p, c, Regime::kRank);
    EXPECT_EQ(o.verdict, Verdict::kOk) << c.text() << ": " << o.message;
    ++ran;
  }
  std::cout << spec << ": " << ran << " of " << configs.size() << " wgmma configs ran\n";
  EXPECT_GE(ran, 20u);
}

// Hopper's warpgroup-MMA GEMM: every block tile, ring depth, K split, tiles per block, B-sharing
// cluster and store (straight or through the TMA) against the float64 reference, plain with bias,
// with the SiLU * mul epilogue, in fp16, and at the Qwen3 layer's M = 128, on shapes with tails on
// every side (M, N and K no multiples of the tiles; an odd number of tile rows leaves a cluster's
// second block past M). The TMA store needs N (of the output) % 8 == 0: m=301 n=1288 with bias and
// the silu_mul shapes take it.
TEST(CudaGpu, GemmWgmmaEveryTileStageAndSplit) {
  ATTUNE_REQUIRE_GPU(cuda);
  for (const char* spec :
       {"gemm:m=133,n=1031,k=2056,bias=1", "gemm:m=77,n=1056,k=1000,silu_mul=1",
        "gemm:m=300,n=517,k=4104,dtype=fp16", "gemm:m=128,n=6144,k=1024,silu_mul=1",
        "gemm:m=5,n=333,k=1032", "gemm:m=301,n=1288,k=1032,bias=1,dtype=fp16"}) {
    SCOPED_TRACE(spec);
    auto p = cuda->resolve(spec);
    ASSERT_TRUE(p.ok()) << p.error().message();
    expect_every_wgmma_config_passes(*cuda, *p, spec);
  }
}

// gemm's folded forms on odd shapes (tails on every side, both dtypes): every wgmma config with the
// RMSNorm folded in (alone, under SiLU * mul, with a residual) and with a residual (K splits
// included), and the cuBLASLt baseline's split form of each, pass the gate against the float64
// reference (row scale from A in float64, the residual added after).
TEST(CudaGpu, GemmRmsNormAndResidualEveryWgmmaConfigAndTheBaseline) {
  ATTUNE_REQUIRE_GPU(cuda);
  for (const char* spec :
       {"gemm:m=133,n=1031,k=2056,residual=1", "gemm:m=77,n=1056,k=1000,silu_mul=1,rms_norm=1",
        "gemm:m=301,n=1288,k=1032,rms_norm=1,residual=1,dtype=fp16",
        "gemm:m=5,n=333,k=1032,rms_norm=1"}) {
    SCOPED_TRACE(spec);
    auto p = cuda->resolve(spec);
    ASSERT_TRUE(p.ok()) << p.error().message();
    const Outcome base = cuda->execute(
        *p, *Config::parse("kernel=cublaslt,lt_algo=0,lt_split=0,lt_tile=0"), Regime::kRank);
    EXPECT_EQ(base.verdict, Verdict::kOk) << "baseline: " << base.message;
    expect_every_wgmma_config_passes(*cuda, *p, spec);
  }
}

// attention_decode on odd shapes: every head size in both dtypes, caches of 1, 7, 1000 and 4097
// keys, 1-8 new tokens, GQA ratios 1, 4 and 8, batch 1 and 3. The split baseline and a seeded
// sample of flash configs and of tensor-core (kernel=mma) ones (splits that do not divide the
// cache, tiles longer than it, row groups with padding, empty splits) each pass the gate against
// the float64 reference: fresh inputs, poisoned output with guard elements, NaN checks. Counts the
// configs that ran.
TEST(CudaGpu, AttentionDecodeBaselineAndSampledFlashConfigsOnOddShapes) {
  ATTUNE_REQUIRE_GPU(cuda);
  const char* specs[] = {
      "attention_decode:batch=1,kv=1,head=64,q_heads=4,kv_heads=4,q_len=1",
      "attention_decode:batch=3,kv=7,head=128,q_heads=8,kv_heads=2,q_len=7,dtype=fp16",
      "attention_decode:batch=3,kv=1000,head=256,q_heads=16,kv_heads=2,q_len=3",
      "attention_decode:batch=1,kv=4097,head=128,q_heads=32,kv_heads=8,q_len=1",
      "attention_decode:batch=3,kv=4097,head=64,q_heads=8,kv_heads=1,q_len=8,dtype=fp16",
      "attention_decode:batch=1,kv=1000,head=256,q_heads=2,kv_heads=2,q_len=2,dtype=fp16",
      "attention_decode:batch=3,kv=1000,head=128,q_heads=16,kv_heads=4,q_len=5",
      "attention_decode:batch=1,kv=4097,head=256,q_heads=8,kv_heads=2,q_len=4",
      "attention_decode:batch=3,kv=1000,head=64,q_heads=32,kv_heads=8,q_len=6",
  };
  constexpr std::size_t kSampled = 12;
  std::mt19937_64 rng(20261616);
  for (const char* spec : specs) {
    auto p = cuda->resolve(spec);
    ASSERT_TRUE(p.ok()) << p.error().message();
    auto space = cuda->space(*p);
    ASSERT_TRUE(space.ok()) << space.error().message();
    std::vector<Config> flash, mma;
    Config baseline = space->config(space->baseline());
    ASSERT_EQ(baseline.get("kernel")->as_word(), "split");
    for (auto e = space->enumerate(); auto pt = e.next();) {
      Config c = space->config(*pt);
      const std::string k = c.get("kernel")->as_word();
      if (k == "flash") flash.push_back(std::move(c));
      if (k == "mma") mma.push_back(std::move(c));
    }
    ASSERT_FALSE(mma.empty()) << spec;
    std::vector<Config> configs = {baseline};
    for (std::vector<Config>* some : {&flash, &mma}) {
      std::shuffle(some->begin(), some->end(), rng);
      if (some->size() > kSampled) some->resize(kSampled);
      configs.insert(configs.end(), some->begin(), some->end());
    }
    for (const Config& c : configs) cuda->prepare(*p, c);
    std::size_t ok = 0;
    for (const Config& c : configs) {
      Outcome o = cuda->execute(*p, c, Regime::kRank);
      EXPECT_EQ(o.verdict, Verdict::kOk) << spec << " " << c.text() << ": " << o.message;
      if (o.verdict != Verdict::kOk) continue;
      EXPECT_TRUE(o.check && o.check->value <= o.check->tolerance);
      EXPECT_TRUE(o.measurement && o.measurement->median_us > 0);
      ++ok;
    }
    std::cout << spec << ": " << ok << " of " << configs.size() << " configs ok (space "
              << space->count() << ")\n";
    EXPECT_GE(ok, std::min<std::size_t>(configs.size(), 2));
  }
}

// The Qwen3-8B decode cell every config of it passes, and the deploy regime times the baseline
// and the flash kernel: what bench/attention_decode.py reports, here only checked to run.
TEST(CudaGpu, AttentionDecodeEveryConfigOfADecodeCell) {
  ATTUNE_REQUIRE_GPU(cuda);
  every_config_passes(
      *cuda, "attention_decode:batch=4,kv=4096,head=128,q_heads=32,kv_heads=8,q_len=1", 100);
}

// kernel=mma's two row tiles per block (q_rows=32) and its clusters past the portable 8 blocks
// (splits=16, combine=cluster, opted in at launch): every such config of the q4 GQA bench cell (32
// rows a KV head), of an odd fp16 cell (24 rows: the second row tile half padding; a cache that no
// split divides), of the 32k-deep bench cell and of an odd-depth one passes the gate against the
// float64 reference. A cluster the device cannot co-schedule is refused as launch_failed with the
// reason and counted; expect_min still asks that most of them run.
TEST(CudaGpu, AttentionDecodeMmaTwoRowTilesAndSixteenBlockClusters) {
  ATTUNE_REQUIRE_GPU(cuda);
  struct Cell {
    const char* spec;
    std::size_t expect_min;
  };
  const Cell cells[] = {
      {"attention_decode:batch=8,kv=4096,head=128,q_heads=32,kv_heads=4,q_len=4", 8},
      {"attention_decode:batch=3,kv=4097,head=64,q_heads=16,kv_heads=2,q_len=3,dtype=fp16", 8},
      {"attention_decode:batch=1,kv=32768,head=128,q_heads=32,kv_heads=8,q_len=1", 4},
      {"attention_decode:batch=3,kv=4097,head=128,q_heads=32,kv_heads=8,q_len=2,dtype=fp16", 4},
  };
  for (const Cell& cell : cells) {
    auto p = cuda->resolve(cell.spec);
    ASSERT_TRUE(p.ok()) << p.error().message();
    const std::vector<Config> configs = configs_where(*cuda, *p, [](const Config& c) {
      const bool two = c.get("q_rows")->as_int() == 32;
      const bool sixteen =
          c.get("combine")->as_word() == "cluster" && c.get("splits")->as_int() == 16;
      return c.get("kernel")->as_word() == "mma" && (two || sixteen);
    });
    for (const Config& c : configs) cuda->prepare(*p, c);
    std::size_t ok = 0;
    std::size_t refused = 0;
    for (const Config& c : configs) {
      Outcome o = cuda->execute(*p, c, Regime::kRank);
      // A cluster of 16 blocks the device cannot co-schedule is refused before any launch, with
      // the reason (cuda::check_launch); it never runs, so there is nothing to check.
      if (o.verdict == Verdict::kLaunchFailed &&
          o.message.find("thread block cluster") != std::string::npos) {
        std::cout << "refused " << cell.spec << " " << c.text() << ": " << o.message << "\n";
        ++refused;
        continue;
      }
      EXPECT_EQ(o.verdict, Verdict::kOk) << cell.spec << " " << c.text() << ": " << o.message;
      if (o.verdict != Verdict::kOk) continue;
      EXPECT_TRUE(o.check && o.check->value <= o.check->tolerance);
      ++ok;
    }
    std::cout << cell.spec << ": " << ok << " of " << configs.size()
              << " two-row-tile or 16-block-cluster configs ok, " << refused
              << " clusters the device refused\n";
    EXPECT_GE(ok, cell.expect_min) << cell.spec;
  }
}

// attention_prefill on odd shapes: both head sizes in both dtypes, sequences of 1, 77 (shorter than
// a key tile), 1000 and 1153 (neither a multiple of a row block nor of a key tile), GQA ratios 1,
// 4 and 8, batch 1 and 3. Every config (the split baseline and each wgmma config) passes the gate
// against the float64 reference: fresh inputs, poisoned output with guard elements, NaN checks.
// (A space has at most 35 configs: the sample of 64 keeps them all.)
TEST(CudaGpu, AttentionPrefillEveryConfigOnOddShapes) {
  ATTUNE_REQUIRE_GPU(cuda);
  constexpr std::size_t kAll = 64;
  for (const char* spec :
       {"attention_prefill:seq=1,batch=1,head=64,q_heads=4,kv_heads=4",
        "attention_prefill:seq=77,batch=3,head=128,q_heads=8,kv_heads=2,dtype=fp16",
        "attention_prefill:seq=1000,batch=3,head=64,q_heads=8,kv_heads=1",
        "attention_prefill:seq=1153,batch=1,head=128,q_heads=16,kv_heads=2,dtype=fp16",
        "attention_prefill:seq=1153,batch=1,head=128,q_heads=32,kv_heads=8"})
    every_config_passes(*cuda, spec, 5, kAll);
}

TEST(CudaGpu, DeployRegimeIsColdAndMeasured) {
  ATTUNE_REQUIRE_GPU(cuda);
  auto p = cuda->resolve("rmsnorm:rows=8192,hidden=4096");
  ASSERT_TRUE(p.ok());
  Config base = cuda->space(*p)->config(cuda->space(*p)->baseline());
  Outcome o = cuda->execute(*p, base, Regime::kDeploy);
  ASSERT_EQ(o.verdict, Verdict::kOk) << o.message;
  EXPECT_EQ(o.measurement->cache, CacheState::kCold);
  EXPECT_GE(o.measurement->samples, 10);
  std::cout << "rmsnorm 8192x4096 baseline deploy: " << o.measurement->median_us << " us, noise "
            << o.measurement->noise << ", SM clock " << o.measurement->sm_clock_mhz
            << " MHz, throttle '" << o.measurement->throttle << "'\n";
}

}  // namespace
}  // namespace attune

namespace attune {
namespace {

// `attune tune --spec SPEC --strategy grid --patience 0 --json` on a fresh database: the report.
nlohmann::json tune_spec(const std::string& spec, const std::string& name) {
  const char* src = std::getenv("ATTUNE_SOURCE_ROOT");
  const std::string root = src ? src : ATTUNE_SOURCE_DIR;
  const std::string db = ::testing::TempDir() + "/" + name + ".db";
  std::remove(db.c_str());
  const auto r = testing::run_binary(testing::gpu_attune_binary(),
                                     "tune --spec '" + root + "/" + spec +
                                         "' --strategy grid --patience 0 --timeout 10 "
                                         "--backoff 0.2 --json --db '" +
                                         db + "'",
                                     ::testing::TempDir());
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  return nlohmann::json::parse(r.out, nullptr, false);
}

// The user-kernel gate as the device runs it (fills, poison, guards and the comparison on the
// GPU, the reference once per input set): each planted fault gets its verdict, with the host's
// words for it, and a candidate that overwrites its input does not fail the ones after it.
TEST(CudaGpu, UserKernelGateCatchesEachFaultOnTheDevice) {
  ATTUNE_REQUIRE_GPU(cuda);
  auto j = tune_spec("tests/gpu/gate/gate.yaml", "gate");
  ASSERT_TRUE(j.is_object());
  const auto& v = j["problems"][0]["verdicts"];
  std::cout << "verdicts: " << v.dump() << "\n";
  EXPECT_EQ(v["ok"], 3);            // modes 0, 5, 6
  EXPECT_EQ(v["wrong_output"], 3);  // modes 1, 2, 3
  EXPECT_EQ(v["non_finite"], 1);    // mode 4
  std::map<std::string, std::string> why;
  for (const auto& r : j["problems"][0]["rejected"]) {
    std::cout << "  " << r["config"].get<std::string>() << ": " << r["verdict"].get<std::string>()
              << ": " << r["message"].get<std::string>() << "\n";
    why[r["config"].get<std::string>()] = r["message"].get<std::string>();
  }
  EXPECT_NE(why["mode=1"].find("y32: 1 of 100003 outputs off; worst at [7]"), std::string::npos);
  EXPECT_NE(why["mode=2"].find("y64: 10 of 100003 outputs never written"), std::string::npos);
  EXPECT_NE(why["mode=3"].find("yi: wrote past the end"), std::string::npos);
  EXPECT_NE(why["mode=4"].find("y32: 1 of 100003 outputs are NaN"), std::string::npos);
}

// Constant memory (Kernel Tuner's cmem_args) and fixed fills on the device: the __constant__
// coefficients are filled in the candidate's module and the reference's, so a kernel that ignores
// them fails, and inputs read from a .npy file and set to a constant reach both.
TEST(CudaGpu, UserKernelConstantMemoryAndFixedFillsReachTheKernel) {
  ATTUNE_REQUIRE_GPU(cuda);
  auto j = tune_spec("tests/gpu/cmem/weigh.yaml", "cmem");
  ASSERT_TRUE(j.is_object());
  const auto& v = j["problems"][0]["verdicts"];
  std::cout << "verdicts: " << v.dump() << "\n";
  EXPECT_EQ(v["ok"], 2);            // mode 0 at both block sizes
  EXPECT_EQ(v["wrong_output"], 2);  // mode 1: coef ignored
  for (const auto& r : j["problems"][0]["rejected"])
    std::cout << "  " << r["config"].get<std::string>() << ": " << r["message"].get<std::string>()
              << "\n";
}

// Faults on a real GPU through the CLI, as a user meets them: an out-of-bounds write is crashed
// and the run goes on in a fresh worker; a kernel that never ends is killed as timeout; too much
// shared memory is a launch verdict decided before launch. The other configs pass.
TEST(CudaGpu, UserKernelFaultsAreVerdictsAndTheRunCompletes) {
  ATTUNE_REQUIRE_GPU(cuda);
  auto j = tune_spec("tests/gpu/faults/faults.yaml", "faults");
  ASSERT_TRUE(j.is_object());
  const auto& v = j["problems"][0]["verdicts"];
  std::cout << "verdicts: " << v.dump() << "\n";
  EXPECT_EQ(v["ok"], 2);             // mode 0 at both block sizes
  EXPECT_EQ(v["crashed"], 2);        // mode 1
  EXPECT_EQ(v["timeout"], 2);        // mode 2
  EXPECT_EQ(v["launch_failed"], 2);  // mode 3
  for (const auto& r : j["problems"][0]["rejected"]) {
    std::cout << "  " << r["config"].get<std::string>() << ": " << r["verdict"].get<std::string>()
              << ": " << r["message"].get<std::string>() << "\n";
    if (r["verdict"] == "crashed") {
      EXPECT_NE(r["message"].get<std::string>().find("CUDA_ERROR_ILLEGAL_ADDRESS"),
                std::string::npos);
    }
    if (r["verdict"] == "launch_failed") {
      EXPECT_NE(r["message"].get<std::string>().find("shared memory"), std::string::npos);
    }
  }
}

}  // namespace
}  // namespace attune
