// The C API: the C++ Runtime behind an opaque handle, errors as codes plus a thread-local message,
// and no exception crossing the boundary.
#include <exception>
#include <string>
#include <vector>

#include "attune/runtime_c.h"
#include "runtime/cuda/runtime_impl.h"

using attune::rt::Code;
using attune::rt::DType;
using attune::rt::Runtime;
using attune::rt::Status;

struct attune_rt {
  std::unique_ptr<Runtime> runtime;
  // attune_rt_row views and the strings they point to (built at open, never changed).
  struct RowStrings {
    std::string op, dtype, problem, axis;
  };
  std::vector<RowStrings> strings;
  std::vector<attune_rt_row> rows;
};

namespace {

thread_local std::string tls_error;

int fail(const Status& s) {
  tls_error = s.message();
  return static_cast<int>(s.code());
}
int fail(Code code, std::string message) {
  return fail(Status(code, std::move(message)));
}
int done(const Status& s) {
  if (!s.ok()) return fail(s);
  return ATTUNE_RT_OK;
}

// Runs f, turning an escaping exception (bad_alloc, ...) into ATTUNE_RT_INTERNAL.
template <typename F>
int guarded(F&& f) {
  try {
    return f();
  } catch (const std::exception& e) {
    return fail(Code::kInternal, std::string("libattune-rt: ") + e.what());
  } catch (...) {
    return fail(Code::kInternal, "libattune-rt: unknown exception");
  }
}

bool dtype_ok(int d) {
  return d == ATTUNE_RT_BF16 || d == ATTUNE_RT_FP16;
}

const attune::runtime::IndexedRow* row_at(const attune_rt* rt, int row) {
  const auto& rows = rt->runtime->impl().selector->index().rows();
  if (row < 1 || static_cast<std::size_t>(row) > rows.size()) return nullptr;
  return &rows[static_cast<std::size_t>(row) - 1];
}

int time_into(attune_rt* rt, const attune::Problem& problem, attune_rt_timing* out) {
  attune::rt::Timing t;
  const attune::runtime::DispatchRecord* rec = nullptr;
  Status s = rt->runtime->impl().time(problem, &t, &rec);
  if (!s.ok()) return fail(s);
  *out = attune_rt_timing{t.median_us, t.min_us,  t.max_us,
                          t.noise,     t.samples, rec ? rec->c : attune_rt_dispatch{}};
  return ATTUNE_RT_OK;
}

// attune_rt_rope and attune_rt_rope_scaled, named `what` in their errors.
int rope_c(const char* what, attune_rt* rt, int64_t batch, int64_t seq, int64_t kv, int64_t q_heads,
           int64_t kv_heads, int64_t head, int64_t theta, int dtype, void* q, void* k_cache,
           void* v_cache, const void* qkv, const void* q_norm, const void* k_norm, int scaling,
           void* stream, const attune_rt_dispatch** dispatched) {
  return guarded([&]() -> int {
    if (!rt) return fail(Code::kInvalidArgument, std::string(what) + ": rt is null");
    if (!dtype_ok(dtype))
      return fail(Code::kInvalidArgument,
                  std::string(what) + ": dtype must be ATTUNE_RT_BF16 or ATTUNE_RT_FP16");
    if (scaling != ATTUNE_RT_ROPE_PLAIN && scaling != ATTUNE_RT_ROPE_LLAMA3)
      return fail(
          Code::kInvalidArgument,
          std::string(what) + ": scaling must be ATTUNE_RT_ROPE_PLAIN or ATTUNE_RT_ROPE_LLAMA3");
    const attune::runtime::DispatchRecord* rec = nullptr;
    Status s = rt->runtime->impl().rope(batch, seq, kv, q_heads, kv_heads, head, theta,
                                        static_cast<DType>(dtype), q, k_cache, v_cache, qkv, q_norm,
                                        k_norm, static_cast<attune::rt::RopeScaling>(scaling),
                                        stream, dispatched ? &rec : nullptr);
    if (dispatched) *dispatched = rec ? &rec->c : nullptr;
    return done(s);
  });
}

// attune_rt_gemm_rope and attune_rt_gemm_rope_fused, their errors naming `fn`.
int gemm_rope_c(const char* fn, attune_rt* rt, int64_t batch, int64_t seq, int64_t kv,
                int64_t q_heads, int64_t kv_heads, int64_t head, int64_t theta, int64_t hidden,
                int dtype, void* q, void* k_cache, void* v_cache, const void* x, const void* w,
                const void* q_norm, const void* k_norm, int scaling, int rms_norm, void* stream,
                const attune_rt_dispatch** dispatched) {
  return guarded([&]() -> int {
    const std::string name = fn;
    if (!rt) return fail(Code::kInvalidArgument, name + ": rt is null");
    if (!dtype_ok(dtype))
      return fail(Code::kInvalidArgument,
                  name + ": dtype must be ATTUNE_RT_BF16 or ATTUNE_RT_FP16");
    if (scaling != ATTUNE_RT_ROPE_PLAIN && scaling != ATTUNE_RT_ROPE_LLAMA3)
      return fail(Code::kInvalidArgument,
                  name + ": scaling must be ATTUNE_RT_ROPE_PLAIN or ATTUNE_RT_ROPE_LLAMA3");
    if (rms_norm != 0 && rms_norm != 1)
      return fail(Code::kInvalidArgument, name + ": rms_norm is 0 or 1");
    const attune::runtime::DispatchRecord* rec = nullptr;
    Status s = rt->runtime->impl().gemm_rope(
        batch, seq, kv, q_heads, kv_heads, head, theta, hidden, static_cast<DType>(dtype), q,
        k_cache, v_cache, x, w, q_norm, k_norm, static_cast<attune::rt::RopeScaling>(scaling),
        rms_norm == 1, stream, dispatched ? &rec : nullptr);
    if (dispatched) *dispatched = rec ? &rec->c : nullptr;
    return done(s);
  });
}

}  // namespace

extern "C" {

ATTUNE_RT_API int attune_rt_abi_version(void) {
  return ATTUNE_RT_ABI_VERSION;
}

ATTUNE_RT_API const char* attune_rt_last_error(void) {
  return tls_error.c_str();
}

ATTUNE_RT_API int attune_rt_open(const char* table_path, int device, attune_rt** out) {
  return guarded([&]() -> int {
    if (!out) return fail(Code::kInvalidArgument, "attune_rt_open: out is null");
    *out = nullptr;
    auto h = std::make_unique<attune_rt>();
    attune::rt::Options options;
    options.device = device;
    Status s = Runtime::open(table_path ? table_path : "", &h->runtime, options);
    if (!s.ok()) return fail(s);
    const auto& rows = h->runtime->impl().selector->index().rows();
    h->strings.reserve(rows.size());
    for (const auto& r : rows) {
      const std::string* dtype = r.row->problem.attr("dtype");
      h->strings.push_back({r.row->problem.op(), dtype ? *dtype : "", r.row->problem.text(),
                            r.bucketed ? attune::runtime::signature_of(r.op)->sizes.front() : ""});
    }
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const auto& r = rows[i];
      const auto& st = h->strings[i];
      attune_rt_row v{};
      v.op = st.op.c_str();
      v.dtype = st.dtype.c_str();
      v.problem = st.problem.c_str();
      v.backend = r.row->backend.c_str();
      v.config = r.row->config.c_str();
      v.median_us = r.row->median_us;
      v.baseline_us = r.row->baseline_us;
      v.bucketed = r.bucketed ? 1 : 0;
      v.axis = st.axis.c_str();
      v.lo = r.lo;
      v.hi = r.hi;
      v.points = r.bucketed ? r.row->bucket->points.data() : nullptr;
      v.point_count = r.bucketed ? r.row->bucket->points.size() : 0;
      const bool timed = r.bucketed && !r.row->bucket->point_us.empty();
      v.point_us = timed ? r.row->bucket->point_us.data() : nullptr;
      v.baseline_point_us = timed ? r.row->bucket->baseline_point_us.data() : nullptr;
      h->rows.push_back(v);
    }
    *out = h.release();
    return ATTUNE_RT_OK;
  });
}

ATTUNE_RT_API void attune_rt_close(attune_rt* rt) {
  delete rt;
}

ATTUNE_RT_API int attune_rt_gemm(attune_rt* rt, int64_t m, int64_t n, int64_t k, int dtype,
                                 const void* a, const void* b, void* c, const void* bias,
                                 void* stream, const attune_rt_dispatch** dispatched) {
  return guarded([&]() -> int {
    if (!rt) return fail(Code::kInvalidArgument, "attune_rt_gemm: rt is null");
    if (!dtype_ok(dtype))
      return fail(Code::kInvalidArgument,
                  "attune_rt_gemm: dtype must be ATTUNE_RT_BF16 or ATTUNE_RT_FP16");
    const attune::runtime::DispatchRecord* rec = nullptr;
    Status s = rt->runtime->impl().gemm(m, n, k, static_cast<DType>(dtype), a, b, c, bias, stream,
                                        dispatched ? &rec : nullptr);
    if (dispatched) *dispatched = rec ? &rec->c : nullptr;
    return done(s);
  });
}

ATTUNE_RT_API int attune_rt_gemm_silu_mul(attune_rt* rt, int64_t m, int64_t inter, int64_t k,
                                          int dtype, const void* a, const void* w, void* c,
                                          void* stream, const attune_rt_dispatch** dispatched) {
  return guarded([&]() -> int {
    if (!rt) return fail(Code::kInvalidArgument, "attune_rt_gemm_silu_mul: rt is null");
    if (!dtype_ok(dtype))
      return fail(Code::kInvalidArgument,
                  "attune_rt_gemm_silu_mul: dtype must be ATTUNE_RT_BF16 or ATTUNE_RT_FP16");
    const attune::runtime::DispatchRecord* rec = nullptr;
    Status s = rt->runtime->impl().gemm_silu_mul(m, inter, k, static_cast<DType>(dtype), a, w, c,
                                                 stream, dispatched ? &rec : nullptr);
    if (dispatched) *dispatched = rec ? &rec->c : nullptr;
    return done(s);
  });
}

ATTUNE_RT_API int attune_rt_gemm_fused(attune_rt* rt, int64_t m, int64_t n, int64_t k, int dtype,
                                       const void* a, const void* w, void* c, int rms_norm,
                                       const void* residual, int silu_mul, void* stream,
                                       const attune_rt_dispatch** dispatched) {
  return guarded([&]() -> int {
    if (!rt) return fail(Code::kInvalidArgument, "attune_rt_gemm_fused: rt is null");
    if (!dtype_ok(dtype))
      return fail(Code::kInvalidArgument,
                  "attune_rt_gemm_fused: dtype must be ATTUNE_RT_BF16 or ATTUNE_RT_FP16");
    if ((rms_norm != 0 && rms_norm != 1) || (silu_mul != 0 && silu_mul != 1))
      return fail(Code::kInvalidArgument, "attune_rt_gemm_fused: rms_norm and silu_mul are 0 or 1");
    const attune::runtime::DispatchRecord* rec = nullptr;
    Status s = rt->runtime->impl().gemm_fused(m, n, k, static_cast<DType>(dtype), a, w, c,
                                              {rms_norm == 1, residual, silu_mul == 1}, stream,
                                              dispatched ? &rec : nullptr);
    if (dispatched) *dispatched = rec ? &rec->c : nullptr;
    return done(s);
  });
}

ATTUNE_RT_API int attune_rt_attention_decode(attune_rt* rt, int64_t batch, int64_t kv, int64_t head,
                                             int64_t q_heads, int64_t kv_heads, int64_t q_len,
                                             int dtype, void* o, const void* q, const void* k,
                                             const void* v, void* stream,
                                             const attune_rt_dispatch** dispatched) {
  return guarded([&]() -> int {
    if (!rt) return fail(Code::kInvalidArgument, "attune_rt_attention_decode: rt is null");
    if (!dtype_ok(dtype))
      return fail(Code::kInvalidArgument,
                  "attune_rt_attention_decode: dtype must be ATTUNE_RT_BF16 or ATTUNE_RT_FP16");
    const attune::runtime::DispatchRecord* rec = nullptr;
    Status s = rt->runtime->impl().attention_decode(batch, kv, head, q_heads, kv_heads, q_len,
                                                    static_cast<DType>(dtype), o, q, k, v, stream,
                                                    dispatched ? &rec : nullptr);
    if (dispatched) *dispatched = rec ? &rec->c : nullptr;
    return done(s);
  });
}

ATTUNE_RT_API int attune_rt_attention_prefill(attune_rt* rt, int64_t seq, int64_t batch,
                                              int64_t head, int64_t q_heads, int64_t kv_heads,
                                              int dtype, void* o, const void* q, const void* k,
                                              const void* v, void* stream,
                                              const attune_rt_dispatch** dispatched) {
  return guarded([&]() -> int {
    if (!rt) return fail(Code::kInvalidArgument, "attune_rt_attention_prefill: rt is null");
    if (!dtype_ok(dtype))
      return fail(Code::kInvalidArgument,
                  "attune_rt_attention_prefill: dtype must be ATTUNE_RT_BF16 or ATTUNE_RT_FP16");
    const attune::runtime::DispatchRecord* rec = nullptr;
    Status s = rt->runtime->impl().attention_prefill(seq, batch, head, q_heads, kv_heads,
                                                     static_cast<DType>(dtype), o, q, k, v, stream,
                                                     dispatched ? &rec : nullptr);
    if (dispatched) *dispatched = rec ? &rec->c : nullptr;
    return done(s);
  });
}

ATTUNE_RT_API int attune_rt_rope(attune_rt* rt, int64_t batch, int64_t seq, int64_t kv,
                                 int64_t q_heads, int64_t kv_heads, int64_t head, int64_t theta,
                                 int dtype, void* q, void* k_cache, void* v_cache, const void* qkv,
                                 const void* q_norm, const void* k_norm, void* stream,
                                 const attune_rt_dispatch** dispatched) {
  return rope_c("attune_rt_rope", rt, batch, seq, kv, q_heads, kv_heads, head, theta, dtype, q,
                k_cache, v_cache, qkv, q_norm, k_norm, ATTUNE_RT_ROPE_PLAIN, stream, dispatched);
}

ATTUNE_RT_API int attune_rt_rope_scaled(attune_rt* rt, int64_t batch, int64_t seq, int64_t kv,
                                        int64_t q_heads, int64_t kv_heads, int64_t head,
                                        int64_t theta, int dtype, void* q, void* k_cache,
                                        void* v_cache, const void* qkv, const void* q_norm,
                                        const void* k_norm, int scaling, void* stream,
                                        const attune_rt_dispatch** dispatched) {
  return rope_c("attune_rt_rope_scaled", rt, batch, seq, kv, q_heads, kv_heads, head, theta, dtype,
                q, k_cache, v_cache, qkv, q_norm, k_norm, scaling, stream, dispatched);
}

ATTUNE_RT_API int attune_rt_gemm_rope(attune_rt* rt, int64_t batch, int64_t seq, int64_t kv,
                                      int64_t q_heads, int64_t kv_heads, int64_t head,
                                      int64_t theta, int64_t hidden, int dtype, void* q,
                                      void* k_cache, void* v_cache, const void* x, const void* w,
                                      const void* q_norm, const void* k_norm, int scaling,
                                      void* stream, const attune_rt_dispatch** dispatched) {
  return gemm_rope_c("attune_rt_gemm_rope", rt, batch, seq, kv, q_heads, kv_heads, head, theta,
                     hidden, dtype, q, k_cache, v_cache, x, w, q_norm, k_norm, scaling, 0, stream,
                     dispatched);
}

ATTUNE_RT_API int attune_rt_gemm_rope_fused(attune_rt* rt, int64_t batch, int64_t seq, int64_t kv,
                                            int64_t q_heads, int64_t kv_heads, int64_t head,
                                            int64_t theta, int64_t hidden, int dtype, void* q,
                                            void* k_cache, void* v_cache, const void* x,
                                            const void* w, const void* q_norm, const void* k_norm,
                                            int scaling, int rms_norm, void* stream,
                                            const attune_rt_dispatch** dispatched) {
  return gemm_rope_c("attune_rt_gemm_rope_fused", rt, batch, seq, kv, q_heads, kv_heads, head,
                     theta, hidden, dtype, q, k_cache, v_cache, x, w, q_norm, k_norm, scaling,
                     rms_norm, stream, dispatched);
}

ATTUNE_RT_API int attune_rt_silu_mul(attune_rt* rt, int64_t rows, int64_t inter, int dtype, void* y,
                                     const void* gu, void* stream,
                                     const attune_rt_dispatch** dispatched) {
  return guarded([&]() -> int {
    if (!rt) return fail(Code::kInvalidArgument, "attune_rt_silu_mul: rt is null");
    if (!dtype_ok(dtype))
      return fail(Code::kInvalidArgument,
                  "attune_rt_silu_mul: dtype must be ATTUNE_RT_BF16 or ATTUNE_RT_FP16");
    const attune::runtime::DispatchRecord* rec = nullptr;
    Status s = rt->runtime->impl().silu_mul(rows, inter, static_cast<DType>(dtype), y, gu, stream,
                                            dispatched ? &rec : nullptr);
    if (dispatched) *dispatched = rec ? &rec->c : nullptr;
    return done(s);
  });
}

ATTUNE_RT_API int attune_rt_rmsnorm(attune_rt* rt, int64_t rows, int64_t hidden, int dtype, void* y,
                                    void* h_out, const void* x, const void* r, const void* w,
                                    void* stream, const attune_rt_dispatch** dispatched) {
  return guarded([&]() -> int {
    if (!rt) return fail(Code::kInvalidArgument, "attune_rt_rmsnorm: rt is null");
    if (!dtype_ok(dtype))
      return fail(Code::kInvalidArgument,
                  "attune_rt_rmsnorm: dtype must be ATTUNE_RT_BF16 or ATTUNE_RT_FP16");
    const attune::runtime::DispatchRecord* rec = nullptr;
    Status s = rt->runtime->impl().rmsnorm(rows, hidden, static_cast<DType>(dtype), y, h_out, x, r,
                                           w, stream, dispatched ? &rec : nullptr);
    if (dispatched) *dispatched = rec ? &rec->c : nullptr;
    return done(s);
  });
}

ATTUNE_RT_API const attune_rt_dispatch* attune_rt_last_dispatch(const attune_rt* rt) {
  if (!rt) return nullptr;
  const auto* rec = rt->runtime->impl().last();
  return rec ? &rec->c : nullptr;
}

ATTUNE_RT_API int attune_rt_counters_get(const attune_rt* rt, attune_rt_counters* out) {
  return guarded([&]() -> int {
    if (!rt || !out)
      return fail(Code::kInvalidArgument, "attune_rt_counters_get: rt and out are required");
    attune::rt::Counters c = rt->runtime->counters();
    *out = attune_rt_counters{c.hits, c.misses, c.shapes, c.device_mismatch ? 1 : 0};
    return ATTUNE_RT_OK;
  });
}

ATTUNE_RT_API int attune_rt_row_count(const attune_rt* rt) {
  return rt ? static_cast<int>(rt->rows.size()) : 0;
}

ATTUNE_RT_API int attune_rt_row_get(const attune_rt* rt, int row, attune_rt_row* out) {
  if (!rt || !out)
    return fail(Code::kInvalidArgument, "attune_rt_row_get: rt and out are required");
  if (row < 1 || static_cast<std::size_t>(row) > rt->rows.size())
    return fail(Code::kInvalidArgument, "attune_rt_row_get: row " + std::to_string(row) +
                                            " is not in 1.." + std::to_string(rt->rows.size()));
  *out = rt->rows[static_cast<std::size_t>(row) - 1];
  return ATTUNE_RT_OK;
}

ATTUNE_RT_API int attune_rt_time_problem(attune_rt* rt, const char* problem,
                                         attune_rt_timing* out) {
  return guarded([&]() -> int {
    if (!rt || !problem || !out)
      return fail(Code::kInvalidArgument,
                  "attune_rt_time_problem: rt, problem and out are required");
    auto p = attune::Problem::parse(problem);
    if (!p) return fail(Code::kInvalidArgument, p.error().message());
    return time_into(rt, *p, out);
  });
}

ATTUNE_RT_API int attune_rt_time_row(attune_rt* rt, int row, int64_t axis_value,
                                     attune_rt_timing* out) {
  return guarded([&]() -> int {
    if (!rt || !out)
      return fail(Code::kInvalidArgument, "attune_rt_time_row: rt and out are required");
    const auto* r = row_at(rt, row);
    if (!r)
      return fail(Code::kInvalidArgument,
                  "attune_rt_time_row: row " + std::to_string(row) + " is not in the table");
    attune::Problem p = r->row->problem;
    if (r->bucketed) {
      const int64_t v = axis_value ? axis_value : r->row->bucket->points.front();
      if (v < r->lo || v > r->hi)
        return fail(Code::kInvalidArgument,
                    "attune_rt_time_row: " + std::to_string(v) + " is outside " + r->label);
      auto attrs = p.attrs();
      attrs[attune::runtime::signature_of(r->op)->sizes.front()] = std::to_string(v);
      p = attune::Problem(p.op(), std::move(attrs));
    } else if (axis_value && axis_value != r->lo) {
      return fail(Code::kInvalidArgument, "attune_rt_time_row: " + r->label +
                                              " is exact; axis_value must be 0 or " +
                                              std::to_string(r->lo));
    }
    return time_into(rt, p, out);
  });
}

}  // extern "C"
