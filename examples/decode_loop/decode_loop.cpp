// decode_loop: the GEMMs, RMSNorms and decode attention of an LLM's decode steps (Qwen3-0.6B or
// Qwen3-8B layer shapes, head size 128; activations and RoPE left out), all through libattune-rt,
// timed with CUDA events. Each of the --tokens sequences attends to a KV cache of --kv positions
// (0: attention left out, as before it had an entry point).
// Run it without a table to harvest the shapes it needs, tune them, then run it with the exported
// table; `attune ab` compares the two runs on the printed step_us (see README, "decode_loop").
//
//   decode_loop [--table tuned/DEVICE.json] [--model 0.6b|8b] [--tokens 1] [--kv 4096]
//               [--layers N] [--steps 200] [--warmup 20] [--dtype bf16|fp16] [--graph]
// --graph captures one step (after the warm-up has compiled and loaded every kernel) as a CUDA
// graph and times its replays, as graph-captured serving loops run: the host's launch cost then
// drops out of the step time, and what is left is the kernels'.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "attune/runtime.h"

namespace {

struct Model {
  int hidden, q, kv, intermediate, layers;
};

// Qwen3 configs: hidden size, q heads x head dim, kv heads x head dim, MLP width, layers.
Model model_of(const std::string& name) {
  if (name == "8b") return {4096, 4096, 1024, 12288, 36};
  return {1024, 2048, 1024, 3072, 28};
}

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "decode_loop: %s\n", what.c_str());
  std::exit(2);
}

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) die(std::string(what) + ": " + cudaGetErrorString(e));
}

void check(const attune::rt::Status& s, const char* what) {
  if (!s.ok()) die(std::string(what) + ": " + s.message());
}

// The byte every buffer is filled with: a small finite 16-bit value (bf16 0x3c3c ~ 0.0115, fp16
// 0x2020 ~ 0.0083), so that no step overflows or meets denormals; values do not matter otherwise.
int fill_byte = 0x3c;

// A device buffer of n 16-bit values.
struct Buffer {
  void* p = nullptr;
  explicit Buffer(std::size_t n) {
    check(cudaMalloc(&p, std::max<std::size_t>(n, 1) * 2), "cudaMalloc");
    check(cudaMemset(p, fill_byte, std::max<std::size_t>(n, 1) * 2), "cudaMemset");
  }
  ~Buffer() { cudaFree(p); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
};

}  // namespace

int main(int argc, char** argv) {
  std::string table, model_name = "0.6b", dtype_name = "bf16";
  int tokens = 1, kv = 4096, layers = 0, steps = 200, warmup = 20;
  bool graph = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) die(a + " needs a value");
      return argv[++i];
    };
    if (a == "--table")
      table = value();
    else if (a == "--model")
      model_name = value();
    else if (a == "--tokens")
      tokens = std::atoi(value().c_str());
    else if (a == "--kv")
      kv = std::atoi(value().c_str());
    else if (a == "--layers")
      layers = std::atoi(value().c_str());
    else if (a == "--steps")
      steps = std::atoi(value().c_str());
    else if (a == "--warmup")
      warmup = std::atoi(value().c_str());
    else if (a == "--dtype")
      dtype_name = value();
    else if (a == "--graph")
      graph = true;
    else
      die("unknown flag " + a + " (see the comment at the top of decode_loop.cpp)");
  }
  if (model_name != "0.6b" && model_name != "8b") die("--model is 0.6b or 8b, not " + model_name);
  if (dtype_name != "bf16" && dtype_name != "fp16")
    die("--dtype is bf16 or fp16, not " + dtype_name);
  if (tokens < 1 || steps < 1 || warmup < 0 || layers < 0 || kv < 0)
    die("--tokens and --steps must be positive, --kv and --layers not negative");
  const Model m = model_of(model_name);
  if (layers == 0) layers = m.layers;
  const auto dtype = dtype_name == "bf16" ? attune::rt::DType::kBf16 : attune::rt::DType::kFp16;
  fill_byte = dtype_name == "bf16" ? 0x3c : 0x20;

  std::unique_ptr<attune::rt::Runtime> rt;
  check(attune::rt::Runtime::open(table, &rt), "opening the table");
  cudaStream_t stream = nullptr;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");

  // Weights of one layer, shared by all layers (the shapes, not the values, are what is timed;
  // a model's weights would exceed L2 just as these do at 8B, and mostly at 0.6B).
  const std::size_t h = m.hidden, t = tokens;
  Buffer wq(m.q * h), wk(m.kv * h), wv(m.kv * h), wo(h * m.q), wgate(m.intermediate * h),
      wup(m.intermediate * h), wdown(h * m.intermediate), norm_w(h);
  Buffer x(t * h), resid(t * h), normed(t * h), q(t * m.q), k(t * m.kv), v(t * m.kv), attn(t * m.q),
      gate(t * m.intermediate), up(t * m.intermediate);
  // One KV cache per sequence, [tokens, kv_heads, kv, 128], shared by the layers as the weights
  // are (this step's k and v would be appended to it; the shapes are what is timed).
  constexpr int kHead = 128;
  const std::size_t cache = t * static_cast<std::size_t>(m.kv) * static_cast<std::size_t>(kv);
  Buffer k_cache(kv ? cache : 1), v_cache(kv ? cache : 1);

  auto step = [&]() {
    for (int l = 0; l < layers; ++l) {
      check(rt->rmsnorm(tokens, m.hidden, dtype, normed.p, resid.p, x.p, resid.p, norm_w.p, stream),
            "rmsnorm");
      check(rt->gemm(tokens, m.q, m.hidden, dtype, normed.p, wq.p, q.p, nullptr, stream), "gemm q");
      check(rt->gemm(tokens, m.kv, m.hidden, dtype, normed.p, wk.p, k.p, nullptr, stream),
            "gemm k");
      check(rt->gemm(tokens, m.kv, m.hidden, dtype, normed.p, wv.p, v.p, nullptr, stream),
            "gemm v");
      // q is [tokens, q_heads, 1, 128]: one new token per sequence against its cache.
      if (kv)
        check(rt->attention_decode(tokens, kv, kHead, m.q / kHead, m.kv / kHead, 1, dtype, attn.p,
                                   q.p, k_cache.p, v_cache.p, stream),
              "attention_decode");
      check(rt->gemm(tokens, m.hidden, m.q, dtype, kv ? attn.p : q.p, wo.p, x.p, nullptr, stream),
            "gemm o");
      check(rt->rmsnorm(tokens, m.hidden, dtype, normed.p, resid.p, x.p, resid.p, norm_w.p, stream),
            "rmsnorm");
      check(rt->gemm(tokens, m.intermediate, m.hidden, dtype, normed.p, wgate.p, gate.p, nullptr,
                     stream),
            "gemm gate");
      check(
          rt->gemm(tokens, m.intermediate, m.hidden, dtype, normed.p, wup.p, up.p, nullptr, stream),
          "gemm up");
      // The activation would combine gate and up; the down projection reads its result.
      check(rt->gemm(tokens, m.hidden, m.intermediate, dtype, up.p, wdown.p, x.p, nullptr, stream),
            "gemm down");
    }
    check(rt->rmsnorm(tokens, m.hidden, dtype, normed.p, resid.p, x.p, resid.p, norm_w.p, stream),
          "final rmsnorm");
  };

  for (int i = 0; i < std::max(warmup, 1); ++i) step();
  check(cudaStreamSynchronize(stream), "warm-up");
  cudaGraphExec_t exec = nullptr;
  if (graph) {
    cudaGraph_t g = nullptr;
    check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal),
          "cudaStreamBeginCapture");
    step();
    check(cudaStreamEndCapture(stream, &g), "capturing a step");
    check(cudaGraphInstantiate(&exec, g, 0), "cudaGraphInstantiate");
    check(cudaGraphDestroy(g), "cudaGraphDestroy");
    check(cudaGraphLaunch(exec, stream), "cudaGraphLaunch");
    check(cudaStreamSynchronize(stream), "graph warm-up");
  }
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  std::vector<float> ms(static_cast<std::size_t>(steps));
  for (int i = 0; i < steps; ++i) {
    check(cudaEventRecord(start, stream), "cudaEventRecord");
    if (exec) {
      check(cudaGraphLaunch(exec, stream), "cudaGraphLaunch");
    } else {
      step();
    }
    check(cudaEventRecord(stop, stream), "cudaEventRecord");
    check(cudaEventSynchronize(stop), "step");
    check(cudaEventElapsedTime(&ms[static_cast<std::size_t>(i)], start, stop),
          "cudaEventElapsedTime");
  }
  std::vector<float> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  const double median_us = 1000.0 * sorted[sorted.size() / 2];
  const auto c = rt->counters();
  std::printf("model qwen3-%s, %d tokens, kv %d, %d layers, %s, %s, table %s\n", model_name.c_str(),
              tokens, kv, layers, dtype_name.c_str(), exec ? "graph replay" : "direct launches",
              table.empty() ? "(none)" : table.c_str());
  std::printf("runtime: %llu hits, %llu misses, %llu distinct shapes%s\n",
              static_cast<unsigned long long>(c.hits), static_cast<unsigned long long>(c.misses),
              static_cast<unsigned long long>(c.shapes),
              c.device_mismatch ? " (table tuned for another device: baseline everywhere)" : "");
  std::printf("step_us=%.2f (median of %d steps; min %.2f, max %.2f)\n", median_us, steps,
              1000.0 * sorted.front(), 1000.0 * sorted.back());
  if (exec) cudaGraphExecDestroy(exec);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaStreamDestroy(stream);
  return 0;
}
