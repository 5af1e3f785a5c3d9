#include "kernels/attention_decode/attention_decode_family.h"

#include <fmt/format.h>

#include "cuda/cuda_check.h"
#include "kernels/common/gate.h"
#include "kernels/common/op_family.h"
#include "kernels/common/plan_run.h"
#include "kernels/ops.h"

namespace attune::kernels {

extern const char* const kAttentionDecodeRefSource;

namespace {

using namespace attune::cuda;

// Queries are drawn from [-kQueryRange, kQueryRange), keys and values from [-1, 1): scores then
// spread (std ~1.3 before the softmax) so the weights are far from uniform and a key dropped,
// masked wrongly or counted twice moves small-cache outputs well past the tolerance.
constexpr float kQueryRange = 3.f;

struct Data {
  std::string key;
  DeviceBuffer q, k, v, o, ref, scores, workspace;
};

class AttentionDecodeFamily final : public OpFamily {
 public:
  AttentionDecodeFamily() : OpFamily(attention_decode_op(), &plan_attention_decode) {}

  std::vector<ProblemInfo> examples() const override {
    std::vector<ProblemInfo> out;
    for (auto [name, batch, kv] : {std::tuple{"attention-decode-qwen3-8b-b1-kv4096", 1, 4096},
                                   std::tuple{"attention-decode-qwen3-8b-b8-kv16384", 8, 16384},
                                   std::tuple{"attention-decode-qwen3-8b-b32-kv4096", 32, 4096}}) {
      Problem p("attention_decode",
                {{"batch", std::to_string(batch)},
                 {"kv", std::to_string(kv)},
                 {"head", "128"},
                 {"q_heads", "32"},
                 {"kv_heads", "8"},
                 {"q_len", "1"},
                 {"dtype", "bf16"}},
                name);
      out.push_back({p, fmt::format("bf16 decode attention of Qwen3-8B (32 query heads, 8 KV "
                                    "heads, head 128), batch {}, KV depth {}",
                                    batch, kv)});
    }
    return out;
  }

 private:
  Status prepare_data(const Problem& problem, const AttentionDecodeShape& s) {
    if (data_.key == problem.structural_key()) return Status::success();
    data_ = Data{};
    ATTUNE_TRY(open_cublaslt());
    const auto q = static_cast<std::size_t>(s.rows() * s.head);
    const auto kv = static_cast<std::size_t>(s.batch * s.kv_heads * s.kv * s.head);
    ATTUNE_ASSIGN(data_.q, DeviceBuffer::alloc(q * 2));
    ATTUNE_ASSIGN(data_.k, DeviceBuffer::alloc(kv * 2));
    ATTUNE_ASSIGN(data_.v, DeviceBuffer::alloc(kv * 2));
    ATTUNE_ASSIGN(data_.o, DeviceBuffer::alloc((q + kGuardElements) * 2));
    ATTUNE_ASSIGN(data_.ref, DeviceBuffer::alloc(q * 8));
    ATTUNE_ASSIGN(data_.scores, DeviceBuffer::alloc(static_cast<std::size_t>(s.rows() * s.kv) * 8));
    data_.key = problem.structural_key();
    return Status::success();
  }

  Status reference(CudaEnv& env, const AttentionDecodeShape& s) {
    ATTUNE_ASSIGN(CUfunction ref,
                  reference_function(env, kAttentionDecodeRefSource, "attention_decode_ref.cu",
                                     "attention_decode_ref", "attention_decode"));
    CUdeviceptr out = data_.ref.ptr(), scores = data_.scores.ptr(), q = data_.q.ptr(),
                k = data_.k.ptr(), v = data_.v.ptr();
    int kv = static_cast<int>(s.kv), head = static_cast<int>(s.head),
        q_heads = static_cast<int>(s.q_heads), kv_heads = static_cast<int>(s.kv_heads),
        q_len = static_cast<int>(s.q_len), f = s.bf16 ? 0 : 1;
    void* args[] = {&out, &scores, &q, &k, &v, &kv, &head, &q_heads, &kv_heads, &q_len, &f};
    ATTUNE_CU(cuLaunchKernel(ref, static_cast<unsigned>(s.rows()), 1, 1, 256, 1, 1, 0, env.stream(),
                             args, nullptr));
    return Status::success();
  }

  Result<Outcome> run(CudaEnv& env, const Problem& problem, const Config& config,
                      Regime regime) override {
    ATTUNE_ASSIGN(AttentionDecodeShape s, attention_decode_shape(problem));
    ATTUNE_ASSIGN(Plan plan, plan_attention_decode(problem, config));
    ATTUNE_TRY(prepare_data(problem, s));
    PlanArgs args;
    args.q = data_.q.ptr();
    args.k = data_.k.ptr();
    args.v = data_.v.ptr();
    args.o = data_.o.ptr();
    args.kv = static_cast<int>(s.kv);
    args.rows = static_cast<int>(s.rows());
    PreparedPlan prepared;
    ATTUNE_ASSIGN(auto unready, prepare_plan(env, lt_, plan, &prepared));
    if (unready) return *unready;
    ATTUNE_TRY(grow_workspace(data_.workspace, prepared.workspace_bytes));
    args.workspace = data_.workspace.ptr();
    const auto launch = plan_launcher(lt_, plan, prepared, args);

    // Fresh random inputs, poisoned output and guard, the reference on the same inputs.
    const Half fmt = s.bf16 ? Half::kBf16 : Half::kFp16;
    const auto nq = static_cast<std::size_t>(s.rows() * s.head);
    const auto nkv = static_cast<std::size_t>(s.batch * s.kv_heads * s.kv * s.head);
    ATTUNE_TRY(gate_.fill_random(env, args.q, nq, fmt, -kQueryRange, kQueryRange));
    ATTUNE_TRY(gate_.fill_random(env, args.k, nkv, fmt));
    ATTUNE_TRY(gate_.fill_random(env, args.v, nkv, fmt));
    ATTUNE_TRY(data_.o.fill16(kPoison16, env.stream()));
    ATTUNE_TRY(reference(env, s));
    ATTUNE_ASSIGN(auto refused, launch_and_wait(env, launch, "attention_decode"));
    if (refused) return *refused;
    // Each output is a convex combination of value rows in fp32 (softmax weights summing to 1),
    // so its error is the 16-bit rounding of the output itself, plus, in the split baseline, of
    // P (one rounding of each weight, averaged over the keys), far under 5 ulps; the fp32
    // accumulation over kv keys grows like sqrt(kv), as tolerance_for's reduction length says.
    const Tolerance tol = tolerance_for(s.bf16 ? "bf16" : "fp16", s.kv);
    ATTUNE_ASSIGN(Comparison cmp, gate_.check_output(env, args.o, data_.ref.ptr(), nq, fmt, tol));
    return timed_if_passed(env, cmp, launch, regime);
  }

  Data data_;
};

}  // namespace

std::unique_ptr<CudaFamily> make_attention_decode_family() {
  return std::make_unique<AttentionDecodeFamily>();
}

}  // namespace attune::kernels
