// layer: one transformer decoder layer (Qwen3 / Llama shapes, bf16, random weights) through
// libattune-rt, in the grouping attune's layer tune picks (`attune tune --model ... --layer 0`):
// the residual add fused into each RMSNorm, the q/k RMSNorm inside the RoPE kernel, attention as
// one entry point (the table's row says flash or split), SiLU*mul as its own kernel or, with
// --silu-mul epilogue (the tune's silu_mul=epilogue grouping), in the gate/up GEMM's epilogue,
// and RoPE as its own kernel or, with --rope epilogue (rope=epilogue), in the QKV GEMM's:
//
//   rmsnorm(+residual) -> gemm qkv -> rope(+q/k norm) -> attention -> gemm o
//     (--rope epilogue:   gemm_rope (+q/k norm)       -> attention -> gemm o)
//     -> rmsnorm(+residual) -> gemm gate_up [rows, 2*inter] -> silu_mul -> gemm down
//                              (epilogue: gemm_silu_mul [rows, inter] -> gemm down)
//
// The layer's output is the down projection; its residual add is the next layer's first RMSNorm,
// as in the tuned grouping. With --norm gemm (the tune's norm=gemm grouping) no RMSNorm runs: the
// norms' weights are folded into the QKV and gate/up weights once at setup, those GEMMs scale
// each row of the residual stream by its reciprocal RMS (gemm_fused's rms_norm, and with
// --rope epilogue gemm_rope's), and the O and down projections add their output to the stream in
// place (gemm_fused's residual):
//
//   gemm qkv (rms) -> rope -> attention -> gemm o (+= x)
//     (--rope epilogue: gemm_rope (rms, +q/k norm) -> attention -> gemm o (+= x))
//     -> gemm gate_up (rms; SiLU * mul epilogue or kernel) -> gemm down (+= x)
//
// After the warm-up has compiled and loaded every kernel, the whole
// layer (--layers N times, sharing weights and KV cache) is captured as one CUDA graph, the
// assembled form the tune's gap check measures, and each replay is timed with CUDA events after
// an L2 flush by reads outside the timed region (bench/layer_torch.py flushes its PyTorch peers
// the same way). Prints layer_us= (the median), the runtime's hit/miss counters and what each
// call dispatched; `attune ab --metric layer_us` compares a run without and with a table (README,
// "examples/layer").
//
//   layer [--table tuned/DEVICE.json] [--model
//   qwen3-embedding-0.6b|qwen3-0.6b|qwen3-8b|llama-3.1-8b]
//         [--hidden H --inter I --q-heads Q --kv-heads KV --head D --theta T --qk-norm 0|1]
//         [--batch B --tokens T | --decode --batch B --kv L]
//         [--silu-mul kernel|epilogue] [--rope kernel|epilogue] [--norm kernel|gemm]
//         [--layers 1] [--steps 200]
//         [--warmup 10]
//         [--flush-mib 256]
//
// Limits of the stand-in: bf16 only; RMSNorm's eps is the kernels' 1e-6. A prefill's attention
// output is [batch, q_heads, seq, head] and the O projection reads it as [rows, q_heads * head]: a
// real model transposes it to [batch, seq, q_heads, head] first (one more kernel, or a strided
// GEMM), which this layer leaves out rather than time a kernel the tune did not tune. For a decode
// step (seq 1) the two layouts are the same. llama-3.1-8b's RoPE takes Llama 3.1's frequency
// rewrite (RopeScaling::kLlama3), as its layer tune's rope rows do.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "attune/runtime.h"

namespace {

struct Model {
  std::string name;
  int hidden, inter, q_heads, kv_heads, head;
  std::int64_t theta;
  bool qk_norm;
  bool llama3_scaling;  // rope_scaling of Llama 3.1 (rope_type llama3)
};

// The published sizes of models/*.json (hidden_size, intermediate_size, num_attention_heads,
// num_key_value_heads, head_dim, rope_theta, qk_norm, rope_scaling).
std::optional<Model> model_of(const std::string& name) {
  if (name == "qwen3-embedding-0.6b" || name == "qwen3-0.6b")
    return Model{name, 1024, 3072, 16, 8, 128, 1000000, true, false};
  if (name == "qwen3-8b") return Model{name, 4096, 12288, 32, 8, 128, 1000000, true, false};
  if (name == "llama-3.1-8b") return Model{name, 4096, 14336, 32, 8, 128, 500000, false, true};
  return std::nullopt;
}

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "layer: %s\n", what.c_str());
  std::exit(2);
}

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) die(std::string(what) + ": " + cudaGetErrorString(e));
}

void check(const attune::rt::Status& s, const std::string& what) {
  if (!s.ok()) die(what + ": " + s.message());
}

// bf16 bits of f, rounded to nearest even (the values here are small and finite).
std::uint16_t to_bf16(float f) {
  std::uint32_t bits = 0;
  std::memcpy(&bits, &f, sizeof bits);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<std::uint16_t>(bits >> 16);
}

// A device buffer of n bf16 values, uniform in [center - scale, center + scale] (xorshift64*,
// seeded per buffer): random as the PyTorch peers' weights are, since a GEMM on constant data
// draws less power and can clock higher than one on real weights.
struct Buffer {
  void* p = nullptr;
  std::size_t n = 0;
  Buffer(std::size_t count, float scale, std::uint64_t seed, float center = 0.0f) : n(count) {
    check(cudaMalloc(&p, std::max<std::size_t>(n, 1) * 2), "cudaMalloc");
    std::vector<std::uint16_t> host(std::max<std::size_t>(n, 1));
    std::uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
    for (auto& v : host) {
      s ^= s >> 12;
      s ^= s << 25;
      s ^= s >> 27;
      const double u = static_cast<double>((s * 0x2545f4914f6cdd1dull) >> 11) * 0x1.0p-53;
      v = to_bf16(center + scale * static_cast<float>(2.0 * u - 1.0));
    }
    check(cudaMemcpy(p, host.data(), host.size() * 2, cudaMemcpyHostToDevice), "cudaMemcpy");
  }
  // Multiplies column j of this [n / cols, cols] matrix by g[j] (bf16, rounded): a norm's weight
  // folded into the GEMM after it, once, as a model loader would.
  void fold_columns(const Buffer& g, std::size_t cols) {
    std::vector<std::uint16_t> w(n), gw(cols);
    check(cudaMemcpy(w.data(), p, n * 2, cudaMemcpyDeviceToHost), "cudaMemcpy");
    check(cudaMemcpy(gw.data(), g.p, cols * 2, cudaMemcpyDeviceToHost), "cudaMemcpy");
    auto f = [](std::uint16_t b) {
      const std::uint32_t bits = std::uint32_t{b} << 16;
      float v = 0;
      std::memcpy(&v, &bits, sizeof v);
      return v;
    };
    for (std::size_t i = 0; i < n; ++i) w[i] = to_bf16(f(w[i]) * f(gw[i % cols]));
    check(cudaMemcpy(p, w.data(), n * 2, cudaMemcpyHostToDevice), "cudaMemcpy");
  }
  ~Buffer() { cudaFree(p); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
};

std::string describe(const attune::rt::Dispatch* d) {
  if (!d) return "(not reported)";
  std::string out = d->tuned ? "tuned row " + std::to_string(d->row) : "baseline";
  if (!d->why.empty()) out += " (" + d->why + ")";
  out += ", " + d->backend + " " + d->config + ", problem " + d->problem;
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string table, model_name = "qwen3-embedding-0.6b";
  std::optional<int> hidden, inter, q_heads, kv_heads, head, qk_norm;
  std::optional<std::int64_t> theta;
  int batch = 1, tokens = 128, kv = 2048, layers = 1, steps = 200, warmup = 10, flush_mib = 256;
  bool decode = false, silu_epilogue = false, rope_epilogue = false, norm_gemm = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) die(a + " needs a value");
      return argv[++i];
    };
    auto integer = [&]() -> int {
      const std::string v = value();
      char* end = nullptr;
      const long n = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || n < 0 || n > (1L << 30))
        die(a + " needs a non-negative integer, not '" + v + "'");
      return static_cast<int>(n);
    };
    if (a == "--table")
      table = value();
    else if (a == "--model")
      model_name = value();
    else if (a == "--hidden")
      hidden = integer();
    else if (a == "--inter")
      inter = integer();
    else if (a == "--q-heads")
      q_heads = integer();
    else if (a == "--kv-heads")
      kv_heads = integer();
    else if (a == "--head")
      head = integer();
    else if (a == "--theta")
      theta = integer();
    else if (a == "--qk-norm")
      qk_norm = integer();
    else if (a == "--batch")
      batch = integer();
    else if (a == "--tokens")
      tokens = integer();
    else if (a == "--decode")
      decode = true;
    else if (a == "--kv")
      kv = integer();
    else if (a == "--layers")
      layers = integer();
    else if (a == "--steps")
      steps = integer();
    else if (a == "--warmup")
      warmup = integer();
    else if (a == "--flush-mib")
      flush_mib = integer();
    else if (a == "--silu-mul") {
      const std::string v = value();
      if (v != "kernel" && v != "epilogue")
        die("--silu-mul is kernel or epilogue, not '" + v + "'");
      silu_epilogue = v == "epilogue";
    } else if (a == "--rope") {
      const std::string v = value();
      if (v != "kernel" && v != "epilogue") die("--rope is kernel or epilogue, not '" + v + "'");
      rope_epilogue = v == "epilogue";
    } else if (a == "--norm") {
      const std::string v = value();
      if (v != "kernel" && v != "gemm") die("--norm is kernel or gemm, not '" + v + "'");
      norm_gemm = v == "gemm";
    } else
      die("unknown flag " + a + " (see the comment at the top of examples/layer/layer.cpp)");
  }
  auto preset = model_of(model_name);
  if (!preset)
    die("--model is qwen3-embedding-0.6b, qwen3-0.6b, qwen3-8b or llama-3.1-8b, not " + model_name +
        " (or give the sizes with --hidden, --inter, ...)");
  Model m = *preset;
  const bool custom = hidden || inter || q_heads || kv_heads || head || theta || qk_norm;
  m.hidden = hidden.value_or(m.hidden);
  m.inter = inter.value_or(m.inter);
  m.q_heads = q_heads.value_or(m.q_heads);
  m.kv_heads = kv_heads.value_or(m.kv_heads);
  m.head = head.value_or(m.head);
  m.theta = theta.value_or(m.theta);
  m.qk_norm = qk_norm.value_or(m.qk_norm ? 1 : 0) != 0;
  if (custom) m.name += " (sizes overridden)";
  if (m.hidden < 1 || m.inter < 1 || m.q_heads < 1 || m.kv_heads < 1 || m.theta < 1)
    die("--hidden, --inter, --q-heads, --kv-heads and --theta must be positive");
  if (m.q_heads % m.kv_heads) die("--q-heads must be a multiple of --kv-heads");
  if (m.head != 64 && m.head != 128 && (decode ? m.head != 256 : true))
    die("--head is 64 or 128 (256 for a decode step): what libattune-rt's attention covers");
  if (batch < 1 || steps < 1 || layers < 1) die("--batch, --steps and --layers must be positive");
  if (decode ? kv < 1 : (tokens < 1 || tokens > 16384))
    die(decode ? "--kv must be positive" : "--tokens must be 1 .. 16384");

  // One new token per sequence against a cache of kv positions that includes it (decode), or a
  // whole prompt written into a cache of its own length (prefill).
  const std::int64_t seq = decode ? 1 : tokens, cache_len = decode ? kv : tokens;
  const std::int64_t rows = batch * seq, h = m.hidden, d = m.head;
  const std::int64_t q_dim = std::int64_t{m.q_heads} * d;
  const std::int64_t qkv_n = (std::int64_t{m.q_heads} + 2 * m.kv_heads) * d;
  const std::int64_t cache = std::int64_t{batch} * m.kv_heads * cache_len * d;
  const auto dtype = attune::rt::DType::kBf16;
  auto n = [](std::int64_t v) { return static_cast<std::size_t>(v); };

  std::unique_ptr<attune::rt::Runtime> rt;
  check(attune::rt::Runtime::open(table, &rt), "opening the table");
  cudaStream_t stream = nullptr;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");

  // Weights scaled by 1/sqrt(fan-in) (uniform in +-sqrt(3/K): unit variance out of unit variance
  // in), norm weights near 1, activations and the cache's earlier positions in +-1.
  auto w = [](std::int64_t k) {
    return static_cast<float>(std::sqrt(3.0 / static_cast<double>(k)));
  };
  Buffer ln_in(n(h), 0.1f, 1, 1.0f), ln_post(n(h), 0.1f, 2, 1.0f), q_norm(n(d), 0.1f, 3, 1.0f),
      k_norm(n(d), 0.1f, 4, 1.0f);
  Buffer w_qkv(n(qkv_n * h), w(h), 5), w_o(n(h * q_dim), w(q_dim), 6),
      w_gate_up(n(2 * std::int64_t{m.inter} * h), w(h), 7), w_down(n(h * m.inter), w(m.inter), 8);
  if (norm_gemm) {
    w_qkv.fold_columns(ln_in, n(h));
    w_gate_up.fold_columns(ln_post, n(h));
  }
  Buffer x0(n(rows * h), 1.0f, 9), resid0(n(rows * h), 1.0f, 10);
  Buffer x(n(rows * h), 1.0f, 9), resid(n(rows * h), 1.0f, 10), normed(n(rows * h), 1.0f, 11),
      qkv(n(rows * qkv_n), 1.0f, 12), q(n(rows * q_dim), 1.0f, 13), k_cache(n(cache), 1.0f, 14),
      v_cache(n(cache), 1.0f, 15), attn(n(rows * q_dim), 1.0f, 16),
      gate_up(n(rows * 2 * m.inter), 1.0f, 17), act(n(rows * m.inter), 1.0f, 18);

  // The flush: a GEMV through a second, table-less runtime (its counters and the harvest file
  // stay out of this layer's), reading --flush-mib MiB of weights and writing 64 KiB per 256 MiB.
  // Reads, not a memset: a memset leaves L2 full of dirty lines whose write-back the next
  // replay would pay (bench/l2_flush), while a layer in a model meets an L2 of clean lines.
  std::unique_ptr<attune::rt::Runtime> flush_rt;
  std::unique_ptr<Buffer> flush_a, flush_b, flush_c;
  constexpr std::int64_t kFlushK = 4096;
  const std::int64_t flush_n = std::int64_t{flush_mib} * 1024 * 1024 / 2 / kFlushK;
  if (flush_mib > 0) {
    // A runtime reads these when it opens: hidden from the flush's while it opens, then restored.
    std::vector<std::pair<const char*, std::string>> hidden_env;
    for (const char* name : {"ATTUNE_HARVEST", "ATTUNE_LOG_TUNED"})
      if (const char* v = std::getenv(name)) {
        hidden_env.emplace_back(name, v);
        unsetenv(name);
      }
    check(attune::rt::Runtime::open("", &flush_rt), "opening the flush's runtime");
    for (const auto& [name, v] : hidden_env) setenv(name, v.c_str(), 1);
    flush_a = std::make_unique<Buffer>(n(kFlushK), 1.0f, 19);
    flush_b = std::make_unique<Buffer>(n(flush_n * kFlushK), 1.0f, 20);
    flush_c = std::make_unique<Buffer>(n(flush_n), 1.0f, 21);
  }
  auto flush = [&]() {
    if (flush_rt)
      check(flush_rt->gemm(1, flush_n, kFlushK, dtype, flush_a->p, flush_b->p, flush_c->p, nullptr,
                           stream),
            "flush gemm");
  };

  // What each call of the first layer dispatched (the runtime keeps these alive).
  const char* const kNames[] = {"input_norm", "qkv_proj",     "rope",     "attention", "o_proj",
                                "post_norm",  "gate_up_proj", "silu_mul", "down_proj"};
  constexpr int kKernels = 9;
  const attune::rt::Dispatch* dispatched[kKernels] = {};
  // Attention of q against the caches into attn: the table's row says flash or split.
  auto attention = [&](const attune::rt::Dispatch** got) {
    if (decode)
      check(rt->attention_decode(batch, cache_len, d, m.q_heads, m.kv_heads, 1, dtype, attn.p, q.p,
                                 k_cache.p, v_cache.p, stream, got),
            "attention_decode");
    else
      check(rt->attention_prefill(seq, batch, d, m.q_heads, m.kv_heads, dtype, attn.p, q.p,
                                  k_cache.p, v_cache.p, stream, got),
            "attention_prefill");
  };
  // --norm gemm: x is the residual stream, normed by the GEMMs that read it and added to in
  // place by those that write it.
  auto run_layer_folded = [&](bool first) {
    const attune::rt::Dispatch* got[kKernels] = {};
    using Fusion = attune::rt::Runtime::GemmFusion;
    const void* qn = m.qk_norm ? q_norm.p : nullptr;
    const void* kn = m.qk_norm ? k_norm.p : nullptr;
    const auto scaling =
        m.llama3_scaling ? attune::rt::RopeScaling::kLlama3 : attune::rt::RopeScaling::kPlain;
    if (rope_epilogue) {
      check(rt->gemm_rope(batch, seq, cache_len, m.q_heads, m.kv_heads, d, m.theta, h, dtype, q.p,
                          k_cache.p, v_cache.p, x.p, w_qkv.p, qn, kn, scaling,
                          Fusion{true, nullptr, false}, stream, &got[1]),
            "gemm_rope (rms)");
    } else {
      check(rt->gemm_fused(rows, qkv_n, h, dtype, x.p, w_qkv.p, qkv.p, Fusion{true, nullptr, false},
                           stream, &got[1]),
            "gemm qkv (rms)");
      check(rt->rope(batch, seq, cache_len, m.q_heads, m.kv_heads, d, m.theta, dtype, q.p,
                     k_cache.p, v_cache.p, qkv.p, qn, kn, scaling, stream, &got[2]),
            "rope");
    }
    attention(&got[3]);
    check(rt->gemm_fused(rows, h, q_dim, dtype, attn.p, w_o.p, x.p, Fusion{false, x.p, false},
                         stream, &got[4]),
          "gemm o (+= x)");
    const std::int64_t gu_n = 2 * std::int64_t{m.inter};
    check(rt->gemm_fused(rows, gu_n, h, dtype, x.p, w_gate_up.p, silu_epilogue ? act.p : gate_up.p,
                         Fusion{true, nullptr, silu_epilogue}, stream, &got[6]),
          "gemm gate_up (rms)");
    if (!silu_epilogue)
      check(rt->silu_mul(rows, m.inter, dtype, act.p, gate_up.p, stream, &got[7]), "silu_mul");
    check(rt->gemm_fused(rows, h, m.inter, dtype, act.p, w_down.p, x.p, Fusion{false, x.p, false},
                         stream, &got[8]),
          "gemm down (+= x)");
    if (first) std::copy(got, got + kKernels, dispatched);
  };
  auto run_layer = [&](bool first) {
    if (norm_gemm) return run_layer_folded(first);
    const attune::rt::Dispatch* got[kKernels] = {};
    // h = x + resid (the previous layer's output and residual stream), normed = norm(h) * w.
    check(rt->rmsnorm(rows, h, dtype, normed.p, resid.p, x.p, resid.p, ln_in.p, stream, &got[0]),
          "rmsnorm (input)");
    const attune::rt::RopeScaling scaling =
        m.llama3_scaling ? attune::rt::RopeScaling::kLlama3 : attune::rt::RopeScaling::kPlain;
    const void* qn = m.qk_norm ? q_norm.p : nullptr;
    const void* kn = m.qk_norm ? k_norm.p : nullptr;
    if (rope_epilogue) {
      check(
          rt->gemm_rope(batch, seq, cache_len, m.q_heads, m.kv_heads, d, m.theta, h, dtype, q.p,
                        k_cache.p, v_cache.p, normed.p, w_qkv.p, qn, kn, scaling, stream, &got[1]),
          "gemm qkv + rope");
    } else {
      check(rt->gemm(rows, qkv_n, h, dtype, normed.p, w_qkv.p, qkv.p, nullptr, stream, &got[1]),
            "gemm qkv");
      check(rt->rope(batch, seq, cache_len, m.q_heads, m.kv_heads, d, m.theta, dtype, q.p,
                     k_cache.p, v_cache.p, qkv.p, qn, kn, scaling, stream, &got[2]),
            "rope");
    }
    attention(&got[3]);
    // attn is [batch, q_heads, seq, head], read as [rows, q_heads * head] (see the top comment).
    check(rt->gemm(rows, h, q_dim, dtype, attn.p, w_o.p, x.p, nullptr, stream, &got[4]), "gemm o");
    check(rt->rmsnorm(rows, h, dtype, normed.p, resid.p, x.p, resid.p, ln_post.p, stream, &got[5]),
          "rmsnorm (post-attention)");
    if (silu_epilogue) {
      check(
          rt->gemm_silu_mul(rows, m.inter, h, dtype, normed.p, w_gate_up.p, act.p, stream, &got[6]),
          "gemm gate_up + silu_mul");
    } else {
      check(rt->gemm(rows, 2 * std::int64_t{m.inter}, h, dtype, normed.p, w_gate_up.p, gate_up.p,
                     nullptr, stream, &got[6]),
            "gemm gate_up");
      check(rt->silu_mul(rows, m.inter, dtype, act.p, gate_up.p, stream, &got[7]), "silu_mul");
    }
    check(rt->gemm(rows, h, m.inter, dtype, act.p, w_down.p, x.p, nullptr, stream, &got[8]),
          "gemm down");
    if (first) std::copy(got, got + kKernels, dispatched);
  };
  auto run_model = [&](bool first) {
    for (int l = 0; l < layers; ++l) run_layer(first && l == 0);
  };
  // Each replay starts from the same input and residual stream (restored outside the timing).
  auto restore = [&]() {
    check(cudaMemcpyAsync(x.p, x0.p, n(rows * h) * 2, cudaMemcpyDeviceToDevice, stream),
          "restoring x");
    check(cudaMemcpyAsync(resid.p, resid0.p, n(rows * h) * 2, cudaMemcpyDeviceToDevice, stream),
          "restoring the residual");
  };

  // Warm-up: every kernel (and the flush's) compiled, loaded and run before the capture.
  for (int i = 0; i < std::max(warmup, 1); ++i) {
    restore();
    run_model(i == 0);
    flush();
  }
  check(cudaStreamSynchronize(stream), "warm-up");
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
  run_model(false);
  check(cudaStreamEndCapture(stream, &graph), "capturing the layer");
  check(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate");
  check(cudaGraphDestroy(graph), "cudaGraphDestroy");
  for (int i = 0; i < 3; ++i) check(cudaGraphLaunch(exec, stream), "cudaGraphLaunch");
  check(cudaStreamSynchronize(stream), "graph warm-up");

  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  std::vector<float> ms(n(steps));
  for (int i = 0; i < steps; ++i) {
    restore();
    flush();
    check(cudaEventRecord(start, stream), "cudaEventRecord");
    check(cudaGraphLaunch(exec, stream), "cudaGraphLaunch");
    check(cudaEventRecord(stop, stream), "cudaEventRecord");
    check(cudaEventSynchronize(stop), "replay");
    check(cudaEventElapsedTime(&ms[n(i)], start, stop), "cudaEventElapsedTime");
  }
  std::vector<float> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  const double median_us = 1000.0 * sorted[sorted.size() / 2];

  const auto c = rt->counters();
  const std::string shape =
      decode
          ? "decode batch " + std::to_string(batch) + " kv " + std::to_string(kv)
          : "prefill batch " + std::to_string(batch) + " x " + std::to_string(tokens) + " tokens";
  std::printf(
      "model %s (hidden %d, inter %d, %d q heads, %d kv heads, head %d, theta %lld, qk_norm %d%s), "
      "%s, %d layer%s, bf16, one CUDA graph, %s before each replay, norms %s, table %s\n",
      m.name.c_str(), m.hidden, m.inter, m.q_heads, m.kv_heads, m.head,
      static_cast<long long>(m.theta), m.qk_norm ? 1 : 0,
      m.llama3_scaling ? ", llama3 rope scaling" : "", shape.c_str(), layers,
      layers == 1 ? "" : "s (sharing weights and KV cache)",
      flush_mib > 0 ? ("L2 flushed by reading " + std::to_string(flush_mib) + " MiB").c_str()
                    : "no L2 flush",
      norm_gemm ? "folded into the GEMMs" : "as kernels",
      table.empty() ? "(none: baselines)" : table.c_str());
  if (!decode && seq > 1 && m.q_heads > 1)
    std::printf(
        "note: o_proj reads attention's [batch, q_heads, seq, head] output as [rows, q_heads * "
        "head]; a real model transposes it first (a kernel this layer leaves out)\n");
  for (int k = 0; k < kKernels; ++k)
    if (dispatched[k])  // silu_mul (rope) has no call of its own under --silu-mul (--rope) epilogue
      std::printf("dispatch %-12s %s\n", kNames[k], describe(dispatched[k]).c_str());
  std::printf("runtime: %llu hits, %llu misses, %llu distinct shapes%s\n",
              static_cast<unsigned long long>(c.hits), static_cast<unsigned long long>(c.misses),
              static_cast<unsigned long long>(c.shapes),
              c.device_mismatch ? " (table tuned for another device: baseline everywhere)" : "");
  // layer_us: one layer's share of the graph (the whole graph when --layers is 1).
  std::printf("graph_us=%.2f (median of %d graph replays; min %.2f, max %.2f)\n", median_us, steps,
              1000.0 * sorted.front(), 1000.0 * sorted.back());
  std::printf("layer_us=%.2f\n", median_us / layers);
  cudaGraphExecDestroy(exec);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaStreamDestroy(stream);
  return 0;
}
