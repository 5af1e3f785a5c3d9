// The state behind attune::rt::Runtime (and the C API's handle): the Selector's decision and the
// Executor's launches. Shared by the C++ and C entry points, so both run the same code.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>

#include "attune/runtime.h"
#include "runtime/cuda/executor.h"
#include "runtime/selector.h"

namespace attune::rt {

struct Runtime::Impl {
  Runtime* self = nullptr;
  // Declared first, destroyed last: slots point into the executor's launches.
  std::unique_ptr<runtime::Executor> executor;
  std::unique_ptr<runtime::Selector> selector;
  // The entry points' ops in the dispatch key: their signatures' runtime keys (core/op.h).
  runtime::OpKind gemm_kind{}, rmsnorm_kind{}, attention_decode_kind{}, attention_prefill_kind{},
      rope_kind{}, silu_mul_kind{}, gemm_rope_kind{};
  std::uint8_t gemm_bias_bit = 0, gemm_silu_mul_bit = 0;  // ShapeKey::flags bits of gemm's flags
  std::uint8_t gemm_rms_norm_bit = 0, gemm_residual_bit = 0;
  std::uint8_t rope_norm_bit = 0, rope_llama3_bit = 0;            // of rope's
  std::uint8_t gemm_rope_norm_bit = 0, gemm_rope_llama3_bit = 0;  // and of gemm_rope's
  std::uint8_t gemm_rope_rms_norm_bit = 0;

  // The calls behind the public entry points; *record (when given) receives what ran.
  Status gemm(std::int64_t m, std::int64_t n, std::int64_t k, DType dtype, const void* a,
              const void* b, void* c, const void* bias, void* stream,
              const runtime::DispatchRecord** record);
  Status rmsnorm(std::int64_t rows, std::int64_t hidden, DType dtype, void* y, void* h_out,
                 const void* x, const void* r, const void* w, void* stream,
                 const runtime::DispatchRecord** record);
  Status attention_decode(std::int64_t batch, std::int64_t kv, std::int64_t head,
                          std::int64_t q_heads, std::int64_t kv_heads, std::int64_t q_len,
                          DType dtype, void* o, const void* q, const void* k, const void* v,
                          void* stream, const runtime::DispatchRecord** record);
  Status attention_prefill(std::int64_t seq, std::int64_t batch, std::int64_t head,
                           std::int64_t q_heads, std::int64_t kv_heads, DType dtype, void* o,
                           const void* q, const void* k, const void* v, void* stream,
                           const runtime::DispatchRecord** record);
  Status rope(std::int64_t batch, std::int64_t seq, std::int64_t kv, std::int64_t q_heads,
              std::int64_t kv_heads, std::int64_t head, std::int64_t theta, DType dtype, void* q,
              void* k_cache, void* v_cache, const void* qkv, const void* q_norm, const void* k_norm,
              RopeScaling scaling, void* stream, const runtime::DispatchRecord** record);
  Status gemm_rope(std::int64_t batch, std::int64_t seq, std::int64_t kv, std::int64_t q_heads,
                   std::int64_t kv_heads, std::int64_t head, std::int64_t theta,
                   std::int64_t hidden, DType dtype, void* q, void* k_cache, void* v_cache,
                   const void* x, const void* w, const void* q_norm, const void* k_norm,
                   RopeScaling scaling, bool rms_norm, void* stream,
                   const runtime::DispatchRecord** record);
  Status gemm_silu_mul(std::int64_t m, std::int64_t inter, std::int64_t k, DType dtype,
                       const void* a, const void* w, void* c, void* stream,
                       const runtime::DispatchRecord** record);
  Status gemm_fused(std::int64_t m, std::int64_t n, std::int64_t k, DType dtype, const void* a,
                    const void* w, void* c, const Runtime::GemmFusion& fusion, void* stream,
                    const runtime::DispatchRecord** record);
  Status silu_mul(std::int64_t rows, std::int64_t inter, DType dtype, void* y, const void* gu,
                  void* stream, const runtime::DispatchRecord** record);
  // What the entry points share once their arguments are checked: the Selector's slot for `key`,
  // its launch (built on the shape's first call), enqueued with `args`; records what ran.
  Status dispatch(const runtime::ShapeKey& key, kernels::PlanArgs& args, void* stream,
                  const runtime::DispatchRecord** record);
  // This thread's last dispatch on this runtime, or null.
  const runtime::DispatchRecord* last() const;
  // The timing hook: `problem` through the public entry point, deploy regime.
  Status time(const Problem& problem, Timing* out, const runtime::DispatchRecord** record);
  // What time() keeps from one call to the next, as a tuning worker keeps them: its stream and
  // its L2 flush, made on the first call. Made anew per call, every row of an `attune verify`
  // after the first timed 0.3-0.5 us slower than recorded on the H200, whatever the order of
  // the rows. Declared after the executor: destroyed first.
  struct TimingState;
  std::mutex timing_mutex;
  std::shared_ptr<TimingState> timing;
};

// An attune::Error as a public Status; errors of kind internal are reported as `internal_as`
// (CUDA calls report their failures as internal errors).
Status to_status(const Error& e, Code internal_as);

}  // namespace attune::rt
