#include "kernels/rmsnorm/rmsnorm_family.h"

#include <fmt/format.h>

#include "cuda/cuda_check.h"
#include "kernels/common/gate.h"
#include "kernels/common/op_family.h"
#include "kernels/ops.h"
#include "kernels/plan_launch.h"

namespace attune::kernels {

extern const char* const kRmsnormRefSource;

namespace {

using namespace attune::cuda;

struct Shape {
  std::int64_t rows = 0, hidden = 0;
  Half fmt = Half::kBf16;
  bool residual = false;
};

Result<Shape> shape_of(const Problem& p) {
  Shape s;
  ATTUNE_ASSIGN(s.rows, p.int_attr("rows"));
  ATTUNE_ASSIGN(s.hidden, p.int_attr("hidden"));
  s.fmt = *p.attr("dtype") == "fp16" ? Half::kFp16 : Half::kBf16;
  s.residual = p.flag("residual");
  return s;
}

// Problem data kept across the candidates of one problem; inputs are refilled for every check.
struct Data {
  std::string key;
  DeviceBuffer x, r, w, y, h, ref_y, ref_h;
};

class RmsnormFamily final : public OpFamily {
 public:
  RmsnormFamily() : OpFamily(rmsnorm_op(), &plan_rmsnorm) {}

  std::vector<ProblemInfo> examples() const override {
    std::vector<ProblemInfo> out;
    for (auto [name, rows, hidden, residual] :
         {std::tuple{"rmsnorm-qwen3-8b-decode", 16, 4096, 1},
          std::tuple{"rmsnorm-qwen3-8b-prefill", 8192, 4096, 1},
          std::tuple{"rmsnorm-64mib", 8192, 4096, 0}}) {
      Problem p("rmsnorm",
                {{"rows", std::to_string(rows)},
                 {"hidden", std::to_string(hidden)},
                 {"dtype", "bf16"},
                 {"residual", std::to_string(residual)}},
                name);
      out.push_back({p, fmt::format("bf16 RMSNorm, {} rows of {}{}", rows, hidden,
                                    residual ? ", fused residual add" : "")});
    }
    return out;
  }

 private:
  Status prepare_data(const Problem& problem, const Shape& s) {
    if (data_.key == problem.structural_key()) return Status::success();
    data_ = Data{};
    const std::size_t n = static_cast<std::size_t>(s.rows * s.hidden);
    ATTUNE_ASSIGN(data_.x, DeviceBuffer::alloc(n * 2));
    ATTUNE_ASSIGN(data_.r, DeviceBuffer::alloc(s.residual ? n * 2 : 16));
    ATTUNE_ASSIGN(data_.w, DeviceBuffer::alloc(static_cast<std::size_t>(s.hidden) * 2));
    ATTUNE_ASSIGN(data_.y, DeviceBuffer::alloc((n + kGuardElements) * 2));
    ATTUNE_ASSIGN(data_.h, DeviceBuffer::alloc(s.residual ? (n + kGuardElements) * 2 : 16));
    ATTUNE_ASSIGN(data_.ref_y, DeviceBuffer::alloc(n * 8));
    ATTUNE_ASSIGN(data_.ref_h, DeviceBuffer::alloc(s.residual ? n * 8 : 16));
    data_.key = problem.structural_key();
    return Status::success();
  }

  Result<Outcome> run(CudaEnv& env, const Problem& problem, const Config& config,
                      Regime regime) override {
    ATTUNE_ASSIGN(Shape s, shape_of(problem));
    ATTUNE_ASSIGN(Plan planned, plan_rmsnorm(problem, config));
    KernelPlan plan = std::get<KernelPlan>(std::move(planned));  // rmsnorm has no library variant
    ATTUNE_TRY(check_args(plan));
    const LaunchStep& step = plan.steps.at(0);
    ATTUNE_ASSIGN(Launchable b, launchable(env, plan.build, step.kernel,
                                           step.block.x * step.block.y, step.shared_bytes));
    if (b.refused) return *b.refused;
    ATTUNE_TRY(prepare_data(problem, s));
    const std::size_t n = static_cast<std::size_t>(s.rows * s.hidden);

    // Fresh random inputs, poisoned outputs, the reference on the same inputs.
    ATTUNE_TRY(gate_.fill_random(env, data_.x.ptr(), n, s.fmt));
    if (s.residual) ATTUNE_TRY(gate_.fill_random(env, data_.r.ptr(), n, s.fmt));
    ATTUNE_TRY(gate_.fill_random(env, data_.w.ptr(), static_cast<std::size_t>(s.hidden), s.fmt,
                                 0.5f, 1.5f));
    ATTUNE_TRY(data_.y.fill16(kPoison16, env.stream()));
    if (s.residual) ATTUNE_TRY(data_.h.fill16(kPoison16, env.stream()));
    ATTUNE_TRY(reference(env, s));

    PlanArgs args;
    args.y = data_.y.ptr();
    args.h = data_.h.ptr();
    args.x = data_.x.ptr();
    args.r = data_.r.ptr();
    args.w = data_.w.ptr();
    args.rows = static_cast<int>(s.rows);
    args.eps = static_cast<float>(kRmsnormEps);
    const std::vector<CUfunction> fns = {b.fn};
    auto launch = [&](CUstream st) { return enqueue(plan, fns, args, st); };
    ATTUNE_ASSIGN(auto refused, launch_and_wait(env, launch, "rmsnorm"));
    if (refused) return *refused;

    Tolerance tol = tolerance_for(s.fmt == Half::kBf16 ? "bf16" : "fp16");
    ATTUNE_ASSIGN(Comparison cy, gate_.check_output(env, args.y, data_.ref_y.ptr(), n, s.fmt, tol));
    Comparison worst = cy;
    if (s.residual && cy.verdict == Verdict::kOk) {
      ATTUNE_ASSIGN(Comparison ch,
                    gate_.check_output(env, args.h, data_.ref_h.ptr(), n, s.fmt, tol));
      if (ch.verdict != Verdict::kOk) ch.message = "residual output: " + ch.message;
      worst = ch.verdict != Verdict::kOk || ch.check.value > cy.check.value ? ch : cy;
    }
    return timed_if_passed(env, worst, launch, regime);
  }

  Status reference(CudaEnv& env, const Shape& s) {
    ATTUNE_ASSIGN(CUfunction ref, reference_function(env, kRmsnormRefSource, "rmsnorm_ref.cu",
                                                     "rmsnorm_ref", "rmsnorm"));
    CUdeviceptr y = data_.ref_y.ptr(), h = data_.ref_h.ptr(), x = data_.x.ptr(), r = data_.r.ptr(),
                w = data_.w.ptr();
    int hidden = static_cast<int>(s.hidden), f = s.fmt == Half::kBf16 ? 0 : 1,
        residual = s.residual ? 1 : 0;
    double eps = kRmsnormEps;
    void* args[] = {&y, &h, &x, &r, &w, &hidden, &f, &residual, &eps};
    ATTUNE_CU(cuLaunchKernel(ref, static_cast<unsigned>(s.rows), 1, 1, 256, 1, 1, 0, env.stream(),
                             args, nullptr));
    return Status::success();
  }

  Data data_;
};

}  // namespace

std::unique_ptr<CudaFamily> make_rmsnorm_family() {
  return std::make_unique<RmsnormFamily>();
}

}  // namespace attune::kernels
