#include "kernels/silu_mul/silu_mul_family.h"

#include <fmt/format.h>

#include "cuda/cuda_check.h"
#include "kernels/common/gate.h"
#include "kernels/common/op_family.h"
#include "kernels/common/plan_run.h"
#include "kernels/ops.h"

namespace attune::kernels {

extern const char* const kSiluMulRefSource;

namespace {

using namespace attune::cuda;

// Inputs from [-kRange, kRange): the gates cover silu's curved part and both tails (silu(-6) is
// -0.015, silu(6) 5.985), so a kernel computing another activation fails the gate.
constexpr float kRange = 6.f;

struct Data {
  std::string key;
  DeviceBuffer x, y, ref;
};

class SiluMulFamily final : public OpFamily {
 public:
  SiluMulFamily() : OpFamily(silu_mul_op(), &plan_silu_mul) {}

  std::vector<ProblemInfo> examples() const override {
    std::vector<ProblemInfo> out;
    for (auto [name, what, rows, inter] :
         {std::tuple{"silu-mul-qwen3-embedding-0.6b-prefill", "8 x 512 tokens of Qwen3-0.6B", 4096,
                     3072},
          std::tuple{"silu-mul-qwen3-8b-decode", "a batch-8 decode step of Qwen3-8B", 8, 12288}}) {
      Problem p(
          "silu_mul",
          {{"rows", std::to_string(rows)}, {"inter", std::to_string(inter)}, {"dtype", "bf16"}},
          name);
      out.push_back({p, fmt::format("bf16 SiLU * mul, {} ({} rows of {})", what, rows, inter)});
    }
    return out;
  }

 private:
  Status prepare_data(const Problem& problem, const SiluMulShape& s) {
    if (data_.key == problem.structural_key()) return Status::success();
    data_ = Data{};
    const auto n = static_cast<std::size_t>(s.rows * s.inter);
    ATTUNE_ASSIGN(data_.x, DeviceBuffer::alloc(2 * n * 2));
    ATTUNE_ASSIGN(data_.y, DeviceBuffer::alloc((n + kGuardElements) * 2));
    ATTUNE_ASSIGN(data_.ref, DeviceBuffer::alloc(n * 8));
    data_.key = problem.structural_key();
    return Status::success();
  }

  Status reference(CudaEnv& env, const SiluMulShape& s) {
    ATTUNE_ASSIGN(CUfunction ref, reference_function(env, kSiluMulRefSource, "silu_mul_ref.cu",
                                                     "silu_mul_ref", "silu_mul"));
    CUdeviceptr y = data_.ref.ptr(), x = data_.x.ptr();
    long long rows = s.rows;
    int inter = static_cast<int>(s.inter), f = s.bf16 ? 0 : 1;
    void* args[] = {&y, &x, &rows, &inter, &f};
    ATTUNE_CU(cuLaunchKernel(ref, grid_for(static_cast<std::size_t>(s.rows * s.inter)), 1, 1, 256,
                             1, 1, 0, env.stream(), args, nullptr));
    return Status::success();
  }

  Result<Outcome> run(CudaEnv& env, const Problem& problem, const Config& config,
                      Regime regime) override {
    ATTUNE_ASSIGN(SiluMulShape s, silu_mul_shape(problem));
    ATTUNE_ASSIGN(Plan plan, plan_silu_mul(problem, config));
    ATTUNE_TRY(prepare_data(problem, s));
    PlanArgs args;
    args.x = data_.x.ptr();
    args.y = data_.y.ptr();
    args.rows = static_cast<int>(s.rows);
    PreparedPlan prepared;
    ATTUNE_ASSIGN(auto unready, prepare_plan(env, nullptr, plan, &prepared));
    if (unready) return *unready;
    const auto launch = plan_launcher(nullptr, plan, prepared, args);

    // Fresh random inputs, poisoned output and guard, the reference on the same inputs.
    const Half fmt = s.bf16 ? Half::kBf16 : Half::kFp16;
    const auto n = static_cast<std::size_t>(s.rows * s.inter);
    ATTUNE_TRY(gate_.fill_random(env, args.x, 2 * n, fmt, -kRange, kRange));
    ATTUNE_TRY(data_.y.fill16(kPoison16, env.stream()));
    ATTUNE_TRY(reference(env, s));
    ATTUNE_ASSIGN(auto refused, launch_and_wait(env, launch, "silu_mul"));
    if (refused) return *refused;
    const Tolerance tol = tolerance_for(s.bf16 ? "bf16" : "fp16");
    ATTUNE_ASSIGN(Comparison cmp, gate_.check_output(env, args.y, data_.ref.ptr(), n, fmt, tol));
    return timed_if_passed(env, cmp, launch, regime);
  }

  Data data_;
};

}  // namespace

std::unique_ptr<CudaFamily> make_silu_mul_family() {
  return std::make_unique<SiluMulFamily>();
}

}  // namespace attune::kernels
