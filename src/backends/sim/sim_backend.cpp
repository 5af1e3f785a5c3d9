#include "backends/sim/sim_backend.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <numeric>
#include <random>
#include <thread>

#include <fmt/format.h>

#include "core/hash.h"
#include "core/layer_problem.h"
#include "core/op.h"
#include "measure/stats.h"
#include "verify/compare.h"

namespace attune {

namespace kernels {
// attention_decode's kernel=mma sizing, declared in kernels/plan.h and defined beside the op's
// space (core only, linked here with the op): the sim times the plan's stages and shared memory.
unsigned attention_decode_mma_stages(std::int64_t head, std::int64_t kv_tile);
std::int64_t attention_decode_mma_block_rows(std::int64_t q_rows);
std::size_t attention_decode_mma_shared_bytes(std::int64_t head, std::int64_t kv_tile,
                                              std::int64_t warps, std::int64_t block_rows);
}  // namespace kernels

namespace {

// The simulated device.
constexpr int kSms = 132;
constexpr double kSmemLimit = 227.0 * 1024;        // bytes per block
constexpr double kPeakFlopsPerSm = 7.5e14 / kSms;  // bf16 tensor-core rate, per SM
constexpr double kL2BytesPerUs = 1.2e7;            // operand loads mostly hit L2
constexpr double kDramBytesPerUs = 4.8e6;          // 4.8 TB/s
constexpr std::uint64_t kMemoryBytes = 80ull << 30;

enum class Fault { kNone, kBuild, kLaunch, kAbort, kSegv, kHang, kOom, kUnwritten, kNaN };

struct Planted {
  Fault fault = Fault::kNone;
  std::string message;
};

}  // namespace

struct SimProblem {
  std::string name;
  std::string description;
  // Defaults; a spec may override them. A built-in op's are its signature's sizes (plus the
  // sim's `landscape`).
  std::map<std::string, std::string> attrs;
  // The space of a resolved problem of it (attention_decode's constraints read its sizes).
  std::function<Result<Space>(const Problem&)> make_space;
  // Noise-free rank-regime time in microseconds.
  std::function<double(const Problem&, const Config&)> time_us;
  // Multiplier for a cold L2 (deploy regime).
  std::function<double(const Config&)> cold;
  std::function<std::optional<std::string>(const Config&)> refuse = [](const Config&) {
    return std::optional<std::string>{};
  };
  std::function<Planted(const Config&)> plant = [](const Config&) { return Planted{}; };
  // The real computation's chunk length (summation order), from the config.
  std::function<int(const Config&)> chunk;
  // A chain's steps (the assembled layer): their noise-free deploy times; unset for one kernel.
  std::function<std::vector<double>(const Problem&)> parts;
};

namespace {

std::int64_t knob(const Config& c, const char* name) {
  return c.get(name)->as_int();
}

// Deterministic ruggedness: a per-config factor exp(sigma * z) with z ~ N(0,1) from the config.
double rugged(const Problem& p, const Config& c, double sigma) {
  std::mt19937_64 g(mix64(fnv1a64(p.text() + "|" + c.text())));
  std::normal_distribution<double> n(0.0, 1.0);
  return std::exp(sigma * n(g));
}

Knob k(std::string name, std::vector<Value> opts, std::size_t base = 0) {
  return Knob{std::move(name), std::move(opts), base, KnobKind::kInPlace};
}

// A built-in op's default sizes, in its signature's order, as problem attributes.
std::map<std::string, std::string> sizes_of(const OpSignature& op,
                                            const std::vector<std::string>& values,
                                            const std::string& landscape) {
  std::map<std::string, std::string> attrs = {{"landscape", landscape}};
  for (std::size_t i = 0; i < op.sizes.size() && i < values.size(); ++i)
    attrs[op.sizes[i]] = values[i];
  return attrs;
}

// The i-th of the signature's sizes (resolve() checked them all).
double size(const Problem& prob, const OpSignature& op, std::size_t i) {
  return static_cast<double>(*prob.int_attr(op.sizes.at(i)));
}

// A tiled GEMM of M x N x K on the simulated device, before launch and ruggedness: its tiles in
// waves of the SMs' resident blocks, each tile's compute or loads (whichever is longer), and a
// K split's reduction pass.
double tiled_gemm_us(double M, double N, double K, double bm, double bn, double bk, double warps,
                     double stages, double split) {
  const double tiles = std::ceil(M / bm) * std::ceil(N / bn) * split;
  const double smem = (bm + bn) * bk * 2 * stages;
  const double occ =
      std::max(1.0, std::min({std::floor(kSmemLimit / smem), std::floor(16 / warps), 8.0}));
  const double waves = std::ceil(tiles / (kSms * occ));  // wave quantization: plateaus
  const double kk = K / split;
  // A tile's compute at a rate that needs enough warps and a wide enough tile to feed the
  // tensor cores; its loads at the SM's share of DRAM bandwidth, discounted by reuse.
  const double util = std::min(1.0, warps / 4.0) * std::min(1.0, std::min(bm, bn) / 64.0 + 0.25);
  const double compute = 2 * bm * bn * kk / (kPeakFlopsPerSm * 1e-6 * util);
  const double load = (bm + bn) * kk * 2 / (kL2BytesPerUs / kSms) / std::sqrt(occ);
  const double hide = 1.0 + 0.8 / std::pow(stages, 1.5);  // pipelining hides load latency
  double tile = std::max(compute, load * hide / (bk >= 32 ? 1.0 : 0.7));
  const double regs = bm * bn / (warps * 32) + 40;
  if (regs > 255) tile *= 3.0;  // register spill: a cliff
  double t = waves * tile * occ;
  if (split > 1) t += M * N * 4 * split / kDramBytesPerUs + 2.0;  // reduction pass
  return t;
}

std::unique_ptr<SimProblem> make_gemm(const OpSignature& op) {
  auto p = std::make_unique<SimProblem>();
  p->name = op.name;
  p->description = "bf16 GEMM on the simulated device: tiles, warps, stages, split-K, swizzle";
  p->attrs = sizes_of(op, {"64", "4096", "4096"}, "1");
  p->make_space = [](const Problem&) {
    return Space::make(
        {k("block_m", {16, 32, 64, 128, 256}, 3), k("block_n", {32, 64, 128, 256}, 2),
         k("block_k", {16, 32, 64}, 1), k("warps", {2, 4, 8}, 1), k("stages", {1, 2, 3, 4}, 1),
         k("split_k", {1, 2, 4, 8}), k("swizzle", {0, 1})},
        {{"shared memory (block_m + block_n) * block_k * 2 * stages <= 227 KiB",
          {"block_m", "block_n", "block_k", "stages"},
          [](const Assignment& a) {
            return (a.i("block_m") + a.i("block_n")) * a.i("block_k") * 2 * a.i("stages") <=
                   kSmemLimit;
          }},
         {"at least 16 accumulator rows per warp: block_m * block_n >= warps * 512",
          {"block_m", "block_n", "warps"},
          [](const Assignment& a) {
            return a.i("block_m") * a.i("block_n") >= a.i("warps") * 512;
          }}});
  };
  p->time_us = [&op](const Problem& prob, const Config& c) {
    const double M = size(prob, op, 0), N = size(prob, op, 1), K = size(prob, op, 2);
    const double bm = knob(c, "block_m"), bn = knob(c, "block_n"), split = knob(c, "split_k");
    const double tiles = std::ceil(M / bm) * std::ceil(N / bn) * split;
    double t = tiled_gemm_us(M, N, K, bm, bn, knob(c, "block_k"), knob(c, "warps"),
                             knob(c, "stages"), split);
    if (knob(c, "swizzle")) t *= tiles > kSms ? 0.93 : 1.02;
    // gemm's epilogue flags: a folded RMSNorm sums the A tiles' squares beside the MMAs (a few
    // percent), a residual reads a matrix of C's shape.
    if (prob.flag("rms_norm")) t *= 1.04;
    if (prob.flag("residual")) t += M * N * 2 / kDramBytesPerUs;
    return 3.0 + t * rugged(prob, c, 0.04);
  };
  p->cold = [](const Config& c) { return knob(c, "swizzle") ? 1.04 : 1.09; };
  p->chunk = [](const Config& c) { return static_cast<int>(knob(c, "block_k")); };
  return p;
}

std::unique_ptr<SimProblem> make_rmsnorm(const OpSignature& op) {
  auto p = std::make_unique<SimProblem>();
  p->name = op.name;
  p->description =
      "bf16 RMSNorm on the simulated device: threads per row, rows per block, vector width, unroll";
  p->attrs = sizes_of(op, {"4096", "4096"}, "2");
  p->make_space = [](const Problem&) {
    return Space::make(
        {k("threads", {32, 64, 128, 256, 512, 1024}, 3), k("rows_per_block", {1, 2, 4, 8}),
         k("vec", {1, 2, 4, 8}), k("unroll", {1, 2, 4})},
        {{"threads * rows_per_block <= 1024",
          {"threads", "rows_per_block"},
          [](const Assignment& a) { return a.i("threads") * a.i("rows_per_block") <= 1024; }}});
  };
  p->time_us = [&op](const Problem& prob, const Config& c) {
    const double R = size(prob, op, 0), H = size(prob, op, 1);
    const double t = knob(c, "threads"), r = knob(c, "rows_per_block");
    const double v = knob(c, "vec"), u = knob(c, "unroll");
    const double bytes = R * H * 2 * 2;
    const double per_thread = H / (t * v);
    // Memory-level parallelism: bytes in flight per SM saturate bandwidth.
    const double blocks = std::ceil(R / r);
    const double resident = std::min(blocks / kSms, std::floor(2048 / (t * r)));
    const double inflight = resident * t * r * v * 2 * std::min(u, std::max(1.0, per_thread));
    const double eff = std::min(0.93, inflight / 32768.0);
    double time = bytes / (kDramBytesPerUs * std::max(0.05, eff));
    if (per_thread < 1) time *= 1.0 / per_thread;  // idle lanes
    time += std::ceil(per_thread / u) * 0.01 * std::ceil(blocks / (kSms * std::max(1.0, resident)));
    if (t * v > H) time *= 1.5;
    return 2.0 + time * rugged(prob, c, 0.03);
  };
  p->cold = [](const Config&) { return 1.02; };
  p->chunk = [](const Config& c) { return static_cast<int>(knob(c, "vec") * knob(c, "unroll")); };
  return p;
}

// Decode attention as attention_decode's family runs it: the op's one space (the split baseline,
// split-KV flash decoding with its splits, KV tile, warps, vector width and query rows per block,
// or its tensor-core form with splits, KV tile, warps and how the splits merge), timed as
// a bandwidth-bound kernel. Time = launches + bytes of K and V (re-read per row group, partly from
// L2) / (DRAM bandwidth x an efficiency set by the bytes in flight: blocks vs SMs, warps, keys per
// lane, load width), with a compute floor, a tail wave and the combine of the splits; the baseline
// also writes and reads its scores and probabilities. Small batches want many splits, large ones
// few: the optimum moves with batch and kv, so a sweep over them has real buckets and exceptions.

std::unique_ptr<SimProblem> make_attention_decode(const OpSignature& op) {
  auto p = std::make_unique<SimProblem>();
  p->name = op.name;
  p->description =
      "decode attention on the simulated device: split baseline, flash or mma (splits, KV tile, "
      "warps, "
      "vector width, query rows per block)";
  p->attrs = sizes_of(op, {"8", "4096", "128", "32", "8", "1"}, "4");
  // Sizes by name (resolve() checked them all).
  auto sz = [](const Problem& prob, const char* name) {
    return static_cast<std::int64_t>(*prob.int_attr(name));
  };
  auto lanes_per_key = [](std::int64_t head, std::int64_t vec) {
    return std::min<std::int64_t>(32, head / vec);
  };
  p->make_space = [space = op.space](const Problem& prob) { return space(prob); };
  p->time_us = [sz, lanes_per_key](const Problem& prob, const Config& c) {
    const double batch = sz(prob, "batch"), kv = sz(prob, "kv"), head = sz(prob, "head"),
                 kv_heads = sz(prob, "kv_heads"), q_len = sz(prob, "q_len");
    const double group_rows = sz(prob, "q_heads") / kv_heads * q_len;
    const double rows = batch * kv_heads * group_rows;
    const double kv_bytes = 2 * batch * kv_heads * kv * head * 2;
    const double qo_bytes = 2 * rows * head * 2;
    constexpr double kLaunchUs = 2.0;
    if (c.get("kernel")->as_word() == "split") {
      // Three launches; scores written and read in fp32, probabilities in 16 bits; cuBLASLt's
      // batched GEMMs of a few rows reach about half the bandwidth.
      const double sp = rows * kv * (4 + 2) * 2;
      return (3 * kLaunchUs + (kv_bytes / 0.5 + sp / 0.7 + qo_bytes) / kDramBytesPerUs) *
             rugged(prob, c, 0.02);
    }
    const double splits = knob(c, "splits"), tile = knob(c, "kv_tile"), warps = knob(c, "warps");
    if (c.get("kernel")->as_word() == "mma") {
      // Tensor cores do the math (no compute floor worth modelling); each warp keeps STAGES - 1
      // tiles in flight; shared memory and registers bound the blocks per SM.
      // q_rows=32: two m16 row tiles per block on each K/V tile loaded.
      // Stages and shared memory as the plan sizes them (the op's functions).
      const auto h = static_cast<std::int64_t>(head), kt = static_cast<std::int64_t>(tile);
      const std::int64_t block_rows =
          kernels::attention_decode_mma_block_rows(static_cast<std::int64_t>(knob(c, "q_rows")));
      const double row_tiles = static_cast<double>(block_rows / 16);
      const double groups = std::ceil(group_rows / static_cast<double>(block_rows));
      const double blocks = batch * kv_heads * groups * splits;
      const double smem = static_cast<double>(kernels::attention_decode_mma_shared_bytes(
          h, kt, static_cast<std::int64_t>(warps), block_rows));
      const double regs = row_tiles * (head / 2 + tile / 2) + 48;
      const double resident =
          std::max(1.0, std::min({std::floor(64 / warps), std::floor(228.0 * 1024 / smem),
                                  std::floor(65536 / (32 * warps * regs))}));
      const double sms = std::min<double>(kSms, blocks);
      const double per_block =
          warps * (kernels::attention_decode_mma_stages(h, kt) - 1.0) * tile * head * 4;
      const double inflight =
          std::min(std::min(resident, std::ceil(blocks / sms)) * per_block, 160.0 * 1024);
      double eff = 0.97 * std::min(1.0, sms * inflight / (kSms * 32.0 * 1024));
      const double keys_per_split = std::ceil(kv / splits);
      if (keys_per_split < tile * warps) eff *= std::max(0.25, keys_per_split / (tile * warps));
      const double waves = std::ceil(blocks / (kSms * resident));
      const double tail = waves * kSms * resident / std::max(blocks, kSms * resident * 1.0);
      const double bytes = kv_bytes * (1 + 0.5 * (groups - 1)) + qo_bytes;
      double t = bytes / (kDramBytesPerUs * std::max(0.02, eff)) * std::max(1.0, tail);
      t += kLaunchUs;
      // The splits merged by a second launch through the workspace, or by the cluster in the same
      // launch (distributed shared memory: a few hundred nanoseconds).
      if (splits > 1)
        t += c.get("combine")->as_word() == "cluster"
                 ? 0.3
                 : kLaunchUs * 0.6 + splits * rows * (head + 2) * 4 * 2 / kDramBytesPerUs;
      return t * rugged(prob, c, 0.02);
    }
    const double vec = knob(c, "vec"), q_rows = knob(c, "q_rows");
    const double lanes = static_cast<double>(
        lanes_per_key(static_cast<std::int64_t>(head), static_cast<std::int64_t>(vec)));
    const double elems = head / lanes, keys_per_lane = tile / (warps * (32 / lanes));
    const double groups = std::ceil(group_rows / q_rows);
    const double blocks = batch * kv_heads * groups * splits;
    // Registers bound the blocks resident per SM; the bytes in flight per SM bound bandwidth.
    const double regs = 2 * q_rows * elems + keys_per_lane * elems + q_rows * keys_per_lane + 40;
    const double resident =
        std::max(1.0, std::min(std::floor(64 / warps), std::floor(65536 / (32 * warps * regs))));
    const double sms = std::min<double>(kSms, blocks);
    const double per_block = warps * 32 * keys_per_lane * elems * 4;
    const double inflight =
        std::min(64.0 * 1024, std::min(resident, std::ceil(blocks / sms)) * per_block);
    double eff = 0.92 * std::min(1.0, sms * inflight / (kSms * 40.0 * 1024));
    if (vec == 4) eff *= 0.85;  // twice the load instructions
    const double keys_per_split = std::ceil(kv / splits);
    if (keys_per_split < tile) eff *= keys_per_split / tile;  // a tile mostly masked
    const double waves = std::ceil(blocks / (kSms * resident));
    const double tail = waves * kSms * resident / std::max(blocks, kSms * resident * 1.0);
    // Row groups past the first re-read K and V, half of it from L2.
    const double bytes = kv_bytes * (1 + 0.5 * (groups - 1)) + qo_bytes;
    double t = bytes / (kDramBytesPerUs * std::max(0.02, eff)) * std::max(1.0, tail);
    // Compute floor: per key and lane, two FMAs per row per element, shuffles and exp per row.
    const double instr = batch * kv_heads * groups * kv * lanes * (q_rows * (2 * elems + 12));
    t = std::max(t, instr / (kSms * 128 * 1980.0));
    t += kLaunchUs;
    if (splits > 1) t += kLaunchUs * 0.6 + splits * rows * (head + 2) * 4 * 2 / kDramBytesPerUs;
    return t * rugged(prob, c, 0.02);
  };
  p->cold = [](const Config& c) { return c.get("kernel")->as_word() == "split" ? 1.05 : 1.03; };
  p->chunk = [](const Config& c) { return static_cast<int>(knob(c, "kv_tile")); };
  return p;
}

// Causal prefill attention as attention_prefill's family runs it: the op's own space (the split
// baseline, or the wgmma flash kernel with its keys per tile, consumer warpgroups, stages and
// blocks per SM),
// timed as tensor-core work. The flash kernel does half the square's FLOPs at a rate set by its
// config (two consumer warpgroups hide each other's softmax, and overlap hides it behind the
// previous tile's P V; short tiles pay the softmax's fixed cost per key more often; a deeper ring
// helps until shared memory is short), over waves of one
// block per SM whose last is ragged (causal rows: the heaviest blocks first). So long prompts want
// two consumers and 128-key tiles, short ones with few heads more, smaller blocks: the optimum
// moves with seq. The baseline does the whole square twice by GEMMs and writes and reads its
// scores and weights.
std::unique_ptr<SimProblem> make_attention_prefill(const OpSignature& op) {
  auto p = std::make_unique<SimProblem>();
  p->name = op.name;
  p->description =
      "causal prefill attention on the simulated device: split baseline or wgmma flash (keys per "
      "tile, consumer warpgroups, stages)";
  p->attrs = sizes_of(op, {"4096", "1", "128", "32", "8"}, "5");
  p->make_space = [space = op.space](const Problem& prob) { return space(prob); };
  p->time_us = [](const Problem& prob, const Config& c) {
    auto sz = [&prob](const char* name) { return static_cast<double>(*prob.int_attr(name)); };
    const double seq = sz("seq"), batch = sz("batch"), head = sz("head"), q_heads = sz("q_heads");
    const double square = 4 * batch * q_heads * seq * seq * head;  // QK^T and PV, every key
    constexpr double kLaunchUs = 2.0;
    if (c.get("kernel")->as_word() == "split") {
      const double bytes = batch * q_heads * seq * seq * (4 + 4 + 2 + 2);
      return (3 * kLaunchUs + square / (kSms * kPeakFlopsPerSm * 0.6) * 1e6 +
              bytes / kDramBytesPerUs) *
             rugged(prob, c, 0.02);
    }
    const double block_n = knob(c, "block_n"), consumers = knob(c, "consumers"),
                 stages = knob(c, "stages");
    double eff = consumers == 2 ? 0.56 : 0.41;
    if (block_n == 64) eff *= 0.86;
    eff *= stages == 2 ? 1.0 : (head == 128 ? 0.985 : 1.01);
    // The softmax behind the previous tile's P V: worth more with one consumer, whose softmax no
    // second warpgroup hides.
    if (knob(c, "overlap") == 1) eff *= consumers == 2 ? 1.08 : 1.15;
    const double rows = 64 * consumers;
    const double blocks = batch * q_heads * std::ceil(seq / rows);
    // Two blocks of one consumer side by side: one loads its Q and first tiles while the other
    // computes, worth it only past one wave of blocks (else the registers' cap costs a little).
    if (knob(c, "blocks_per_sm") == 2) eff *= blocks > kSms ? 1.06 : 0.97;
    // The mean block does half its row block's square; the last wave is as long as the heaviest.
    const double per_block = 4 * rows * (seq / 2 + rows / 2) * head / (kPeakFlopsPerSm * eff) * 1e6;
    const double waves = blocks / kSms;
    const double t = per_block * std::max(1.0, waves) + per_block * (seq / rows > 1 ? 0.5 : 0.0);
    return (kLaunchUs + t) * rugged(prob, c, 0.02);
  };
  p->cold = [](const Config& c) { return c.get("kernel")->as_word() == "split" ? 1.05 : 1.01; };
  p->chunk = [](const Config& c) { return static_cast<int>(knob(c, "block_n")); };
  return p;
}

// RoPE as rope's family runs it: the op's one space (the chain baseline, or the fused kernel with
// its pairs per lane, head groups, head blocks and tokens per block), timed as a memory-bound
// kernel whose efficiency is set by the bytes in flight across the device. The fused kernel reads
// qkv once and writes q and the caches once; each thread walks its heads in turn (about 50 ns a
// head once pipelined), and every head group of every block computes the token's angles (sincos,
// half hidden under the loads). The chain launches two or three kernels of one 2-byte element per
// thread, each with a latency floor, re-reads and rewrites the normalized heads, and computes a
// sincos per element. A prefill wants few head blocks (the angles computed once), a decode step
// of a few tokens many (the SMs filled): the optimum moves with the token count.
std::unique_ptr<SimProblem> make_rope(const OpSignature& op) {
  auto p = std::make_unique<SimProblem>();
  p->name = op.name;
  p->description =
      "RoPE with the q/k norm on the simulated device: chain baseline or fused (pairs per lane, "
      "head groups, head blocks, tokens per block)";
  p->attrs = sizes_of(op, {"8", "512", "512", "16", "8", "128", "1000000"}, "6");
  p->make_space = [space = op.space](const Problem& prob) { return space(prob); };
  p->time_us = [](const Problem& prob, const Config& c) {
    auto sz = [&prob](const char* name) { return static_cast<double>(*prob.int_attr(name)); };
    const double tokens = sz("batch") * sz("seq"), head = sz("head");
    const double qk = sz("q_heads") + sz("kv_heads"), heads = qk + sz("kv_heads");
    const bool norm = prob.flag("qk_norm");
    constexpr double kLaunchUs = 2.0, kSincosInstr = 40, kLanesPerUs = kSms * 128 * 1980.0,
                     kInflightPerSm = 24576, kThreadsPerSm = 2048;
    // A kernel of one thread per element, 4 bytes in flight each, and a latency floor.
    auto simple = [&](double bytes, double threads) {
      const double inflight = std::min(threads, kSms * kThreadsPerSm) * 4;
      const double eff = std::min(0.55, inflight / (kSms * kInflightPerSm));
      return bytes / (kDramBytesPerUs * std::max(eff, 0.005)) + 0.6;
    };
    if (c.get("kernel")->as_word() == "chain") {
      const double qk_elems = tokens * qk * head;
      double t = (norm ? 3 : 2) * kLaunchUs;
      if (norm) t += simple(2 * qk_elems * 2, qk_elems);
      t += simple(2 * qk_elems * 2, qk_elems) +
           qk_elems * kSincosInstr / kLanesPerUs / std::min(1.0, qk_elems / (kSms * kThreadsPerSm));
      t += simple(2 * tokens * sz("kv_heads") * head * 2, tokens * sz("kv_heads") * head);
      return t * rugged(prob, c, 0.02);
    }
    const double vec = knob(c, "vec"), groups = knob(c, "head_groups"),
                 head_blocks = knob(c, "head_blocks"), tpb = knob(c, "tokens");
    const double bytes = 2 * tokens * heads * head * 2;  // qkv read once, outputs written once
    const double threads = head / 2 / vec * groups;
    const double blocks = std::ceil(tokens / tpb) * head_blocks;
    const double resident = std::min(std::floor(kThreadsPerSm / threads), 32.0);
    const double active = std::min(blocks, kSms * resident);
    double eff = 0.92 * std::min(1.0, active * threads * vec * 4 / (kSms * kInflightPerSm));
    if (vec == 1) eff *= 0.8;  // 2-byte accesses: four times the load instructions of vec 4
    const double waves = std::ceil(blocks / (kSms * resident));
    const double tail = waves * kSms * resident / std::max(blocks, kSms * resident);
    const double bandwidth = bytes / (kDramBytesPerUs * std::max(0.005, eff)) * std::max(1.0, tail);
    const double walk = waves * tpb * std::ceil(heads / (groups * head_blocks)) * 0.05 + 0.6;
    const double busy = std::min(1.0, active * threads / (kSms * kThreadsPerSm));
    const double sincos =
        0.5 * tokens * groups * head_blocks * head / 2 * kSincosInstr / (kLanesPerUs * busy);
    double t = std::max(bandwidth, walk) + sincos;
    if (norm) t *= 1.03;  // the shuffles of the norm
    return (kLaunchUs + t) * rugged(prob, c, 0.02);
  };
  p->cold = [](const Config& c) { return c.get("kernel")->as_word() == "chain" ? 1.04 : 1.02; };
  p->chunk = [](const Config& c) { return static_cast<int>(knob(c, "vec")); };
  return p;
}

// SiLU * mul as silu_mul's family runs it: the op's one space (the naive baseline, or the vector
// kernel with its width, threads, unroll and rows per block), timed as a bandwidth-bound kernel
// that reads two halves and writes one: the efficiency set by the bytes in flight per SM, idle
// lanes when a block is wider than a row, and a tail wave. Few rows want narrow blocks and deep
// unrolling, many rows wide accesses and several rows per block.
std::unique_ptr<SimProblem> make_silu_mul(const OpSignature& op) {
  auto p = std::make_unique<SimProblem>();
  p->name = op.name;
  p->description =
      "SiLU * mul on the simulated device: naive baseline or vector kernel (width, threads, "
      "unroll, "
      "rows per block)";
  p->attrs = sizes_of(op, {"4096", "3072"}, "7");
  p->make_space = [space = op.space](const Problem& prob) { return space(prob); };
  p->time_us = [&op](const Problem& prob, const Config& c) {
    const double rows = size(prob, op, 0), inter = size(prob, op, 1);
    const double bytes = rows * inter * 2 * 3;
    constexpr double kLaunchUs = 2.0;
    if (c.get("kernel")->as_word() == "naive")
      return (kLaunchUs + bytes / (kDramBytesPerUs * 0.55)) * rugged(prob, c, 0.02);
    const double vec = knob(c, "vec"), threads = knob(c, "threads"), unroll = knob(c, "unroll"),
                 rpb = knob(c, "rows_per_block");
    const double span = threads * vec * unroll;
    const double blocks = std::ceil(rows / rpb) * std::ceil(inter / span);
    const double resident = std::min(std::floor(2048 / threads), 32.0);
    const double per_sm = std::min(resident, std::ceil(blocks / kSms));
    const double inflight = per_sm * threads * vec * 2 * 2 * unroll;
    double eff = 0.93 * std::min(1.0, inflight / 32768.0);
    if (vec == 1) eff *= 0.75;
    if (span > inter) eff *= inter / span;  // lanes past the row's end
    const double waves = std::ceil(blocks / (kSms * resident));
    const double tail = waves * kSms * resident / std::max(blocks, kSms * resident);
    double t = bytes / (kDramBytesPerUs * std::max(0.02, eff)) * std::max(1.0, tail);
    t *= 1.0 + 0.02 * (rpb - 1);  // rows walked in turn per block
    return (kLaunchUs + t) * rugged(prob, c, 0.02);
  };
  p->cold = [](const Config&) { return 1.03; };
  p->chunk = [](const Config& c) { return static_cast<int>(knob(c, "vec") * knob(c, "unroll")); };
  return p;
}

// The QKV projection with RoPE in its epilogue as gemm_rope's family runs it: the op's one space
// (the split baseline, or the tiled or wgmma kernel with their tiles, warps, stages and group).
// The split form is a library GEMM (near the bandwidth and tensor-core rates) writing qkv, then a
// RoPE kernel reading it back, each a launch; the fused forms are the sim's tiled GEMM with no K
// split, its epilogue's sincos and stores on top, in one launch. Few tokens favour the split
// form's GEMM, many the fusion's saved round trip.
std::unique_ptr<SimProblem> make_gemm_rope(const OpSignature& op) {
  auto p = std::make_unique<SimProblem>();
  p->name = op.name;
  p->description =
      "QKV GEMM with RoPE in its epilogue on the simulated device: split baseline, tiled (block "
      "tile, warps, stages, group) or wgmma (block tile, stages)";
  p->attrs = sizes_of(op, {"8", "512", "512", "16", "8", "128", "1000000", "1024"}, "8");
  p->make_space = [space = op.space](const Problem& prob) { return space(prob); };
  p->time_us = [](const Problem& prob, const Config& c) {
    auto sz = [&prob](const char* name) { return static_cast<double>(*prob.int_attr(name)); };
    const double m = sz("batch") * sz("seq"), k = sz("hidden");
    const double n = (sz("q_heads") + 2 * sz("kv_heads")) * sz("head");
    const double weights = (m * k + n * k) * 2, qkv = m * n * 2;
    constexpr double kLaunchUs = 2.0;
    if (c.get("kernel")->as_word() == "split") {
      const double gemm = std::max((weights + qkv) / (kDramBytesPerUs * 0.8),
                                   2 * m * n * k / (kSms * kPeakFlopsPerSm * 1e-6 * 0.7));
      const double rope = 2 * qkv / (kDramBytesPerUs * 0.6);
      // rms_norm: an RMSNorm kernel first, reading x and writing it scaled.
      const double norm =
          prob.flag("rms_norm") ? kLaunchUs + 2 * m * k * 2 / (kDramBytesPerUs * 0.6) : 0.0;
      return (2 * kLaunchUs + norm + gemm + rope) * rugged(prob, c, 0.03);
    }
    // rms_norm folded in: the squares summed beside the MMAs (a few percent, as gemm's).
    const double fold = prob.flag("rms_norm") ? 1.04 : 1.0;
    const double epilogue = qkv / (kDramBytesPerUs * 0.7) + 0.3;
    if (c.get("kernel")->as_word() == "wgmma") {
      // The TMA-fed warpgroup MMA: a consumer warpgroup per 64 rows, 64-wide K tiles, its loads
      // a fifth cheaper than the cp.async pipeline's.
      const double bm = knob(c, "wg_bm");
      const double t =
          tiled_gemm_us(m, n, k, bm, knob(c, "wg_bn"), 64, 4 * bm / 64, knob(c, "wg_stages"), 1);
      return (kLaunchUs + 0.8 * t * fold + epilogue) * rugged(prob, c, 0.04);
    }
    const double t = tiled_gemm_us(m, n, k, knob(c, "tl_bm"), knob(c, "tl_bn"), knob(c, "tl_bk"),
                                   knob(c, "tl_wm") * knob(c, "tl_wn"), knob(c, "tl_stages"), 1);
    const double group = knob(c, "tl_group") == 1 ? 1.03 : 1.0;  // B tiles re-read from DRAM
    return (kLaunchUs + t * group + epilogue) * rugged(prob, c, 0.04);
  };
  p->cold = [](const Config& c) { return c.get("kernel")->as_word() == "split" ? 1.05 : 1.06; };
  p->chunk = [](const Config& c) {
    const std::string kernel = c.get("kernel")->as_word();
    return kernel == "split" ? 32 : kernel == "wgmma" ? 64 : static_cast<int>(knob(c, "tl_bk"));
  };
  return p;
}

std::unique_ptr<SimProblem> make_faults() {
  auto p = std::make_unique<SimProblem>();
  p->name = "faults";
  p->description = "a small space with every failure class planted at known knob values";
  p->attrs = {{"n", "65536"}, {"landscape", "3"}};
  p->make_space = [](const Problem&) {
    return Space::make({k("block", {64, 128, 256}, 1), k("vec", {1, 2, 4}), k("unroll", {1, 2, 4}),
                        k("stages", {1, 2})});
  };
  p->time_us = [](const Problem& prob, const Config& c) {
    const double b = knob(c, "block"), v = knob(c, "vec"), u = knob(c, "unroll");
    const double s = knob(c, "stages");
    return (20.0 + 400.0 / (b * v / 64.0) / std::min(u, 2.0) + 3.0 * s) * rugged(prob, c, 0.05);
  };
  p->cold = [](const Config&) { return 1.05; };
  p->chunk = [](const Config& c) { return static_cast<int>(knob(c, "vec") * knob(c, "unroll")); };
  p->refuse = [](const Config& c) -> std::optional<std::string> {
    if (knob(c, "block") == 256 && knob(c, "vec") == 4)
      return "256 threads x 4 lanes = 1024 elements per step exceeds the 512-element tile";
    return std::nullopt;
  };
  p->plant = [](const Config& c) -> Planted {
    const auto b = knob(c, "block"), v = knob(c, "vec"), u = knob(c, "unroll"),
               s = knob(c, "stages");
    if (u == 4 && v == 4)
      return {Fault::kBuild,
              "sim-nvrtc: kernel.cu(41): error: unrolled body needs 312 registers, "
              "more than the 255 a thread can hold"};
    if (b == 256 && s == 2)
      return {Fault::kLaunch,
              "too many resources requested for launch: 2 stages x 256 threads "
              "need 240 KiB of shared memory, the block limit is 227 KiB"};
    if (b == 128 && u == 2 && s == 2) return {Fault::kOom, "workspace of 96 GiB requested"};
    if (b == 64 && v == 2 && u == 2) return {Fault::kSegv, ""};
    if (b == 128 && v == 1 && u == 4) return {Fault::kAbort, ""};
    if (b == 64 && v == 1 && u == 1 && s == 2) return {Fault::kHang, ""};
    if (b == 256 && v == 1 && u == 2) return {Fault::kUnwritten, ""};
    if (b == 128 && v == 4 && u == 1) return {Fault::kNaN, ""};
    return {};
  };
  return p;
}

// The simulated device's memory: a real budget that a request can exhaust.
bool sim_allocate(std::uint64_t bytes) {
  return bytes <= kMemoryBytes;
}

// The candidate's real computation: y = A x in float, summed in chunks of the config's length,
// on fresh random inputs, against a float64 reference. Faults corrupt it the way a broken
// kernel would: a tail never written, or NaN.
Outcome compute_and_check(int chunk, Fault fault) {
  constexpr int kRows = 61, kCols = 203;  // multiples of no tile
  std::random_device rd;
  std::mt19937 g(rd());
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> a(kRows * kCols), x(kCols), y(kRows);
  for (auto& v : a) v = u(g);
  for (auto& v : x) v = u(g);
  poison(y);
  int rows_written = fault == Fault::kUnwritten ? kRows - 5 : kRows;
  for (int i = 0; i < rows_written; ++i) {
    float acc = 0;
    for (int j0 = 0; j0 < kCols; j0 += chunk) {
      float part = 0;
      for (int j = j0; j < std::min(kCols, j0 + chunk); ++j) part += a[i * kCols + j] * x[j];
      acc += part;
    }
    y[i] = acc;
  }
  if (fault == Fault::kNaN) y[7] = y[kRows - 1] = std::nanf("");
  std::vector<double> ref(kRows);
  for (int i = 0; i < kRows; ++i) {
    double acc = 0;
    for (int j = 0; j < kCols; ++j) acc += static_cast<double>(a[i * kCols + j]) * x[j];
    ref[i] = acc;
  }
  Comparison cmp = compare(y, ref, tolerance_for("fp32", kCols));
  Outcome o;
  o.verdict = cmp.verdict;
  o.check = cmp.check;
  o.message = cmp.message;
  return o;
}

// The sim's models of built-in ops, by op name. A registered op with no model here must be in
// unsimulated_ops(): tests/kernels/ops_test.cpp holds every registered op to one or the other.
struct SimModel {
  std::string_view op;
  std::unique_ptr<SimProblem> (*make)(const OpSignature&);
};
constexpr SimModel kModels[] = {{"gemm", &make_gemm},
                                {"rmsnorm", &make_rmsnorm},
                                {"attention_decode", &make_attention_decode},
                                {"attention_prefill", &make_attention_prefill},
                                {"rope", &make_rope},
                                {"silu_mul", &make_silu_mul},
                                {"gemm_rope", &make_gemm_rope}};

}  // namespace

const std::vector<std::string>& SimBackend::unsimulated_ops() {
  static const std::vector<std::string> none;
  return none;
}

SimBackend::SimBackend() {
  for (const SimModel& model : kModels)
    if (const OpSignature* op = find_op(model.op)) problems_[op->name] = model.make(*op);
  problems_["faults"] = make_faults();
  layer_ = std::make_unique<SimProblem>();
  layer_->name = kLayerOp;
  layer_->description = "an assembled model layer (attune tune --model makes it)";
  layer_->make_space = [](const Problem&) { return layer_space(); };
  layer_->parts = [this](const Problem& prob) {
    // resolve() checked the steps: each parses and has a time.
    const auto steps = layer_steps(prob);
    std::vector<double> out;
    for (const LayerStep& step : *steps)
      out.push_back(*true_time_us(step.problem, step.config, Regime::kDeploy));
    return out;
  };
  layer_->time_us = [this](const Problem& prob, const Config&) {
    double sum = 0;
    for (double t : layer_->parts(prob)) sum += t;
    return sum;
  };
  layer_->cold = [](const Config&) { return 1.0; };
  layer_->chunk = [](const Config&) { return 1; };
}

SimBackend::~SimBackend() = default;

namespace {

// ATTUNE_SIM_DEVICES, default 1.
Result<int> sim_device_count() {
  const char* e = std::getenv("ATTUNE_SIM_DEVICES");
  if (!e || !*e) return 1;
  int n = 0;
  auto r = std::from_chars(e, e + std::strlen(e), n);
  if (r.ec != std::errc() || *r.ptr != '\0' || n < 1 || n > 1024)
    return Error::invalid_argument(std::string("ATTUNE_SIM_DEVICES='") + e +
                                   "' is not a device count (1..1024)");
  return n;
}

void trace_execution(int device, const Problem& problem, const Config& config, Regime regime) {
  const char* path = std::getenv("ATTUNE_SIM_TRACE");
  if (!path || !*path) return;
  const std::string line = fmt::format("device={} problem={} config={} regime={}\n", device,
                                       problem.text(), config.text(), to_string(regime));
  int fd = ::open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return;
  ssize_t n = ::write(fd, line.data(), line.size());
  (void)n;  // a trace for tests; a failed write shows there as a missing line
  ::close(fd);
}

// A device of a simulated box that misbehaves, for the multi-device tests:
// ATTUNE_SIM_SLOW_DEVICE="I:MS" makes every execution on device I take MS more milliseconds of
// wall time (its measured times are the landscape's: a slower device's kernels finish later, not
// differently); ATTUNE_SIM_CRASH_DEVICE="I:FILE" makes the first execution on device I, in any
// process, create FILE and abort its worker, as a GPU's passing fault does (a fresh worker then
// runs the candidate again).
void misbehave(int device) {
  if (const char* slow = std::getenv("ATTUNE_SIM_SLOW_DEVICE")) {
    int index = -1;
    long ms = 0;
    if (std::sscanf(slow, "%d:%ld", &index, &ms) == 2 && index == device && ms > 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  }
  if (const char* crash = std::getenv("ATTUNE_SIM_CRASH_DEVICE")) {
    const char* colon = std::strchr(crash, ':');
    if (!colon || std::atoi(crash) != device || colon[1] == '\0') return;
    // O_EXCL: exactly one execution, in whichever worker gets there first, dies.
    int fd = ::open(colon + 1, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) return;
    ::close(fd);
    std::fputs("sim: the device faulted\n", stderr);
    std::abort();
  }
}

}  // namespace

Result<std::vector<DeviceFingerprint>> SimBackend::devices() {
  ATTUNE_ASSIGN(int count, sim_device_count());
  ATTUNE_ASSIGN(DeviceFingerprint d, fingerprint());
  return std::vector<DeviceFingerprint>(static_cast<std::size_t>(count), d);
}

Status SimBackend::select_device(int index) {
  ATTUNE_ASSIGN(int count, sim_device_count());
  if (index < 0 || index >= count) return no_such_device(index, count);
  device_ = index;
  return Status::success();
}

Result<DeviceFingerprint> SimBackend::fingerprint() {
  DeviceFingerprint d;
  d.backend = "sim";
  d.name = "attune simulated GPU";
  d.arch = "sim_90";
  d.sm_count = kSms;
  d.memory_bytes = kMemoryBytes;
  d.l2_bytes = 50ull << 20;
  d.driver_version = "sim-1";
  d.runtime_version = "sim-1";
  d.max_sm_clock_mhz = 1980;
  return d;
}

std::vector<ProblemInfo> SimBackend::problems() const {
  std::vector<ProblemInfo> out;
  for (const auto& [name, p] : problems_) {
    Problem prob(name, p->attrs, name);
    out.push_back({prob, p->description});
  }
  return out;
}

Result<Problem> SimBackend::resolve(const std::string& spec) const {
  auto named = problems_.find(spec);
  if (named != problems_.end()) return Problem(spec, named->second->attrs, spec);
  ATTUNE_ASSIGN(Problem p, Problem::parse(spec));
  if (p.op() == kLayerOp) {
    // Each step must be a problem the sim resolves to itself, with a config of its space.
    ATTUNE_ASSIGN(std::vector<LayerStep> steps, layer_steps(p));
    for (const LayerStep& step : steps) {
      ATTUNE_ASSIGN(Problem resolved, resolve(step.problem.text()));
      if (resolved.text() != step.problem.text())
        return Error::invalid_argument("layer problem: step '" + step.problem.text() +
                                       "' is not a resolved problem");
      ATTUNE_ASSIGN(const SimProblem* sp, find(resolved));
      ATTUNE_ASSIGN(Space space, sp->make_space(resolved));
      ATTUNE_TRY(space.point(step.config));
      if (auto why = sp->refuse(step.config))
        return Error::invalid_argument("layer problem: step " + step.role + ": " + *why);
    }
    return p;
  }
  auto it = problems_.find(p.op());
  if (it == problems_.end()) {
    std::string known;
    for (const auto& [n, _] : problems_) known += (known.empty() ? "" : ", ") + n;
    const auto& unsimulated = unsimulated_ops();
    if (std::find(unsimulated.begin(), unsimulated.end(), p.op()) != unsimulated.end())
      return Error::invalid_argument("the sim backend does not simulate op '" + p.op() +
                                     "' (it has: " + known + ")");
    return Error::invalid_argument("the sim backend has no problem '" + p.op() +
                                   "' (it has: " + known + ")");
  }
  std::map<std::string, std::string> attrs = it->second->attrs;
  // A simulated built-in op takes its signature's dtype and flags too, as the CUDA backend's
  // problem of it does (`--op gemm --shape ... --dtype bf16` falls back to the sim unchanged).
  // The landscape is the same for every dtype and flag; a value other than the default is kept
  // in the problem, so it is its own unit of work, and a default one is dropped, so the problem
  // stays the one written without it.
  const OpSignature* op = find_op(p.op());
  std::map<std::string, std::string> extra;
  for (const auto& [key, value] : p.attrs()) {
    if (op && key == "dtype") {
      if (std::find(op->dtypes.begin(), op->dtypes.end(), value) == op->dtypes.end())
        return Error::invalid_argument("sim problem '" + p.op() + "': dtype '" + value +
                                       "' is not one of the op's");
      if (value != op->dtypes.front()) extra[key] = value;
      continue;
    }
    if (op && (std::find(op->flags.begin(), op->flags.end(), key) != op->flags.end() ||
               std::find(op->optional_flags.begin(), op->optional_flags.end(), key) !=
                   op->optional_flags.end())) {
      if (value != "0" && value != "1")
        return Error::invalid_argument("sim problem '" + p.op() + "': " + key + " is 0 or 1");
      if (value == "1") extra[key] = value;
      continue;
    }
    if (!attrs.count(key))
      return Error::invalid_argument("sim problem '" + p.op() + "' has no attribute '" + key + "'");
    attrs[key] = value;
  }
  const Problem sized(p.op(), attrs);
  for (const auto& [key, value] : attrs)
    if (key != "landscape") {
      auto v = sized.int_attr(key);
      if (!v) return v.error();
      if (*v <= 0)
        return Error::invalid_argument("sim problem '" + spec + "': " + key + " must be positive");
      // The op's size limit, as the CUDA family's problems of it have it.
      if (op && op->max_size > 0 && *v > op->max_size &&
          std::find(op->sizes.begin(), op->sizes.end(), key) != op->sizes.end())
        return Error::invalid_argument(
            fmt::format("sim problem '{}': {}={} is more than {}", spec, key, *v, op->max_size));
    }
  // The op's own rules among its sizes (attention_decode: q_heads a multiple of kv_heads, ...),
  // as the CUDA family's resolve() applies them.
  if (op && op->check) ATTUNE_TRY(op->check(sized));
  attrs.insert(extra.begin(), extra.end());
  return Problem(p.op(), attrs);
}

Result<const SimProblem*> SimBackend::find(const Problem& problem) const {
  if (problem.op() == kLayerOp) return layer_.get();
  auto it = problems_.find(problem.op());
  if (it == problems_.end())
    return Error::invalid_argument("the sim backend has no op '" + problem.op() + "'");
  return it->second.get();
}

Result<Space> SimBackend::space(const Problem& problem) const {
  ATTUNE_ASSIGN(const SimProblem* p, find(problem));
  return p->make_space(problem);
}

std::optional<std::string> SimBackend::can_implement(const Problem& problem,
                                                     const Config& config) const {
  auto p = find(problem);
  if (!p) return p.error().message();
  return (*p)->refuse(config);
}

Result<double> SimBackend::true_time_us(const Problem& problem, const Config& config,
                                        Regime regime) const {
  ATTUNE_ASSIGN(const SimProblem* p, find(problem));
  double t = p->time_us(problem, config);
  return regime == Regime::kDeploy ? t * p->cold(config) : t;
}

Result<std::pair<Config, double>> SimBackend::optimum(const Problem& problem) const {
  ATTUNE_ASSIGN(const SimProblem* p, find(problem));
  ATTUNE_ASSIGN(Space s, p->make_space(problem));
  std::optional<std::pair<Config, double>> best;
  for (auto e = s.enumerate(); auto pt = e.next();) {
    Config c = s.config(*pt);
    if (p->refuse(c) || p->plant(c).fault != Fault::kNone) continue;
    double t = p->time_us(problem, c);
    if (!best || t < best->second) best = std::make_pair(c, t);
  }
  if (!best) return Error::not_found("no legal config");
  return *best;
}

Outcome SimBackend::execute(const Problem& problem, const Config& config, Regime regime) {
  auto found = find(problem);
  if (!found) return Outcome::failed(Verdict::kLaunchFailed, found.error().message());
  const SimProblem& p = **found;
  trace_execution(device_, problem, config, regime);
  misbehave(device_);
  if (auto why = p.refuse(config)) return Outcome::failed(Verdict::kUnsupported, *why);
  const Planted planted = p.plant(config);
  switch (planted.fault) {
    case Fault::kBuild:
      return Outcome::failed(Verdict::kBuildFailed, planted.message);
    case Fault::kLaunch:
      return Outcome::failed(Verdict::kLaunchFailed, planted.message);
    case Fault::kOom:
      if (!sim_allocate(96ull << 30))
        return Outcome::failed(Verdict::kOom, planted.message + ", the device has 80 GiB");
      break;
    case Fault::kSegv:
      std::raise(SIGSEGV);  // what an illegal address does to a CUDA context's process
      break;
    case Fault::kAbort:
      std::fputs("sim: device-side assert triggered\n", stderr);
      std::abort();
    case Fault::kHang:
      for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
    default:
      break;
  }
  Outcome o = compute_and_check(p.chunk(config), planted.fault);
  if (o.verdict != Verdict::kOk) return o;

  // Timing: samples around the landscape's time with deterministic noise and rare outliers
  // (a preempted sample), until the median's noise is under the bound.
  double t = p.time_us(problem, config) * (regime == Regime::kDeploy ? p.cold(config) : 1.0);
  const std::int64_t execution = executions_++;
  if (const char* drift = std::getenv("ATTUNE_SIM_DRIFT")) {
    long long from = 0, to = 0;
    double factor = 1;
    if (std::sscanf(drift, "%lld:%lld:%lf", &from, &to, &factor) == 3 && execution >= from &&
        execution < to)
      t *= factor;
  }
  // A kernel with two performance levels (the H200's gemm m=1000 n=9216 k=3072 anchor read 74.8
  // and 82-85 us): every other execution is slower by the factor.
  if (const char* two = std::getenv("ATTUNE_SIM_TWO_LEVEL")) {
    double factor = 1;
    if (std::sscanf(two, "%lf", &factor) == 1 && execution % 2 == 1) t *= factor;
  }
  std::mt19937_64 g(
      mix64(fnv1a64(problem.text() + "|" + config.text() + "|" + std::string(to_string(regime)))));
  std::normal_distribution<double> n(0.0, 0.01);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  SamplingPolicy policy;
  if (regime == Regime::kRank) policy.noise_bound = 0.01;
  SampleStats s =
      sample_until_stable([&] { return t * std::exp(n(g)) * (u(g) < 0.02 ? 1.3 : 1.0); }, policy);
  Measurement m = measurement_of(s, regime);
  m.sm_clock_mhz = 1980;
  m.throttle = "none";
  if (p.parts && regime == Regime::kDeploy) {
    // The chain's steps in the proportions of their times, summing to the measured median.
    m.parts_us = p.parts(problem);
    const double scale = m.median_us / std::accumulate(m.parts_us.begin(), m.parts_us.end(), 0.0);
    for (double& part : m.parts_us) part *= scale;
  }
  o.measurement = m;
  return o;
}

}  // namespace attune
