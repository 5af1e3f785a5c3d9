/* libattune-rt's C API: open a tuned table (attune export), then call gemm, rmsnorm, attention,
 * rope and silu_mul through it;
 * a shape with a table row runs the row's kernel, any other shape the tuner's baseline. For C
 * callers and for dlopen (attune verify loads libattune-rt.so and calls attune_rt_time_problem):
 * plain C types only, every function returns an attune_rt_status, and attune_rt_last_error()
 * says why the calling thread's last call failed.
 *
 * Thread-safety: one attune_rt may be used from any number of threads at once. The first call of
 * a shape decides, compiles (NVRTC, cubins cached on disk) and loads under a lock; later calls of
 * it take no lock (a cuBLASLt row with a bias takes a short per-shape lock to set the bias
 * pointer). Closing while other threads still call is the caller's bug. Calls run in the device's
 * primary context (the one the CUDA runtime uses): it is made current on a calling thread that has
 * no context, and a thread with another context current gets ATTUNE_RT_UNSUPPORTED.
 *
 * Environment (read at open): ATTUNE_LOG_TUNED=1 logs one stderr line per distinct shape (hit or
 * miss, the matched row, the bucket applied) and a summary at close; ATTUNE_HARVEST=FILE appends
 * every missed shape once, one problem spec per line, as `attune tune --shapes FILE` reads it;
 * ATTUNE_DEVICE (default 0) is the device when attune_rt_open's device is -1; ATTUNE_CACHE_DIR
 * overrides the cubin cache (see attune_rt_open). */
#ifndef ATTUNE_RUNTIME_C_H_
#define ATTUNE_RUNTIME_C_H_

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define ATTUNE_RT_API __attribute__((visibility("default")))
#else
#define ATTUNE_RT_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped when a signature or struct below changes; a dlopen caller checks attune_rt_abi_version().
 */
#define ATTUNE_RT_ABI_VERSION 2

typedef enum attune_rt_status {
  ATTUNE_RT_OK = 0,
  ATTUNE_RT_INVALID_ARGUMENT = 1, /* a bad shape, dtype, pointer, problem text or row number */
  ATTUNE_RT_BAD_TABLE = 2,   /* the table is unreadable, malformed or not runnable: refused whole */
  ATTUNE_RT_UNSUPPORTED = 3, /* well formed, but not here (no such device, out of memory) */
  ATTUNE_RT_CUDA = 4,        /* a CUDA driver, NVRTC or cuBLASLt call failed */
  ATTUNE_RT_INTERNAL = 5
} attune_rt_status;

typedef enum attune_rt_dtype { ATTUNE_RT_BF16 = 0, ATTUNE_RT_FP16 = 1 } attune_rt_dtype;

/* RoPE's frequencies: theta^(-2i / head) as they are, or Llama 3.1's rewrite of them (its
 * config.json's rope_scaling: rope_type "llama3", factor 8, low_freq_factor 1, high_freq_factor 4,
 * original_max_position_embeddings 8192). */
typedef enum attune_rt_rope_scaling {
  ATTUNE_RT_ROPE_PLAIN = 0,
  ATTUNE_RT_ROPE_LLAMA3 = 1
} attune_rt_rope_scaling;

typedef struct attune_rt attune_rt; /* an open table and its dispatch state */

/* What one call ran. The strings belong to the attune_rt and live until attune_rt_close. */
typedef struct attune_rt_dispatch {
  int tuned; /* 1: a table row ran; 0: the baseline */
  int row;   /* that row's number (1-based, as attune_rt_row counts); 0: the baseline */
  const char*
      why; /* "hit", "hit: m=3 in bucket [1, 16]", "miss: no row for this shape",
              "miss: the table was tuned for another device", "row refused at first use: ..." */
  const char*
      problem; /* the call's problem, canonical text ("gemm:bias=0,dtype=bf16,k=4096,m=1,n=4096") */
  const char* backend; /* "cuda" */
  const char* config;  /* the config that ran, canonical text (the row's config on a hit) */
  const char*
      kernels; /* the kernels launched, ';'-separated; cuBLASLt: "cublasLtMatmul algo=.. tile=.." */
  const char* cache_key; /* the compile cache key of the cubin that ran; "" for cuBLASLt */
} attune_rt_dispatch;

typedef struct attune_rt_counters {
  uint64_t hits;       /* calls that ran a table row */
  uint64_t misses;     /* calls that ran the baseline */
  uint64_t shapes;     /* distinct shapes called */
  int device_mismatch; /* 1: the table's device key is not this device's; every call runs the
                          baseline */
} attune_rt_counters;

/* One row of the open table, for attune verify. Strings live until attune_rt_close. */
typedef struct attune_rt_row {
  const char* op;      /* "gemm", "rmsnorm" */
  const char* dtype;   /* "bf16", "fp16" */
  const char* problem; /* the row's problem; a bucket row's has no axis attribute */
  const char* backend;
  const char* config;
  double median_us; /* recorded deploy-regime time (a bucket: at its worst-regret point) */
  double baseline_us;
  int bucketed;          /* 1: the row answers axis values lo..hi */
  const char* axis;      /* "m", "rows"; "" when exact */
  int64_t lo, hi;        /* exact: both the row's axis value */
  const int64_t* points; /* bucket: the measured axis values, ascending */
  size_t point_count;
  const double* point_us; /* bucket: the row's recorded time at each point; NULL: not recorded */
  const double* baseline_point_us; /* bucket: the baseline's recorded time at each point; NULL: not
                                      recorded */
} attune_rt_row;

/* Timing of the runtime's own entry point in the deploy regime. */
typedef struct attune_rt_timing {
  double median_us, min_us, max_us;
  double noise; /* relative standard error of the median */
  int samples;
  attune_rt_dispatch dispatch; /* what the timed calls ran */
} attune_rt_timing;

ATTUNE_RT_API int attune_rt_abi_version(void);

/* Opens table_path (NULL or "": no table, every call runs the baseline) for CUDA device `device`
 * (-1: $ATTUNE_DEVICE, else 0). The table is validated whole (format, version, every row, every
 * row's config planned); any violation refuses it with ATTUNE_RT_BAD_TABLE and nothing is kept.
 * A table tuned for a device whose fingerprint key differs is accepted with one stderr warning,
 * and every call then runs the baseline. Cubins: the directory "<table_path>.cubin/" when it
 * exists (attune export may ship one; compiled kernels are added to it when it is writable), else
 * the user cache ($ATTUNE_CACHE_DIR, else $XDG_CACHE_HOME/attune/cubin, else
 * ~/.cache/attune/cubin). */
ATTUNE_RT_API int attune_rt_open(const char* table_path, int device, attune_rt** out);
ATTUNE_RT_API void attune_rt_close(attune_rt* rt);

/* Why the calling thread's last failing call failed ("" when none). Valid until its next call. */
ATTUNE_RT_API const char* attune_rt_last_error(void);

/* Row-major C[M,N] = A[M,K] . B[N,K]^T (+ bias[N] when bias is not NULL), fp32 accumulation, on
 * `stream` (a cudaStream_t / CUstream; NULL: the legacy default stream). Enqueues and returns;
 * nothing is synchronized. Pointers: device memory, 16-byte aligned (cuBLASLt's heuristic
 * assumes cudaMalloc's 256-byte alignment). `dispatched` (may be NULL) receives what ran. */
ATTUNE_RT_API int attune_rt_gemm(attune_rt* rt, int64_t m, int64_t n, int64_t k, int dtype,
                                 const void* a, const void* b, void* c, const void* bias,
                                 void* stream, const attune_rt_dispatch** dispatched);

/* The gated MLP's gate/up projection with SiLU * mul in its epilogue: w [2 * inter, k] is the
 * gate's rows then the up's, c [m, inter] = silu(a . gate^T) * (a . up^T). The problem is gemm
 * with silu_mul=1 and n = 2 * inter. Pointers 16-byte aligned. */
ATTUNE_RT_API int attune_rt_gemm_silu_mul(attune_rt* rt, int64_t m, int64_t inter, int64_t k,
                                          int dtype, const void* a, const void* w, void* c,
                                          void* stream, const attune_rt_dispatch** dispatched);

/* A projection with its layer neighbours folded in (Runtime::gemm_fused): rms_norm (0|1): each
 * row of a scaled by rsqrt(mean(row^2) + 1e-6), the norm's weight folded into w's columns
 * beforehand; residual (may be NULL): c = ... + residual [m, n] (may be c); silu_mul (0|1): w is
 * the gate's n / 2 rows then the up's, c [m, n / 2]. Pointers 16-byte aligned. */
ATTUNE_RT_API int attune_rt_gemm_fused(attune_rt* rt, int64_t m, int64_t n, int64_t k, int dtype,
                                       const void* a, const void* w, void* c, int rms_norm,
                                       const void* residual, int silu_mul, void* stream,
                                       const attune_rt_dispatch** dispatched);

/* RMSNorm over `rows` rows of `hidden`: y = h * rsqrt(mean(h^2) + 1e-6) * w, where h = x, or with
 * a residual (r not NULL) h = x + r, which is also written to h_out (required then). */
ATTUNE_RT_API int attune_rt_rmsnorm(attune_rt* rt, int64_t rows, int64_t hidden, int dtype, void* y,
                                    void* h_out, const void* x, const void* r, const void* w,
                                    void* stream, const attune_rt_dispatch** dispatched);

/* Decode attention over a KV cache, PyTorch SDPA's layout, contiguous: q and o [batch, q_heads,
 * q_len, head], k and v [batch, kv_heads, kv, head]; o = softmax(q . k^T / sqrt(head)) . v with
 * query head h reading KV head h / (q_heads / kv_heads). The cache's last q_len positions are the
 * new tokens, causal among themselves: token i sees positions 0 .. kv - q_len + i. head 64, 128
 * or 256; q_heads a multiple of kv_heads; 1 <= q_len <= min(8, kv). Pointers 16-byte aligned. */
ATTUNE_RT_API int attune_rt_attention_decode(attune_rt* rt, int64_t batch, int64_t kv, int64_t head,
                                             int64_t q_heads, int64_t kv_heads, int64_t q_len,
                                             int dtype, void* o, const void* q, const void* k,
                                             const void* v, void* stream,
                                             const attune_rt_dispatch** dispatched);

/* Causal prefill attention over a whole prompt, PyTorch SDPA's layout, contiguous: q and o
 * [batch, q_heads, seq, head], k and v [batch, kv_heads, seq, head]; o = softmax(q . k^T /
 * sqrt(head)) . v, query token i seeing keys 0 .. i, query head h reading KV head
 * h / (q_heads / kv_heads). head 64 or 128; q_heads a multiple of kv_heads; seq <= 16384.
 * Pointers 16-byte aligned. */
ATTUNE_RT_API int attune_rt_attention_prefill(attune_rt* rt, int64_t seq, int64_t batch,
                                              int64_t head, int64_t q_heads, int64_t kv_heads,
                                              int dtype, void* o, const void* q, const void* k,
                                              const void* v, void* stream,
                                              const attune_rt_dispatch** dispatched);

/* RoPE (rotate-half, as Llama and Qwen3) on the QKV GEMM's output, contiguous: qkv [batch * seq,
 * (q_heads + 2 * kv_heads) * head] (row b * seq + s; its heads q, then k, then v) is written as
 * q [batch, q_heads, seq, head] and into the caches k_cache, v_cache [batch, kv_heads, kv, head] at
 * rows kv - seq .. kv - 1 (no other row is touched; a prefill is kv == seq). Token s of sequence b
 * sits at position kv - seq + s; pair (i, i + head / 2) of a q or k head is rotated by
 * pos * theta^(-2i / head). With q_norm and k_norm ([head] each; both or neither: NULL) each q and
 * k head is first RMS-normalized with its weight, eps 1e-6 (Qwen3). head 64, 128 or 256; q_heads
 * a multiple of kv_heads; seq <= kv. Pointers 16-byte aligned. */
ATTUNE_RT_API int attune_rt_rope(attune_rt* rt, int64_t batch, int64_t seq, int64_t kv,
                                 int64_t q_heads, int64_t kv_heads, int64_t head, int64_t theta,
                                 int dtype, void* q, void* k_cache, void* v_cache, const void* qkv,
                                 const void* q_norm, const void* k_norm, void* stream,
                                 const attune_rt_dispatch** dispatched);

/* attune_rt_rope with the frequencies' scaling (an attune_rt_rope_scaling; attune_rt_rope is
 * ATTUNE_RT_ROPE_PLAIN): Llama 3.1's layers take ATTUNE_RT_ROPE_LLAMA3, whose rows are the rope
 * problems with llama3_scaling=1. */
ATTUNE_RT_API int attune_rt_rope_scaled(attune_rt* rt, int64_t batch, int64_t seq, int64_t kv,
                                        int64_t q_heads, int64_t kv_heads, int64_t head,
                                        int64_t theta, int dtype, void* q, void* k_cache,
                                        void* v_cache, const void* qkv, const void* q_norm,
                                        const void* k_norm, int scaling, void* stream,
                                        const attune_rt_dispatch** dispatched);

/* The QKV projection with RoPE in its epilogue: qkv = x . w^T (x [batch * seq, hidden], w
 * [(q_heads + 2 * kv_heads) * head, hidden]) rotated as attune_rt_rope_scaled rotates it (the same
 * q, caches, norm weights and scaling), qkv never written. hidden a multiple of 8; pointers
 * 16-byte aligned. */
ATTUNE_RT_API int attune_rt_gemm_rope(attune_rt* rt, int64_t batch, int64_t seq, int64_t kv,
                                      int64_t q_heads, int64_t kv_heads, int64_t head,
                                      int64_t theta, int64_t hidden, int dtype, void* q,
                                      void* k_cache, void* v_cache, const void* x, const void* w,
                                      const void* q_norm, const void* k_norm, int scaling,
                                      void* stream, const attune_rt_dispatch** dispatched);

/* attune_rt_gemm_rope with the input RMSNorm folded in when rms_norm is 1: each row of x scaled
 * by rsqrt(mean(row^2) + 1e-6) before the projection, the norm's weight folded into w's columns
 * beforehand (Runtime::gemm_rope with GemmFusion{rms_norm}). rms_norm 0 is attune_rt_gemm_rope. */
ATTUNE_RT_API int attune_rt_gemm_rope_fused(attune_rt* rt, int64_t batch, int64_t seq, int64_t kv,
                                            int64_t q_heads, int64_t kv_heads, int64_t head,
                                            int64_t theta, int64_t hidden, int dtype, void* q,
                                            void* k_cache, void* v_cache, const void* x,
                                            const void* w, const void* q_norm, const void* k_norm,
                                            int scaling, int rms_norm, void* stream,
                                            const attune_rt_dispatch** dispatched);

/* The gated MLP's activation on the fused gate/up GEMM's output, contiguous: gu [rows, 2 * inter]
 * (gate, then up), y [rows, inter] = silu(gate) * up with silu(g) = g / (1 + exp(-g)). Pointers
 * 16-byte aligned. */
ATTUNE_RT_API int attune_rt_silu_mul(attune_rt* rt, int64_t rows, int64_t inter, int dtype, void* y,
                                     const void* gu, void* stream,
                                     const attune_rt_dispatch** dispatched);

/* What the calling thread's last successful call on rt ran, or NULL. */
ATTUNE_RT_API const attune_rt_dispatch* attune_rt_last_dispatch(const attune_rt* rt);
ATTUNE_RT_API int attune_rt_counters_get(const attune_rt* rt, attune_rt_counters* out);

/* The open table's rows that the runtime dispatches, numbered 1..count in table order. */
ATTUNE_RT_API int attune_rt_row_count(const attune_rt* rt);
ATTUNE_RT_API int attune_rt_row_get(const attune_rt* rt, int row, attune_rt_row* out);

/* The timing hook of attune verify: allocates random inputs for `problem` (canonical text as in
 * the table, e.g. "gemm:bias=0,dtype=bf16,k=4096,m=8,n=4096"), calls the public entry point
 * (attune_rt_gemm / _rmsnorm / _attention_decode / _attention_prefill / _rope / _silu_mul, the
 * production path)
 * on a stream of its own, and times it with the tuner's own deploy-regime timing
 * (cuda::time_kernel, the function the recorded times came from): warm-up calls (first-use compile
 * and workspace outside the samples), then per sample an L2 flush and CUDA events around one replay
 * of the entry point's call captured as a CUDA graph (a direct call when it cannot be captured); at
 * least 10 samples, until the median's noise is under 0.5% or 1 s. The calls count as hits or
 * misses like any. */
ATTUNE_RT_API int attune_rt_time_problem(attune_rt* rt, const char* problem, attune_rt_timing* out);
/* The same for a row (1-based): an exact row at its own shape; a bucket row at axis value
 * `axis_value` (0: the bucket's first measured point), which must lie in [lo, hi]. */
ATTUNE_RT_API int attune_rt_time_row(attune_rt* rt, int row, int64_t axis_value,
                                     attune_rt_timing* out);

#ifdef __cplusplus
}
#endif

#endif /* ATTUNE_RUNTIME_C_H_ */
