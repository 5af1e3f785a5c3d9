#include "kernels/rope/rope_family.h"

#include <algorithm>

#include <fmt/format.h>

#include "cuda/cuda_check.h"
#include "kernels/common/gate.h"
#include "kernels/common/op_family.h"
#include "kernels/common/plan_run.h"
#include "kernels/ops.h"

namespace attune::kernels {

extern const char* const kRopeRefSource;

namespace {

using namespace attune::cuda;

struct Data {
  std::string key;
  DeviceBuffer qkv, workspace;
  RopeOutputs outputs;
};

class RopeFamily final : public OpFamily {
 public:
  RopeFamily() : OpFamily(rope_op(), &plan_rope) {}

  std::vector<ProblemInfo> examples() const override {
    std::vector<ProblemInfo> out;
    for (auto [name, what, batch, seq, kv, q_heads] :
         {std::tuple{"rope-qwen3-embedding-0.6b-prefill", "a prefill of 8 x 512 tokens", 8, 512,
                     512, 16},
          std::tuple{"rope-qwen3-8b-decode", "a batch-8 decode step of Qwen3-8B at KV 2048", 8, 1,
                     2048, 32}}) {
      Problem p("rope",
                {{"batch", std::to_string(batch)},
                 {"seq", std::to_string(seq)},
                 {"kv", std::to_string(kv)},
                 {"q_heads", std::to_string(q_heads)},
                 {"kv_heads", "8"},
                 {"head", "128"},
                 {"theta", "1000000"},
                 {"qk_norm", "1"},
                 {"dtype", "bf16"}},
                name);
      out.push_back(
          {p, fmt::format("bf16 RoPE with Qwen3's q/k norm, {}, head 128, {} query heads, 8 KV "
                          "heads",
                          what, q_heads)});
    }
    return out;
  }

 private:
  Status prepare_data(const Problem& problem, const RopeShape& s) {
    if (data_.key == problem.structural_key()) return Status::success();
    data_ = Data{};
    ATTUNE_ASSIGN(data_.qkv, DeviceBuffer::alloc(
                                 static_cast<std::size_t>(s.tokens() * s.heads() * s.head) * 2));
    ATTUNE_TRY(data_.outputs.alloc(s));
    data_.key = problem.structural_key();
    return Status::success();
  }

  Result<Outcome> run(CudaEnv& env, const Problem& problem, const Config& config,
                      Regime regime) override {
    ATTUNE_ASSIGN(RopeShape s, rope_shape(problem));
    ATTUNE_ASSIGN(Plan plan, plan_rope(problem, config));
    ATTUNE_TRY(prepare_data(problem, s));
    PlanArgs args;
    args.qkv = data_.qkv.ptr();
    data_.outputs.bind(s, args);
    ReadyPlan ready;
    ATTUNE_ASSIGN(auto unready, ready_plan(env, nullptr, plan, data_.workspace, args, &ready));
    if (unready) return *unready;
    const auto& launch = ready.launch;

    // Fresh random inputs (qkv, the norm weights, the caches' old rows), poisoned outputs and
    // guards, the references on the same inputs.
    ATTUNE_TRY(gate_.fill_random(env, args.qkv,
                                 static_cast<std::size_t>(s.tokens() * s.heads() * s.head),
                                 s.bf16 ? Half::kBf16 : Half::kFp16));
    ATTUNE_TRY(data_.outputs.fill(env, gate_, s));
    ATTUNE_TRY(data_.outputs.reference(env, s, args.qkv, false));
    ATTUNE_ASSIGN(auto refused, launch_and_wait(env, launch, "rope"));
    if (refused) return *refused;

    // Each output one rotation of (normalized) 16-bit inputs in fp32: its error the output's
    // rounding (the chain rounds the normalized heads once more) and the fp32 angle's,
    // pos * 2^-24 radians at most.
    ATTUNE_ASSIGN(Outcome o,
                  data_.outputs.check(env, gate_, s, tolerance_for(s.bf16 ? "bf16" : "fp16")));
    return timed_if_passed(env, std::move(o), launch, regime);
  }

  Data data_;
};

}  // namespace

namespace {

std::size_t q_elems(const RopeShape& s) {
  return static_cast<std::size_t>(s.tokens() * s.q_heads * s.head);
}
std::size_t cache_elems(const RopeShape& s) {
  return static_cast<std::size_t>(s.batch * s.kv_heads * s.kv * s.head);
}

}  // namespace

Status RopeOutputs::alloc(const RopeShape& s) {
  *this = RopeOutputs{};
  ATTUNE_ASSIGN(q_norm_, DeviceBuffer::alloc(static_cast<std::size_t>(s.head) * 2));
  ATTUNE_ASSIGN(k_norm_, DeviceBuffer::alloc(static_cast<std::size_t>(s.head) * 2));
  ATTUNE_ASSIGN(q_, DeviceBuffer::alloc((q_elems(s) + kGuardElements) * 2));
  ATTUNE_ASSIGN(k_, DeviceBuffer::alloc((cache_elems(s) + kGuardElements) * 2));
  ATTUNE_ASSIGN(v_, DeviceBuffer::alloc((cache_elems(s) + kGuardElements) * 2));
  ATTUNE_ASSIGN(ref_q_, DeviceBuffer::alloc(q_elems(s) * 8));
  ATTUNE_ASSIGN(ref_k_, DeviceBuffer::alloc(cache_elems(s) * 8));
  ATTUNE_ASSIGN(ref_v_, DeviceBuffer::alloc(cache_elems(s) * 8));
  return Status::success();
}

void RopeOutputs::bind(const RopeShape& s, PlanArgs& args) const {
  args.q_norm = q_norm_.ptr();
  args.k_norm = k_norm_.ptr();
  args.q = q_.ptr();
  args.k = k_.ptr();
  args.v = v_.ptr();
  args.rows = static_cast<int>(s.tokens());
  args.seq = static_cast<int>(s.seq);
  args.kv = static_cast<int>(s.kv);
  args.eps = static_cast<float>(kRopeNormEps);
}

Status RopeOutputs::fill(CudaEnv& env, DeviceGate& gate, const RopeShape& s) {
  const Half fmt = s.bf16 ? Half::kBf16 : Half::kFp16;
  for (const DeviceBuffer* w : {&q_norm_, &k_norm_})
    ATTUNE_TRY(gate.fill_random(env, w->ptr(), static_cast<std::size_t>(s.head), fmt, 0.5f, 1.5f));
  ATTUNE_TRY(q_.fill16(kPoison16, env.stream()));
  for (DeviceBuffer* cache : {&k_, &v_}) {
    ATTUNE_TRY(cache->fill16(kPoison16, env.stream()));
    ATTUNE_TRY(gate.fill_random(env, cache->ptr(), cache_elems(s), fmt));
  }
  return Status::success();
}

Status RopeOutputs::reference(CudaEnv& env, const RopeShape& s, CUdeviceptr qkv_in, bool qkv_f64) {
  BuildRequest req;
  req.source = kRopeRefSource;
  req.source_name = "rope_ref.cu";
  ATTUNE_ASSIGN(Built cache_ref, env.function(req, "rope_ref_cache"));
  ATTUNE_ASSIGN(Built ref, env.function(req, qkv_f64 ? "rope_ref_f64" : "rope_ref"));
  if (ref.verdict != Verdict::kOk || cache_ref.verdict != Verdict::kOk)
    return Error::internal("the rope reference does not compile: " + ref.log + cache_ref.log);
  int head = static_cast<int>(s.head), kv = static_cast<int>(s.kv), seq = static_cast<int>(s.seq),
      q_heads = static_cast<int>(s.q_heads), kv_heads = static_cast<int>(s.kv_heads),
      f = s.bf16 ? 0 : 1, qk_norm = s.qk_norm ? 1 : 0;
  long long n = static_cast<long long>(cache_elems(s));
  unsigned short poison = kPoison16;
  for (auto [ref_ptr, cache_ptr] :
       {std::pair{ref_k_.ptr(), k_.ptr()}, std::pair{ref_v_.ptr(), v_.ptr()}}) {
    CUdeviceptr r = ref_ptr, c = cache_ptr;
    void* args[] = {&r, &c, &n, &head, &kv, &seq, &poison, &f};
    ATTUNE_CU(cuLaunchKernel(cache_ref.fn, grid_for(cache_elems(s)), 1, 1, 256, 1, 1, 0,
                             env.stream(), args, nullptr));
  }
  CUdeviceptr q = ref_q_.ptr(), k = ref_k_.ptr(), v = ref_v_.ptr(), qkv = qkv_in,
              qn = q_norm_.ptr(), kn = k_norm_.ptr();
  double theta = static_cast<double>(s.theta), eps = kRopeNormEps;
  const Llama3RopeScaling& l = kLlama3RopeScaling;
  int llama3 = s.llama3_scaling ? 1 : 0;
  double factor = l.factor, low = l.low_freq_factor, high = l.high_freq_factor,
         original = static_cast<double>(l.original_max_position_embeddings);
  void* args[] = {&q,    &k,     &v,       &qkv, &qn, &kn,     &seq,    &kv,  &q_heads, &kv_heads,
                  &head, &theta, &qk_norm, &eps, &f,  &llama3, &factor, &low, &high,    &original};
  ATTUNE_CU(cuLaunchKernel(ref.fn, static_cast<unsigned>(s.tokens()),
                           static_cast<unsigned>(s.heads()), 1, 128, 1, 1, 0, env.stream(), args,
                           nullptr));
  return Status::success();
}

Result<Outcome> RopeOutputs::check(CudaEnv& env, DeviceGate& gate, const RopeShape& s,
                                   const Tolerance& tol) const {
  const Half fmt = s.bf16 ? Half::kBf16 : Half::kFp16;
  Outcome o;
  bool first = true;
  for (auto [what, out, ref, n] : {std::tuple{"q", q_.ptr(), ref_q_.ptr(), q_elems(s)},
                                   std::tuple{"k cache", k_.ptr(), ref_k_.ptr(), cache_elems(s)},
                                   std::tuple{"v cache", v_.ptr(), ref_v_.ptr(), cache_elems(s)}}) {
    ATTUNE_ASSIGN(Comparison cmp, gate.check_output(env, out, ref, n, fmt, tol));
    if (cmp.verdict != Verdict::kOk) cmp.message = std::string(what) + ": " + cmp.message;
    if (first || cmp.verdict != Verdict::kOk || cmp.check.value > o.check->value) {
      o.verdict = cmp.verdict;
      o.check = cmp.check;
      o.message = cmp.message;
    }
    first = false;
    if (o.verdict != Verdict::kOk) return o;
  }
  return o;
}

std::unique_ptr<CudaFamily> make_rope_family() {
  return std::make_unique<RopeFamily>();
}

}  // namespace attune::kernels
