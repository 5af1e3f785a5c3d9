// libattune-rt's C++ API: open a tuned table (attune export, attune sweep), then call gemm,
// rmsnorm, attention, rope and silu_mul through it; a shape with a table row runs the row's kernel,
// any other shape the tuner's baseline, and every call can say what it ran. The same library as the
// C API (attune/runtime_c.h), which documents the environment variables, the cubin cache and the
// timing hook in full.
//
// Thread-safety: one Runtime may be used from any number of threads at once. The first call of a
// shape decides, compiles and loads under a lock; later calls of it take no lock. Destroying a
// Runtime while other threads still call it is the caller's bug.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "attune/runtime_c.h"

namespace attune::rt {

enum class DType { kBf16 = ATTUNE_RT_BF16, kFp16 = ATTUNE_RT_FP16 };
// RoPE's frequencies as they are, or Llama 3.1's rewrite of them (attune_rt_rope_scaling).
enum class RopeScaling { kPlain = ATTUNE_RT_ROPE_PLAIN, kLlama3 = ATTUNE_RT_ROPE_LLAMA3 };

enum class Code {
  kOk = ATTUNE_RT_OK,
  kInvalidArgument = ATTUNE_RT_INVALID_ARGUMENT,
  kBadTable = ATTUNE_RT_BAD_TABLE,
  kUnsupported = ATTUNE_RT_UNSUPPORTED,
  kCuda = ATTUNE_RT_CUDA,
  kInternal = ATTUNE_RT_INTERNAL,
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}
  bool ok() const { return code_ == Code::kOk; }
  explicit operator bool() const { return ok(); }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  Code code_ = Code::kOk;
  std::string message_;
};

// What one call ran (see attune_rt_dispatch for the fields' meaning).
struct Dispatch {
  bool tuned = false;
  int row = 0;
  std::string why;
  std::string problem;
  std::string backend;
  std::string config;
  std::vector<std::string> kernels;
  std::string cache_key;
};

struct Counters {
  std::uint64_t hits = 0, misses = 0, shapes = 0;
  bool device_mismatch = false;
};

struct Timing {
  double median_us = 0, min_us = 0, max_us = 0, noise = 0;
  int samples = 0;
  Dispatch dispatch;
};

struct Options {
  int device = -1;  // CUDA ordinal; -1: $ATTUNE_DEVICE, else 0
  std::string
      cubin_dir;  // "": "<table>.cubin/" when it exists, else the user cache (attune_rt_open)
};

class ATTUNE_RT_API Runtime {
 public:
  // table_path "": no table (every call runs the baseline; useful with ATTUNE_HARVEST).
  static Status open(const std::string& table_path, std::unique_ptr<Runtime>* out,
                     const Options& options = {});
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  // Row-major C[M,N] = A[M,K] . B[N,K]^T (+ bias[N]); bias may be null. Enqueued on `stream`
  // (cudaStream_t / CUstream; null: the legacy default stream). *dispatched, when given, points to
  // what ran; it lives as long as the Runtime.
  Status gemm(std::int64_t m, std::int64_t n, std::int64_t k, DType dtype, const void* a,
              const void* b, void* c, const void* bias, void* stream,
              const Dispatch** dispatched = nullptr);
  // The gated MLP's gate/up projection with SiLU * mul in its epilogue: w [2 * inter, k] is the
  // gate's rows then the up's (the stacked gate_up_proj weight), and c [m, inter] = silu(a .
  // gate^T) * (a . up^T), silu(g) = g / (1 + exp(-g)). Its problem is gemm with silu_mul=1 and
  // n = 2 * inter; without a table row it runs cuBLASLt's matmul, then a SiLU * mul kernel.
  Status gemm_silu_mul(std::int64_t m, std::int64_t inter, std::int64_t k, DType dtype,
                       const void* a, const void* w, void* c, void* stream,
                       const Dispatch** dispatched = nullptr);
  // A projection with its neighbours in a decoder layer folded in (gemm's rms_norm, residual and
  // silu_mul flags; `attune tune --model`'s norm=gemm grouping):
  //   rms_norm: each row of a is scaled by 1 / sqrt(mean(row^2) + 1e-6) (the RMSNorm before the
  //             projection, with no kernel of its own); its weight g is folded into w beforehand,
  //             once when the weights load: w[j, k] * g[k]
  //   residual: c = ... + residual, a matrix [m, n] (may be c itself: the residual stream)
  //   silu_mul: w [n, k] is the gate's n / 2 rows then the up's, c [m, n / 2] as gemm_silu_mul's
  // Without a table row it runs the split form: an RMSNorm kernel, cuBLASLt's matmul (its residual
  // as beta = 1), the SiLU * mul kernel.
  struct GemmFusion {
    bool rms_norm = false;
    const void* residual = nullptr;
    bool silu_mul = false;
  };
  Status gemm_fused(std::int64_t m, std::int64_t n, std::int64_t k, DType dtype, const void* a,
                    const void* w, void* c, const GemmFusion& fusion, void* stream,
                    const Dispatch** dispatched = nullptr);
  // y = norm(h) * w with h = x, or h = x + r written to h_out when r is given.
  Status rmsnorm(std::int64_t rows, std::int64_t hidden, DType dtype, void* y, void* h_out,
                 const void* x, const void* r, const void* w, void* stream,
                 const Dispatch** dispatched = nullptr);

  // Decode attention over a KV cache in PyTorch SDPA's layout, contiguous: q and o [batch,
  // q_heads, q_len, head], k and v [batch, kv_heads, kv, head]; o = softmax(q . k^T / sqrt(head))
  // . v, query head h reading KV head h / (q_heads / kv_heads). The cache's last q_len positions
  // are the new tokens, causal among themselves: token i sees positions 0 .. kv - q_len + i.
  // head 64, 128 or 256; q_heads a multiple of kv_heads; 1 <= q_len <= min(8, kv).
  Status attention_decode(std::int64_t batch, std::int64_t kv, std::int64_t head,
                          std::int64_t q_heads, std::int64_t kv_heads, std::int64_t q_len,
                          DType dtype, void* o, const void* q, const void* k, const void* v,
                          void* stream, const Dispatch** dispatched = nullptr);

  // Causal prefill attention over a whole prompt, PyTorch SDPA's layout, contiguous: q and o
  // [batch, q_heads, seq, head], k and v [batch, kv_heads, seq, head]; o = softmax(q . k^T /
  // sqrt(head)) . v, query token i seeing keys 0 .. i, query head h reading KV head
  // h / (q_heads / kv_heads). head 64 or 128; q_heads a multiple of kv_heads; seq <= 16384.
  Status attention_prefill(std::int64_t seq, std::int64_t batch, std::int64_t head,
                           std::int64_t q_heads, std::int64_t kv_heads, DType dtype, void* o,
                           const void* q, const void* k, const void* v, void* stream,
                           const Dispatch** dispatched = nullptr);

  // RoPE (rotate-half, as Llama and Qwen3) on the QKV GEMM's output, contiguous: qkv [batch * seq,
  // (q_heads + 2 * kv_heads) * head] (row b * seq + s; its heads q, then k, then v) is written as
  // q [batch, q_heads, seq, head] and into the caches k, v [batch, kv_heads, kv, head] at rows
  // kv - seq .. kv - 1 (no other row is touched; a prefill is kv == seq). Token s of sequence b
  // sits at position kv - seq + s; pair (i, i + head / 2) of a q or k head is rotated by
  // pos * theta^(-2i / head). With q_norm and k_norm ([head] each; both or neither) each q and k
  // head is first RMS-normalized with its weight, eps 1e-6 (Qwen3). head 64, 128 or 256; q_heads a
  // multiple of kv_heads; seq <= kv.
  Status rope(std::int64_t batch, std::int64_t seq, std::int64_t kv, std::int64_t q_heads,
              std::int64_t kv_heads, std::int64_t head, std::int64_t theta, DType dtype, void* q,
              void* k_cache, void* v_cache, const void* qkv, const void* q_norm, const void* k_norm,
              void* stream, const Dispatch** dispatched = nullptr);
  // The same with the frequencies' scaling: Llama 3.1's layers take RopeScaling::kLlama3 (the
  // rope problems with llama3_scaling=1); the call above is kPlain.
  Status rope(std::int64_t batch, std::int64_t seq, std::int64_t kv, std::int64_t q_heads,
              std::int64_t kv_heads, std::int64_t head, std::int64_t theta, DType dtype, void* q,
              void* k_cache, void* v_cache, const void* qkv, const void* q_norm, const void* k_norm,
              RopeScaling scaling, void* stream, const Dispatch** dispatched = nullptr);

  // The QKV projection with RoPE in its epilogue: qkv = x . w^T (x [batch * seq, hidden], w
  // [(q_heads + 2 * kv_heads) * head, hidden]) rotated as rope() rotates it (the same q, caches,
  // norm weights and scaling), qkv never written: without a table row it runs cuBLASLt's matmul
  // into a workspace, then a RoPE kernel. hidden a multiple of 8.
  Status gemm_rope(std::int64_t batch, std::int64_t seq, std::int64_t kv, std::int64_t q_heads,
                   std::int64_t kv_heads, std::int64_t head, std::int64_t theta,
                   std::int64_t hidden, DType dtype, void* q, void* k_cache, void* v_cache,
                   const void* x, const void* w, const void* q_norm, const void* k_norm,
                   RopeScaling scaling, void* stream, const Dispatch** dispatched = nullptr);
  // The same with the input RMSNorm folded in (fusion.rms_norm, the only GemmFusion flag it
  // takes; gemm_rope's rms_norm, `attune tune --model`'s rope=epilogue with norm=gemm): each row
  // of x scaled by 1 / sqrt(mean(row^2) + 1e-6) first, the norm's weight folded into w's columns
  // beforehand. Without a table row: an RMSNorm kernel, cuBLASLt's matmul, a RoPE kernel.
  Status gemm_rope(std::int64_t batch, std::int64_t seq, std::int64_t kv, std::int64_t q_heads,
                   std::int64_t kv_heads, std::int64_t head, std::int64_t theta,
                   std::int64_t hidden, DType dtype, void* q, void* k_cache, void* v_cache,
                   const void* x, const void* w, const void* q_norm, const void* k_norm,
                   RopeScaling scaling, const GemmFusion& fusion, void* stream,
                   const Dispatch** dispatched = nullptr);

  // The gated MLP's activation on the fused gate/up GEMM's output, contiguous: gu [rows,
  // 2 * inter] (gate, then up), y [rows, inter] = silu(gate) * up, silu(g) = g / (1 + exp(-g)).
  Status silu_mul(std::int64_t rows, std::int64_t inter, DType dtype, void* y, const void* gu,
                  void* stream, const Dispatch** dispatched = nullptr);

  // What this thread's last successful call on this Runtime ran, or null.
  const Dispatch* last_dispatch() const;
  Counters counters() const;

  // attune verify's timing hook (attune_rt_time_problem): the public entry point, deploy regime.
  Status time_problem(const std::string& problem, Timing* out);

  struct Impl;
  Impl& impl() { return *impl_; }  // for libattune-rt's own C API

 private:
  explicit Runtime(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace attune::rt
