#include "kernels/gemm_rope/gemm_rope_family.h"

#include <cublasLt.h>

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "cuda/cuda_check.h"
#include "kernels/common/gate.h"
#include "kernels/common/op_family.h"
#include "kernels/common/plan_run.h"
#include "kernels/gemm/gemm_reference.h"
#include "kernels/ops.h"
#include "kernels/rope/rope_family.h"

namespace attune::kernels {

namespace {

using namespace attune::cuda;

struct Data {
  std::string key;
  DeviceBuffer x, w, workspace;
  GemmReference product;
  RopeOutputs outputs;
};

// data_ (its cuBLASLt descriptors) goes before OpFamily destroys the handle.
class GemmRopeFamily final : public OpFamily {
 public:
  GemmRopeFamily() : OpFamily(gemm_rope_op(), &plan_gemm_rope) {}

  std::vector<ProblemInfo> examples() const override {
    std::vector<ProblemInfo> out;
    for (auto [name, what, batch, seq, kv, q_heads, hidden] :
         {std::tuple{"gemm-rope-qwen3-embedding-0.6b-prefill", "a prefill of 8 x 512 tokens", 8,
                     512, 512, 16, 1024},
          std::tuple{"gemm-rope-qwen3-8b-decode", "a batch-8 decode step of Qwen3-8B at KV 2048", 8,
                     1, 2048, 32, 4096}}) {
      Problem p("gemm_rope",
                {{"batch", std::to_string(batch)},
                 {"seq", std::to_string(seq)},
                 {"kv", std::to_string(kv)},
                 {"q_heads", std::to_string(q_heads)},
                 {"kv_heads", "8"},
                 {"head", "128"},
                 {"theta", "1000000"},
                 {"hidden", std::to_string(hidden)},
                 {"qk_norm", "1"},
                 {"dtype", "bf16"}},
                name);
      out.push_back(
          {p, fmt::format("bf16 QKV projection of hidden {} with RoPE and Qwen3's q/k "
                          "norm in its epilogue, {}, head 128, {} query heads, 8 KV heads",
                          hidden, what, q_heads)});
    }
    return out;
  }

 private:
  // The projection, its rows scaled by x's reciprocal RMS under rms_norm=1.
  static GemmShape projection(const GemmRopeShape& s) {
    GemmShape g{s.m(), s.n(), s.hidden, s.rope.bf16, false, false};
    g.rms_norm = s.rms_norm;
    return g;
  }

  Status prepare_data(const Problem& problem, const GemmRopeShape& s) {
    if (data_.key == problem.structural_key()) return Status::success();
    data_ = Data{};
    ATTUNE_TRY(open_cublaslt());
    ATTUNE_ASSIGN(data_.x, DeviceBuffer::alloc(static_cast<std::size_t>(s.m() * s.hidden) * 2));
    ATTUNE_ASSIGN(data_.w, DeviceBuffer::alloc(static_cast<std::size_t>(s.n() * s.hidden) * 2));
    ATTUNE_TRY(data_.outputs.alloc(s.rope));
    ATTUNE_TRY(data_.product.prepare(lt_, projection(s), gemm_rope_op().name));
    data_.key = problem.structural_key();
    return Status::success();
  }

  Result<Outcome> run(CudaEnv& env, const Problem& problem, const Config& config,
                      Regime regime) override {
    ATTUNE_ASSIGN(GemmRopeShape s, gemm_rope_shape(problem));
    ATTUNE_ASSIGN(Plan plan, plan_gemm_rope(problem, config));
    ATTUNE_TRY(prepare_data(problem, s));
    const RopeShape& r = s.rope;
    PlanArgs args;
    args.a = data_.x.ptr();
    args.b = data_.w.ptr();
    data_.outputs.bind(r, args);
    ReadyPlan ready;
    ATTUNE_ASSIGN(auto unready, ready_plan(env, lt_, plan, data_.workspace, args, &ready));
    if (unready) return *unready;
    const auto& launch = ready.launch;

    // Fresh random inputs (x and W as a model's activations and weights, the norm weights around
    // 1, the caches' old rows), poisoned outputs and guards, the references on the same inputs:
    // the projection in float64, then rope's reference of it, never rounded.
    const Half fmt = r.bf16 ? Half::kBf16 : Half::kFp16;
    const float w_scale = 1.0f / std::sqrt(static_cast<float>(s.hidden));
    ATTUNE_TRY(gate_.fill_random(env, args.a, static_cast<std::size_t>(s.m() * s.hidden), fmt));
    ATTUNE_TRY(gate_.fill_random(env, args.b, static_cast<std::size_t>(s.n() * s.hidden), fmt,
                                 -w_scale, w_scale));
    ATTUNE_TRY(data_.outputs.fill(env, gate_, r));
    ATTUNE_TRY(data_.product.run(env, projection(s), args.a, args.b, 0));
    ATTUNE_TRY(data_.outputs.reference(env, r, data_.product.ref(), true));
    ATTUNE_ASSIGN(auto refused, launch_and_wait(env, launch, "gemm_rope"));
    if (refused) return *refused;

    // The projection's allowance (its reduction over hidden), half as much again for the split
    // form, which rounds qkv to the output type before the norm and the rotation (as a framework's
    // unfused layer does); a wrong head, position or pairing is off by O(1).
    Tolerance tol = tolerance_for(r.bf16 ? "bf16" : "fp16", s.hidden);
    tol.rtol *= 1.5;
    // Under rms_norm a quarter more, as gemm's: the split form also rounds the normalized x.
    if (s.rms_norm) tol.rtol *= 1.25;
    ATTUNE_ASSIGN(Outcome o, data_.outputs.check(env, gate_, r, tol));
    return timed_if_passed(env, std::move(o), launch, regime);
  }

  Data data_;
};

}  // namespace

std::unique_ptr<CudaFamily> make_gemm_rope_family() {
  return std::make_unique<GemmRopeFamily>();
}

}  // namespace attune::kernels
