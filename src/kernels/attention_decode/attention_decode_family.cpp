#include "kernels/attention_decode/attention_decode_family.h"

#include <fmt/format.h>

#include "cuda/cuda_check.h"
#include "kernels/common/attention_family.h"
#include "kernels/common/gate.h"
#include "kernels/ops.h"

namespace attune::kernels {

extern const char* const kAttentionDecodeRefSource;

namespace {

using namespace attune::cuda;

class AttentionDecodeFamily final : public AttentionFamily {
 public:
  AttentionDecodeFamily() : AttentionFamily(attention_decode_op(), &plan_attention_decode) {}

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
  Status reference(CudaEnv& env, const AttentionDecodeShape& s) {
    ATTUNE_ASSIGN(CUfunction ref,
                  reference_function(env, kAttentionDecodeRefSource, "attention_decode_ref.cu",
                                     "attention_decode_ref", "attention_decode"));
    CUdeviceptr out = data_.ref.ptr(), scores = data_.aux.ptr(), q = data_.q.ptr(),
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
    const Call call{static_cast<std::size_t>(s.rows() * s.head),
                    static_cast<std::size_t>(s.batch * s.kv_heads * s.kv * s.head),
                    static_cast<int>(s.kv), static_cast<int>(s.rows()), s.bf16};
    // The reference's float64 scores of every row against every key (aux).
    ATTUNE_TRY(prepare_data(problem, call, static_cast<std::size_t>(s.rows() * s.kv) * 8));
    // Each output is a convex combination of value rows in fp32 (softmax weights summing to 1),
    // so its error is the 16-bit rounding of the output itself, plus, in the split baseline, of
    // P (one rounding of each weight, averaged over the keys), far under 5 ulps; the fp32
    // accumulation over kv keys grows like sqrt(kv), as tolerance_for's reduction length says.
    const Tolerance tol = tolerance_for(s.bf16 ? "bf16" : "fp16", s.kv);
    return run_gated(
        env, plan, call, [&] { return reference(env, s); }, tol, false, regime);
  }
};

}  // namespace

std::unique_ptr<CudaFamily> make_attention_decode_family() {
  return std::make_unique<AttentionDecodeFamily>();
}

}  // namespace attune::kernels
