#include "kernels/layer/layer_family.h"

#include <cublasLt.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <map>

#include <fmt/format.h>

#include "core/layer_problem.h"
#include "cuda/cuda_check.h"
#include "kernels/common/gate.h"
#include "kernels/common/plan_run.h"
#include "kernels/gemm/gemm_lt.h"
#include "kernels/ops.h"

namespace attune::kernels {

namespace {

using namespace attune::cuda;

// Rounds of replays of the chain's prefixes (after the deploy measurement).
constexpr int kPrefixSamples = 100;

// One argument of a step bound to a named tensor of the layer, of `elems` 16-bit values.
struct Binding {
  CUdeviceptr PlanArgs::*field;
  std::string tensor;
  std::size_t elems;
};

// A step ready to enqueue: its plan, prepared, and its arguments.
struct Ready {
  LayerStep step;
  Plan plan;
  PreparedPlan prepared;
  std::optional<LtProblem> lt;  // a cuBLASLt gemm's descriptors
  cublasLtMatmulAlgo_t algo{};
  PlanArgs args;
  std::vector<Binding> bindings;
  std::function<CUresult(CUstream)> go;  // one enqueue of the step
};

std::size_t n(std::int64_t a, std::int64_t b = 1, std::int64_t c = 1, std::int64_t d = 1) {
  return static_cast<std::size_t>(a * b * c * d);
}

// What the step of `role` reads and writes, by tensor name, and its scalar arguments. The
// residual stream is x (the layer's input), then x1 after the input residual add, then x2 after
// the attention residual add, each its own buffer (no argument aliases another). The q/k norms
// of the separate form run on stand-in buffers of their shape: their heads sit strided in qkv,
// which no registered rmsnorm kernel reads, so that form's norms are timed, not chained.
Status wire(Ready& r, std::string* stream) {
  const Problem& p = r.step.problem;
  const std::string& role = r.step.role;
  PlanArgs& a = r.args;
  auto bind = [&](CUdeviceptr PlanArgs::*f, std::string t, std::size_t e) {
    r.bindings.push_back(Binding{f, std::move(t), e});
  };
  const std::string op = p.op();
  if (op == "rmsnorm") {
    ATTUNE_ASSIGN(RmsnormShape s, rmsnorm_shape(p));
    const std::size_t e = n(s.rows, s.hidden);
    a.rows = static_cast<int>(s.rows);
    a.eps = static_cast<float>(kRmsnormEps);
    bind(&PlanArgs::w, "weight." + role, n(s.hidden));
    if (role == "input_norm" || role == "post_attention_norm") {
      bind(&PlanArgs::x, *stream, e);
      bind(&PlanArgs::y, role == "input_norm" ? "xn" : "xn2", e);
    } else if (role == "input_residual" || role == "attention_residual") {
      if (!s.residual) return Error::invalid_argument(role + " is an rmsnorm with residual=1");
      const bool input = role == "input_residual";
      bind(&PlanArgs::x, *stream, e);
      bind(&PlanArgs::r, input ? "mlp_out" : "o", e);
      *stream = input ? "x1" : "x2";
      bind(&PlanArgs::h, *stream, e);
      bind(&PlanArgs::y, input ? "xn" : "xn2", e);
    } else if (role == "q_norm" || role == "k_norm") {
      bind(&PlanArgs::x, "stand_in." + role, e);
      bind(&PlanArgs::y, role + ".out", e);
    } else {
      return Error::invalid_argument("the layer family has no rmsnorm role '" + role + "'");
    }
    return Status::success();
  }
  if (op == "gemm") {
    ATTUNE_ASSIGN(GemmShape s, gemm_shape(p));
    static const std::map<std::string, std::pair<std::string, std::string>> io = {
        {"qkv_proj", {"xn", "qkv"}},
        {"o_proj", {"attn", "o"}},
        {"gate_up_proj", {"xn2", "gate_up"}},
        {"down_proj", {"act", "mlp_out"}}};
    auto it = io.find(role);
    if (it == io.end())
      return Error::invalid_argument("the layer family has no gemm role '" + role + "'");
    // gate_up_proj with SiLU * mul in its epilogue writes the activation itself. With its
    // RMSNorm folded in (rms_norm=1) a projection reads the residual stream itself; with the
    // residual add in its epilogue (residual=1) it writes the stream's next value: o_proj x2 (as
    // the attention residual's add would), down_proj the next layer's input.
    std::string out = s.silu_mul ? "act" : it->second.second;
    a.rows = static_cast<int>(s.m);
    a.eps = static_cast<float>(kRmsnormEps);
    if (s.residual) {
      bind(&PlanArgs::r, *stream, n(s.m, s.out_n()));
      *stream = role == "o_proj" ? "x2" : "x_next";
      out = *stream;
    }
    bind(&PlanArgs::a, s.rms_norm ? *stream : it->second.first, n(s.m, s.k));
    bind(&PlanArgs::b, "weight." + role, n(s.n, s.k));
    bind(&PlanArgs::c, out, n(s.m, s.out_n()));
    if (s.bias) bind(&PlanArgs::bias, "bias." + role, n(s.n));
    return Status::success();
  }
  if (op == "rope") {
    ATTUNE_ASSIGN(RopeShape s, rope_shape(p));
    a.rows = static_cast<int>(s.tokens());
    a.seq = static_cast<int>(s.seq);
    a.kv = static_cast<int>(s.kv);
    a.eps = static_cast<float>(kRopeNormEps);
    bind(&PlanArgs::qkv, "qkv", n(s.tokens(), s.heads(), s.head));
    bind(&PlanArgs::q_norm, "weight.q_norm", n(s.head));
    bind(&PlanArgs::k_norm, "weight.k_norm", n(s.head));
    bind(&PlanArgs::q, "q", n(s.tokens(), s.q_heads, s.head));
    bind(&PlanArgs::k, "k_cache", n(s.batch, s.kv_heads, s.kv, s.head));
    bind(&PlanArgs::v, "v_cache", n(s.batch, s.kv_heads, s.kv, s.head));
    return Status::success();
  }
  // The QKV projection of xn (with the input RMSNorm folded in, rms_norm=1: of the residual
  // stream), rotated into q and the caches.
  if (op == "gemm_rope") {
    ATTUNE_ASSIGN(GemmRopeShape g, gemm_rope_shape(p));
    const RopeShape& s = g.rope;
    a.rows = static_cast<int>(s.tokens());
    a.seq = static_cast<int>(s.seq);
    a.kv = static_cast<int>(s.kv);
    a.eps = static_cast<float>(kRopeNormEps);
    bind(&PlanArgs::a, g.rms_norm ? *stream : "xn", n(g.m(), g.hidden));
    bind(&PlanArgs::b, "weight.qkv_proj", n(g.n(), g.hidden));
    bind(&PlanArgs::q_norm, "weight.q_norm", n(s.head));
    bind(&PlanArgs::k_norm, "weight.k_norm", n(s.head));
    bind(&PlanArgs::q, "q", n(s.tokens(), s.q_heads, s.head));
    bind(&PlanArgs::k, "k_cache", n(s.batch, s.kv_heads, s.kv, s.head));
    bind(&PlanArgs::v, "v_cache", n(s.batch, s.kv_heads, s.kv, s.head));
    return Status::success();
  }
  if (op == "attention_decode" || op == "attention_prefill") {
    std::int64_t rows = 0, keys = 0, batch = 0, kv_heads = 0, head = 0;
    if (op == "attention_decode") {
      ATTUNE_ASSIGN(AttentionDecodeShape s, attention_decode_shape(p));
      rows = s.rows(), keys = s.kv, batch = s.batch, kv_heads = s.kv_heads, head = s.head;
    } else {
      ATTUNE_ASSIGN(AttentionPrefillShape s, attention_prefill_shape(p));
      rows = s.rows(), keys = s.seq, batch = s.batch, kv_heads = s.kv_heads, head = s.head;
    }
    a.rows = static_cast<int>(rows);
    a.kv = static_cast<int>(keys);
    // Attention's output is in SDPA's [batch, q_heads, seq, head] layout, which o_proj reads as
    // its [tokens, q_heads * head] rows: the same bytes for a decode step (seq 1); for a prefill,
    // a model also transposes them, which no kernel here does.
    bind(&PlanArgs::q, "q", n(rows, head));
    bind(&PlanArgs::k, "k_cache", n(batch, kv_heads, keys, head));
    bind(&PlanArgs::v, "v_cache", n(batch, kv_heads, keys, head));
    bind(&PlanArgs::o, "attn", n(rows, head));
    return Status::success();
  }
  if (op == "silu_mul") {
    ATTUNE_ASSIGN(SiluMulShape s, silu_mul_shape(p));
    a.rows = static_cast<int>(s.rows);
    bind(&PlanArgs::x, "gate_up", n(s.rows, 2 * s.inter));
    bind(&PlanArgs::y, "act", n(s.rows, s.inter));
    return Status::success();
  }
  return Error::invalid_argument("the layer family cannot chain op '" + op + "'");
}

// Tensors the layer reads before it writes them (its inputs, weights, the KV caches' old rows):
// filled with random values. The rest are produced by a step first: poisoned, then checked.
bool is_input(const std::string& t) {
  return t == "x" || t == "mlp_out" || t == "k_cache" || t == "v_cache" ||
         t.rfind("weight.", 0) == 0 || t.rfind("bias.", 0) == 0 || t.rfind("stand_in.", 0) == 0;
}

class LayerFamily final : public CudaFamily {
 public:
  ~LayerFamily() override {
    ready_.clear();
    if (lt_) cublasLtDestroy(lt_);
  }

  std::string op() const override { return kLayerOp; }
  std::vector<ProblemInfo> examples() const override { return {}; }

  Result<Problem> resolve(const Problem& spec) const override {
    ATTUNE_ASSIGN(std::vector<LayerStep> steps, layer_steps(spec));
    for (const LayerStep& s : steps)
      if (!find_op(s.problem.op()))
        return Error::invalid_argument("layer problem: '" + s.problem.op() +
                                       "' is not a registered op");
    return spec;
  }
  Result<Space> space(const Problem&) const override { return layer_space(); }
  std::optional<BuildRequest> build_request(const Problem&, const Config&) const override {
    return std::nullopt;  // its steps' kernels, built by their own families before
  }

 protected:
  Result<Outcome> run(CudaEnv& env, const Problem& problem, const Config&, Regime regime) override {
    if (key_ != problem.structural_key()) ATTUNE_TRY(prepare(env, problem));
    if (refused_) return *refused_;
    const auto launch = [this](CUstream st) -> CUresult {
      for (Ready& r : ready_)
        if (CUresult rc = r.go(st); rc != CUDA_SUCCESS) return rc;
      return CUDA_SUCCESS;
    };

    // Fresh inputs, poisoned products; one run; then every product written in full and finite.
    // Projection weights are drawn as a model's are initialized (about 1 / sqrt(hidden)), norm
    // weights around 1, activations in [-1, 1).
    for (auto& [name, buf] : tensors_) {
      if (!is_input(name)) {
        ATTUNE_TRY(buf.fill16(kPoison16, env.stream()));
        continue;
      }
      const bool projection = name.rfind("weight.", 0) == 0 && name.ends_with("_proj");
      const bool norm = name.rfind("weight.", 0) == 0 && !projection;
      ATTUNE_TRY(gate_.fill_random(env, buf.ptr(), buf.bytes() / 2, half_,
                                   projection ? -0.03f
                                   : norm     ? 0.5f
                                              : -1.f,
                                   projection ? 0.03f
                                   : norm     ? 1.5f
                                              : 1.f));
    }
    ATTUNE_ASSIGN(auto refused, launch_and_wait(env, launch, "the assembled layer"));
    if (refused) return *refused;
    Outcome o;
    o.verdict = Verdict::kOk;
    // Against a reference of zeros with an unbounded tolerance, compare() counts exactly the
    // unwritten and the non-finite elements.
    const Tolerance any{std::numeric_limits<double>::max(), 1.0};
    for (const auto& [name, buf] : tensors_) {
      if (is_input(name)) continue;
      ATTUNE_ASSIGN(Comparison c,
                    gate_.compare(env, buf.ptr(), zeros_.ptr(), buf.bytes() / 2, half_, any));
      if (c.verdict != Verdict::kOk) {
        o.verdict = c.verdict;
        o.message = "the assembled layer's " + name + ": " + c.message;
        return o;
      }
    }
    o.check = ErrorCheck{"unwritten_or_non_finite", 0, 0};
    ATTUNE_ASSIGN(Measurement m, env.time(launch, regime));
    if (regime == Regime::kDeploy) {
      // Where the chain's time goes: each kernel's time behind its predecessor in the graph. A
      // breakdown that cannot be taken (a chain that cannot be captured) leaves the measurement
      // without one; the report says so.
      std::vector<std::function<CUresult(CUstream)>> steps;
      for (Ready& r : ready_) steps.emplace_back([&r](CUstream st) { return r.go(st); });
      // Behind the deploy regime's own lead, as every deploy sample's candidate runs.
      const auto lead = [&env](CUstream st) { return env.lead(st); };
      if (auto t = env.time_prefixes(steps, lead, kPrefixSamples)) {
        m.parts_floor_us = t->front();
        for (std::size_t k = 1; k < t->size(); ++k) m.parts_us.push_back((*t)[k] - (*t)[k - 1]);
      }
    }
    o.measurement = m;
    return o;
  }

 private:
  Status prepare(CudaEnv& env, const Problem& problem) {
    ready_.clear();
    tensors_.clear();
    refused_.reset();
    key_.clear();
    if (!lt_) ATTUNE_CUBLASLT(cublasLtCreate(&lt_));
    ATTUNE_ASSIGN(std::vector<LayerStep> steps, layer_steps(problem));
    std::map<std::string, std::size_t> sizes;
    std::string stream = "x";
    std::size_t workspace = 0;
    bool any_lt = false;
    ready_.reserve(steps.size());
    for (LayerStep& s : steps) {
      const std::string* dtype = s.problem.attr("dtype");
      half_ = dtype && *dtype == "fp16" ? Half::kFp16 : Half::kBf16;
      ATTUNE_ASSIGN(Plan plan, kernels::plan(s.problem, s.config));
      ready_.push_back(Ready{std::move(s), std::move(plan), {}, {}, {}, {}, {}});
      Ready& r = ready_.back();
      ATTUNE_TRY(wire(r, &stream));
      for (const Binding& b : r.bindings) sizes[b.tensor] = std::max(sizes[b.tensor], b.elems);
      if (const auto* lp = std::get_if<LtPlan>(&r.plan)) {
        ATTUNE_ASSIGN(GemmShape gs, gemm_shape(r.step.problem));
        ATTUNE_ASSIGN(LtProblem lt, make_lt(lt_, gs, lt_type(gs.bf16), false, nullptr));
        r.lt = std::move(lt);
        LtChoice found = choose_lt_algo(lt_, *r.lt, *lp);
        if (!found.algo) return refuse(r, Verdict::kUnsupported, found.refusal);
        r.algo = *found.algo;
        any_lt = true;
        continue;
      }
      ATTUNE_ASSIGN(auto unready, prepare_plan(env, lt_, r.plan, &r.prepared));
      if (unready) return refuse(r, unready->verdict, unready->message);
      workspace = std::max(workspace, r.prepared.workspace_bytes);
    }
    std::size_t largest_product = 1;
    for (const auto& [name, elems] : sizes) {
      ATTUNE_ASSIGN(DeviceBuffer b, DeviceBuffer::alloc(std::max<std::size_t>(elems, 1) * 2));
      tensors_.emplace(name, std::move(b));
      if (!is_input(name)) largest_product = std::max(largest_product, elems);
    }
    ATTUNE_ASSIGN(zeros_, DeviceBuffer::alloc(largest_product * 8));
    ATTUNE_CU(cuMemsetD8Async(zeros_.ptr(), 0, largest_product * 8, env.stream()));
    ATTUNE_ASSIGN(workspace_, DeviceBuffer::alloc(std::max<std::size_t>(workspace, 256)));
    if (any_lt) {
      ATTUNE_ASSIGN(lt_workspace_, DeviceBuffer::alloc(kLtWorkspaceBytes));
    }
    for (Ready& r : ready_) {
      for (const Binding& b : r.bindings) r.args.*(b.field) = tensors_.at(b.tensor).ptr();
      r.args.workspace = workspace_.ptr();
      if (r.lt) {
        const bool residual = r.step.problem.flag("residual");
        r.go = [this, &r, residual](CUstream st) -> CUresult {
          const cublasStatus_t s =
              lt_matmul(lt_, *r.lt, r.algo, reinterpret_cast<void*>(r.args.a),
                        reinterpret_cast<void*>(r.args.b), reinterpret_cast<void*>(r.args.c),
                        reinterpret_cast<void*>(lt_workspace_.ptr()), st,
                        residual ? reinterpret_cast<void*>(r.args.r) : nullptr);
          return s == CUBLAS_STATUS_SUCCESS ? CUDA_SUCCESS : CUDA_ERROR_LAUNCH_FAILED;
        };
      } else {
        r.go = plan_launcher(lt_, r.plan, r.prepared, r.args);
      }
    }
    key_ = problem.structural_key();
    return Status::success();
  }

  Status refuse(const Ready& r, Verdict verdict, const std::string& why) {
    refused_ =
        Outcome::failed(verdict, fmt::format("{} ({} {}): {}", r.step.role, r.step.problem.text(),
                                             r.step.config.text(), why));
    key_.clear();
    return Status::success();
  }

  DeviceGate gate_;
  cublasLtHandle_t lt_ = nullptr;
  std::string key_;
  std::optional<Outcome> refused_;
  std::vector<Ready> ready_;  // reserved before filling: plan_launcher keeps references
  std::map<std::string, DeviceBuffer> tensors_;
  DeviceBuffer zeros_, workspace_, lt_workspace_;
  Half half_ = Half::kBf16;
};

}  // namespace

std::unique_ptr<CudaFamily> make_layer_family() {
  return std::make_unique<LayerFamily>();
}

}  // namespace attune::kernels
