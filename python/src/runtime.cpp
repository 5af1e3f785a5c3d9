// attune.Runtime: libattune-rt's C API (include/attune/runtime_c.h) on CUDA arrays. Each entry
// point reads its arrays' pointers and shapes (tensor.h), derives the call's sizes, and makes
// the one C call; the library checks everything else (alignment, the op's rules) and its message
// comes back as attune.Error. The GIL is held throughout: a call only enqueues work (a shape's
// first call also compiles or loads its kernel, once).
//
// The four entry points are vectorcall (METH_FASTCALL | METH_KEYWORDS) method descriptors put on
// the pybind11 class, not pybind11 methods: pybind11's dispatcher builds an argument tuple and a
// keyword dict per call and looks keywords up by C string, which was most of the binding's host
// time (bench/python_decode.py; issue 21 measured 4.07 us over the C API on the H200).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <array>
#include <chrono>
#include <string>
#include <unordered_set>
#include <vector>

#include "attune/runtime_c.h"
#include "bindings.h"
#include "tensor.h"

namespace attune::py {

namespace pyb = pybind11;

namespace {

std::string code_name(int status) {
  switch (status) {
    case ATTUNE_RT_INVALID_ARGUMENT:
      return "invalid_argument";
    case ATTUNE_RT_BAD_TABLE:
      return "bad_table";
    case ATTUNE_RT_UNSUPPORTED:
      return "unsupported";
    case ATTUNE_RT_CUDA:
      return "cuda";
    default:
      return "internal";
  }
}

[[noreturn]] void raise_status(int status) {
  raise_error(code_name(status), attune_rt_last_error());
}

[[noreturn]] void value_error(const std::string& message) {
  PyErr_SetString(PyExc_ValueError, message.c_str());
  throw pyb::error_already_set();
}

std::string shape_text(const DeviceArray& a) {
  std::string s = "[";
  for (int i = 0; i < a.ndim; ++i) s += (i ? ", " : "") + std::to_string(a.shape[i]);
  return s + "]";
}

// The call's dtype: every array's, bf16 or fp16.
int dtype_of(const char* op, std::initializer_list<const DeviceArray*> arrays) {
  const DeviceArray& first = **arrays.begin();
  for (const DeviceArray* a : arrays) {
    if (!a) continue;
    if (a->type == ElementType::kOther)
      value_error(std::string(op) + ": arrays must be bfloat16 or float16, got " + a->type_name);
    if (a->type != first.type)
      value_error(std::string(op) + ": every array must have one dtype (" + first.type_name +
                  " and " + a->type_name + ")");
  }
  return first.type == ElementType::kBf16 ? ATTUNE_RT_BF16 : ATTUNE_RT_FP16;
}

// With no stream argument: the stream the arrays' __cuda_array_interface__ names (the output's
// first), else the legacy default stream (PyTorch's default stream).
std::intptr_t interface_stream(std::initializer_list<const DeviceArray*> arrays) {
  for (const DeviceArray* a : arrays)
    if (a->has_stream) return a->stream;
  return 0;
}

pyb::object text_or_none(const char* s) {
  return s ? pyb::object(pyb::str(s)) : pyb::object(pyb::none());
}

pyb::dict dispatch_dict(const attune_rt_dispatch& d) {
  pyb::dict out;
  out["tuned"] = d.tuned != 0;
  out["row"] = d.row;
  out["why"] = text_or_none(d.why);
  out["problem"] = text_or_none(d.problem);
  out["backend"] = text_or_none(d.backend);
  out["config"] = text_or_none(d.config);
  std::vector<std::string> kernels;
  if (d.kernels && *d.kernels) {
    std::string all = d.kernels;
    for (std::size_t p = 0;;) {
      const std::size_t q = all.find(';', p);
      kernels.push_back(all.substr(p, q == std::string::npos ? std::string::npos : q - p));
      if (q == std::string::npos) break;
      p = q + 1;
    }
  }
  out["kernels"] = kernels;
  out["cache_key"] = text_or_none(d.cache_key);
  return out;
}

// The parameters of one vectorcall entry point, each positional or keyword, the first `required`
// of them required; an optional one not given reads as None. Its names are interned once, and a
// keyword is matched by pointer first (CPython interns the keywords a call site spells out).
template <std::size_t N>
class Parameters {
 public:
  Parameters(const char* function, const std::array<const char*, N>& names, std::size_t required)
      : function_(function), names_(names), required_(required) {
    for (std::size_t i = 0; i < N; ++i) {
      interned_[i] = PyUnicode_InternFromString(names[i]);
      if (!interned_[i]) throw pyb::error_already_set();  // kept for the life of the process
    }
  }

  // Borrowed references to a call's arguments, in parameter order; raises TypeError, as Python
  // does, for too many, missing, repeated or unknown arguments.
  std::array<PyObject*, N> read(PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) const {
    std::array<PyObject*, N> out{};
    if (nargs > static_cast<Py_ssize_t>(N))
      type_error("takes at most " + std::to_string(N) + " arguments (" + std::to_string(nargs) +
                 " given)");
    for (Py_ssize_t i = 0; i < nargs; ++i) out[i] = args[i];
    const Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t j = 0; j < nkw; ++j) {
      PyObject* key = PyTuple_GET_ITEM(kwnames, j);
      const std::size_t i = index(key);
      if (i == N) {
        const char* k = PyUnicode_AsUTF8(key);
        type_error("got an unexpected keyword argument '" + std::string(k ? k : "?") + "'");
      }
      if (out[i]) type_error("got multiple values for argument '" + std::string(names_[i]) + "'");
      out[i] = args[nargs + j];
    }
    for (std::size_t i = 0; i < N; ++i) {
      if (out[i]) continue;
      if (i < required_) type_error("missing required argument '" + std::string(names_[i]) + "'");
      out[i] = Py_None;
    }
    return out;
  }

 private:
  std::size_t index(PyObject* key) const {
    for (std::size_t i = 0; i < N; ++i)
      if (interned_[i] == key) return i;
    for (std::size_t i = 0; i < N; ++i) {
      const int c = PyUnicode_Compare(key, interned_[i]);
      if (c == -1 && PyErr_Occurred()) throw pyb::error_already_set();
      if (c == 0) return i;
    }
    return N;
  }
  [[noreturn]] void type_error(const std::string& what) const {
    PyErr_SetString(PyExc_TypeError, (std::string(function_) + "() " + what).c_str());
    throw pyb::error_already_set();
  }

  const char* function_;
  std::array<const char*, N> names_;
  std::size_t required_;
  std::array<PyObject*, N> interned_{};
};

// Runs `body` for a vectorcall entry point: None on success, else NULL with the exception set
// (C++ exceptions do not cross into CPython).
template <typename Body>
PyObject* guarded(Body&& body) noexcept {
  try {
    body();
    Py_RETURN_NONE;
  } catch (pyb::error_already_set& e) {
    e.restore();
  } catch (pyb::builtin_exception& e) {
    e.set_error();
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  } catch (...) {
    PyErr_SetString(PyExc_RuntimeError, "attune: unknown C++ exception");
  }
  return nullptr;
}

using FastCall = PyObject* (*)(PyObject*, PyObject* const*, Py_ssize_t, PyObject*);

PyCFunction as_cfunction(FastCall f) {
  // METH_FASTCALL's documented cast, through void(*)(void) so GCC's -Wcast-function-type allows it.
  return reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(f));
}

// One gemm call's arguments for attune_rt_gemm, read and checked.
struct GemmCall {
  std::int64_t m, n, k;
  int dtype;
  const void *a, *w;
  void* c;
  const void* bias;
  std::intptr_t stream;
};

GemmCall decode_gemm(pyb::handle a, pyb::handle w, pyb::handle out, pyb::handle bias,
                     pyb::handle stream) {
  std::intptr_t s = read_stream(stream.ptr(), 0);
  const DeviceArray A = read_array(a.ptr(), "a", s), W = read_array(w.ptr(), "w", s),
                    C = read_array(out.ptr(), "out", s);
  DeviceArray B;
  const bool has_bias = !bias.is_none();
  if (has_bias) B = read_array(bias.ptr(), "bias", s);
  if (stream.is_none()) s = interface_stream({&C, &A, &W});
  const std::int64_t m = A.leading(), k = A.dim(-1), n = W.ndim == 2 ? W.dim(0) : -1;
  if (W.ndim != 2 || W.dim(1) != k || C.leading() != m || C.dim(-1) != n ||
      (has_bias && (B.ndim != 1 || B.dim(0) != n)))
    value_error("gemm: shapes a " + shape_text(A) + ", w " + shape_text(W) + ", out " +
                shape_text(C) + (has_bias ? ", bias " + shape_text(B) : std::string()) +
                " do not fit out[..., N] = a[..., K] . w[N, K]^T + bias[N]");
  const int dtype = dtype_of("gemm", {&A, &W, &C, has_bias ? &B : nullptr});
  return {m, n, k, dtype, A.data, W.data, C.data, has_bias ? B.data : nullptr, s};
}

class Runtime {
 public:
  Runtime(const pyb::object& table, int device) {
    if (!table.is_none()) table_ = pyb::str(pyb::module_::import("os").attr("fspath")(table));
    const int s = attune_rt_open(table_.empty() ? nullptr : table_.c_str(), device, &rt_);
    if (s != ATTUNE_RT_OK) raise_status(s);
  }
  ~Runtime() { close(); }
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  void close() {
    if (rt_) attune_rt_close(rt_);
    rt_ = nullptr;
  }

  // C[M,N] = A[M,K] . W[N,K]^T (+ bias[N]); a and out may have leading dimensions (M is their
  // product), as torch.nn.functional.linear's input and output do.
  void gemm(pyb::handle a, pyb::handle w, pyb::handle out, pyb::handle bias, pyb::handle stream) {
    attune_rt* rt = open_rt();
    const GemmCall g = decode_gemm(a, w, out, bias, stream);
    const attune_rt_dispatch* d = nullptr;
    const int status =
        attune_rt_gemm(rt, g.m, g.n, g.k, g.dtype, g.a, g.w, g.c, g.bias, to_stream(g.stream), &d);
    finish(status, d);
  }

  // y = h * rsqrt(mean(h^2) + 1e-6) * w over the last dimension, with h = x, or h = x + residual
  // (written to h_out) when residual is given.
  void rmsnorm(pyb::handle x, pyb::handle w, pyb::handle out, pyb::handle residual,
               pyb::handle h_out, pyb::handle stream) {
    attune_rt* rt = open_rt();
    std::intptr_t s = read_stream(stream.ptr(), 0);
    const DeviceArray X = read_array(x.ptr(), "x", s), W = read_array(w.ptr(), "w", s),
                      Y = read_array(out.ptr(), "out", s);
    DeviceArray R, H;
    const bool has_r = !residual.is_none(), has_h = !h_out.is_none();
    if (has_r) R = read_array(residual.ptr(), "residual", s);
    if (has_h) H = read_array(h_out.ptr(), "h_out", s);
    if (stream.is_none()) s = interface_stream({&Y, &X, &W});
    const std::int64_t rows = X.leading(), hidden = X.dim(-1);
    auto same = [&](const DeviceArray& a) { return a.leading() == rows && a.dim(-1) == hidden; };
    if (W.ndim != 1 || W.dim(0) != hidden || !same(Y) || (has_r && !same(R)) || (has_h && !same(H)))
      value_error("rmsnorm: shapes x " + shape_text(X) + ", w " + shape_text(W) + ", out " +
                  shape_text(Y) +
                  " do not fit out[..., H] = rmsnorm(x[..., H]) * w[H] (residual "
                  "and h_out shaped as x)");
    const int dtype = dtype_of("rmsnorm", {&X, &W, &Y, has_r ? &R : nullptr, has_h ? &H : nullptr});
    const attune_rt_dispatch* d = nullptr;
    const int status =
        attune_rt_rmsnorm(rt, rows, hidden, dtype, Y.data, has_h ? H.data : nullptr, X.data,
                          has_r ? R.data : nullptr, W.data, to_stream(s), &d);
    finish(status, d);
  }

  // SDPA's layout: q, out [batch, q_heads, q_len, head]; k, v [batch, kv_heads, kv, head].
  void attention_decode(pyb::handle q, pyb::handle k, pyb::handle v, pyb::handle out,
                        pyb::handle stream) {
    attune_rt* rt = open_rt();
    std::intptr_t s = read_stream(stream.ptr(), 0);
    const DeviceArray Q = read_array(q.ptr(), "q", s), K = read_array(k.ptr(), "k", s),
                      V = read_array(v.ptr(), "v", s), O = read_array(out.ptr(), "out", s);
    if (stream.is_none()) s = interface_stream({&O, &Q, &K, &V});
    check_attention("attention_decode", Q, K, V, O);
    const int dtype = dtype_of("attention_decode", {&Q, &K, &V, &O});
    const attune_rt_dispatch* d = nullptr;
    const int status =
        attune_rt_attention_decode(rt, Q.dim(0), K.dim(2), Q.dim(3), Q.dim(1), K.dim(1), Q.dim(2),
                                   dtype, O.data, Q.data, K.data, V.data, to_stream(s), &d);
    finish(status, d);
  }

  // Causal prefill, SDPA's layout: q, out [batch, q_heads, seq, head]; k, v [batch, kv_heads,
  // seq, head].
  void attention_prefill(pyb::handle q, pyb::handle k, pyb::handle v, pyb::handle out,
                         pyb::handle stream) {
    attune_rt* rt = open_rt();
    std::intptr_t s = read_stream(stream.ptr(), 0);
    const DeviceArray Q = read_array(q.ptr(), "q", s), K = read_array(k.ptr(), "k", s),
                      V = read_array(v.ptr(), "v", s), O = read_array(out.ptr(), "out", s);
    if (stream.is_none()) s = interface_stream({&O, &Q, &K, &V});
    check_attention("attention_prefill", Q, K, V, O);
    if (K.dim(2) != Q.dim(2))
      value_error("attention_prefill: q and k must have the same sequence length");
    const int dtype = dtype_of("attention_prefill", {&Q, &K, &V, &O});
    const attune_rt_dispatch* d = nullptr;
    const int status =
        attune_rt_attention_prefill(rt, Q.dim(2), Q.dim(0), Q.dim(3), Q.dim(1), K.dim(1), dtype,
                                    O.data, Q.data, K.data, V.data, to_stream(s), &d);
    finish(status, d);
  }

  pyb::dict counters() const {
    attune_rt_counters c{};
    const int s = attune_rt_counters_get(open_rt(), &c);
    if (s != ATTUNE_RT_OK) raise_status(s);
    pyb::dict out;
    out["hits"] = c.hits;
    out["misses"] = c.misses;
    out["shapes"] = c.shapes;
    out["device_mismatch"] = c.device_mismatch != 0;
    return out;
  }

  pyb::object last_dispatch() const {
    const attune_rt_dispatch* d = attune_rt_last_dispatch(open_rt());
    return d ? pyb::object(dispatch_dict(*d)) : pyb::object(pyb::none());
  }

  // What this Runtime object ran, one entry per distinct launch, in first-call order.
  pyb::list dispatches() const {
    pyb::list out;
    for (const attune_rt_dispatch* d : order_) out.append(dispatch_dict(*d));
    return out;
  }

  pyb::list rows() const {
    attune_rt* rt = open_rt();
    pyb::list out;
    for (int i = 1, n = attune_rt_row_count(rt); i <= n; ++i) {
      attune_rt_row r{};
      const int s = attune_rt_row_get(rt, i, &r);
      if (s != ATTUNE_RT_OK) raise_status(s);
      pyb::dict row;
      row["number"] = i;
      row["op"] = r.op;
      row["dtype"] = r.dtype;
      row["problem"] = r.problem;
      row["backend"] = r.backend;
      row["config"] = r.config;
      row["median_us"] = r.median_us;
      row["baseline_us"] = r.baseline_us;
      row["bucketed"] = r.bucketed != 0;
      row["axis"] = r.axis;
      row["lo"] = r.lo;
      row["hi"] = r.hi;
      out.append(row);
    }
    return out;
  }

  // attune verify's hook: `problem` through the public entry point, deploy regime.
  pyb::dict time_problem(const std::string& problem) {
    attune_rt_timing t{};
    const int s = attune_rt_time_problem(open_rt(), problem.c_str(), &t);
    if (s != ATTUNE_RT_OK) raise_status(s);
    pyb::dict out;
    out["median_us"] = t.median_us;
    out["min_us"] = t.min_us;
    out["max_us"] = t.max_us;
    out["noise"] = t.noise;
    out["samples"] = t.samples;
    out["dispatch"] = dispatch_dict(t.dispatch);
    return out;
  }

  const std::string& table() const { return table_; }

  // The C API alone in a loop, for bench/python_dispatch.py: `calls` attune_rt_gemm calls with
  // these pointers, from C++, on `stream`; returns the seconds they took on the host.
  double c_gemm_loop(std::int64_t m, std::int64_t n, std::int64_t k, int dtype, std::uintptr_t a,
                     std::uintptr_t w, std::uintptr_t c, std::uintptr_t stream, int calls) {
    attune_rt* rt = open_rt();
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) {
      const int s = attune_rt_gemm(rt, m, n, k, dtype, reinterpret_cast<const void*>(a),
                                   reinterpret_cast<const void*>(w), reinterpret_cast<void*>(c),
                                   nullptr, reinterpret_cast<void*>(stream), nullptr);
      if (s != ATTUNE_RT_OK) raise_status(s);
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }

 private:
  attune_rt* open_rt() const {
    if (!rt_) raise_error("invalid_argument", "this attune.Runtime is closed");
    return rt_;
  }
  static void* to_stream(std::intptr_t s) { return reinterpret_cast<void*>(s); }
  static void check_attention(const char* op, const DeviceArray& Q, const DeviceArray& K,
                              const DeviceArray& V, const DeviceArray& O) {
    auto same = [](const DeviceArray& a, const DeviceArray& b) {
      if (a.ndim != b.ndim) return false;
      for (int i = 0; i < a.ndim; ++i)
        if (a.shape[i] != b.shape[i]) return false;
      return true;
    };
    if (Q.ndim != 4 || K.ndim != 4 || !same(K, V) || !same(Q, O) || K.dim(0) != Q.dim(0) ||
        K.dim(3) != Q.dim(3))
      value_error(std::string(op) + ": shapes q " + shape_text(Q) + ", k " + shape_text(K) +
                  ", v " + shape_text(V) + ", out " + shape_text(O) +
                  " do not fit q, out [batch, q_heads, q_len, head] and k, v [batch, kv_heads, "
                  "kv, head]");
  }
  void finish(int status, const attune_rt_dispatch* d) {
    if (status != ATTUNE_RT_OK) raise_status(status);
    // An eager loop repeats one record: it is compared before the set is hashed.
    if (d && d != last_ && seen_.insert(d).second) order_.push_back(d);
    last_ = d;
  }

  std::string table_;
  attune_rt* rt_ = nullptr;
  // Every distinct record a call returned (records live as long as rt_).
  std::unordered_set<const attune_rt_dispatch*> seen_;
  std::vector<const attune_rt_dispatch*> order_;
  const attune_rt_dispatch* last_ = nullptr;  // the last call's record
};

// The Runtime behind a method descriptor's `self` (CPython has checked its type).
Runtime& runtime_of(PyObject* self) {
  return made<Runtime>(pyb::handle(self));
}

PyObject* gemm_entry(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return guarded([&] {
    static const Parameters<5> params("gemm", {"a", "w", "out", "bias", "stream"}, 3);
    const auto p = params.read(args, nargs, kwnames);
    runtime_of(self).gemm(p[0], p[1], p[2], p[3], p[4]);
  });
}

PyObject* rmsnorm_entry(PyObject* self, PyObject* const* args, Py_ssize_t nargs,
                        PyObject* kwnames) {
  return guarded([&] {
    static const Parameters<6> params("rmsnorm", {"x", "w", "out", "residual", "h_out", "stream"},
                                      3);
    const auto p = params.read(args, nargs, kwnames);
    runtime_of(self).rmsnorm(p[0], p[1], p[2], p[3], p[4], p[5]);
  });
}

PyObject* attention_decode_entry(PyObject* self, PyObject* const* args, Py_ssize_t nargs,
                                 PyObject* kwnames) {
  return guarded([&] {
    static const Parameters<5> params("attention_decode", {"q", "k", "v", "out", "stream"}, 4);
    const auto p = params.read(args, nargs, kwnames);
    runtime_of(self).attention_decode(p[0], p[1], p[2], p[3], p[4]);
  });
}

PyObject* attention_prefill_entry(PyObject* self, PyObject* const* args, Py_ssize_t nargs,
                                  PyObject* kwnames) {
  return guarded([&] {
    static const Parameters<5> params("attention_prefill", {"q", "k", "v", "out", "stream"}, 4);
    const auto p = params.read(args, nargs, kwnames);
    runtime_of(self).attention_prefill(p[0], p[1], p[2], p[3], p[4]);
  });
}

PyObject* decode_gemm_entry(PyObject*, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return guarded([&] {
    static const Parameters<5> params("_decode_gemm", {"a", "w", "out", "bias", "stream"}, 3);
    const auto p = params.read(args, nargs, kwnames);
    decode_gemm(p[0], p[1], p[2], p[3], p[4]);
  });
}

constexpr int kFastCall = METH_FASTCALL | METH_KEYWORDS;

// Static: CPython keeps pointers to these for the life of the process.
PyMethodDef runtime_methods[] = {
    {"gemm", as_cfunction(gemm_entry), kFastCall,
     "gemm($self, a, w, out, bias=None, stream=None)\n--\n\n"
     "out[..., N] = a[..., K] @ w[N, K].T (+ bias[N]), enqueued on `stream`."},
    {"rmsnorm", as_cfunction(rmsnorm_entry), kFastCall,
     "rmsnorm($self, x, w, out, residual=None, h_out=None, stream=None)\n--\n\n"
     "out = rmsnorm(x (+ residual, written to h_out)) * w over the last dimension."},
    {"attention_decode", as_cfunction(attention_decode_entry), kFastCall,
     "attention_decode($self, q, k, v, out, stream=None)\n--\n\n"
     "Decode attention in SDPA's layout (causal new tokens)."},
    {"attention_prefill", as_cfunction(attention_prefill_entry), kFastCall,
     "attention_prefill($self, q, k, v, out, stream=None)\n--\n\n"
     "Causal prefill attention in SDPA's layout."},
};

PyMethodDef decode_gemm_def = {
    "_decode_gemm", as_cfunction(decode_gemm_entry), kFastCall,
    "_decode_gemm(a, w, out, bias=None, stream=None)\n--\n\n"
    "Runtime.gemm's argument reading and checks, called as gemm is, without a Runtime or a launch "
    "(bench/python_decode.py)."};

}  // namespace

void add_runtime(pyb::module_& m) {
  if (attune_rt_abi_version() != ATTUNE_RT_ABI_VERSION)
    throw std::runtime_error("libattune-rt speaks ABI " + std::to_string(attune_rt_abi_version()) +
                             " but attune._native was built for " +
                             std::to_string(ATTUNE_RT_ABI_VERSION) +
                             ": rebuild both from one tree");
  using pyb::arg;
  auto cls =
      pyb::class_<Runtime>(m, "Runtime")
          .def(pyb::init<const pyb::object&, int>(), arg("table") = pyb::none(), arg("device") = -1)
          .def("close", on_object(&Runtime::close))
          .def("counters", on_object(&Runtime::counters))
          .def("last_dispatch", on_object(&Runtime::last_dispatch))
          .def("dispatches", on_object(&Runtime::dispatches))
          .def("rows", on_object(&Runtime::rows))
          .def("time_problem", on_object(&Runtime::time_problem), arg("problem"))
          .def_property_readonly("table", on_object(&Runtime::table))
          .def("_c_gemm_loop", on_object(&Runtime::c_gemm_loop));
  for (PyMethodDef& def : runtime_methods) {
    pyb::object method = pyb::reinterpret_steal<pyb::object>(
        PyDescr_NewMethod(reinterpret_cast<PyTypeObject*>(cls.ptr()), &def));
    if (!method) throw pyb::error_already_set();
    cls.attr(def.ml_name) = method;
  }
  pyb::object decode = pyb::reinterpret_steal<pyb::object>(
      PyCFunction_NewEx(&decode_gemm_def, nullptr, m.attr("__name__").ptr()));
  if (!decode) throw pyb::error_already_set();
  m.attr("_decode_gemm") = decode;
}

}  // namespace attune::py
