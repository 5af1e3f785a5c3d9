#include "kernels/common/plan_run.h"

#include <algorithm>

namespace attune::kernels {

namespace {

// Appends the function of each step to fns, in order; a step that does not build or cannot
// launch as planned gives the refusing outcome (named after its kernel) instead.
Result<std::optional<Outcome>> load_steps(cuda::CudaEnv& env, const cuda::BuildRequest& build,
                                          const std::vector<const LaunchStep*>& steps,
                                          std::vector<CUfunction>* fns) {
  for (const LaunchStep* step : steps) {
    ATTUNE_ASSIGN(
        cuda::Launchable k,
        cuda::launchable(env, build, step->kernel, step->block.x * step->block.y * step->block.z,
                         step->shared_bytes));
    if (k.refused) {
      if (k.refused->verdict == Verdict::kLaunchFailed)
        k.refused->message = step->kernel + ": " + k.refused->message;
      return k.refused;
    }
    fns->push_back(k.fn);
  }
  return std::optional<Outcome>{};
}

}  // namespace

Result<std::optional<Outcome>> prepare_plan(cuda::CudaEnv& env, cublasLtHandle_t lt,
                                            const Plan& plan, PreparedPlan* out) {
  *out = PreparedPlan{};
  if (const auto* kp = std::get_if<KernelPlan>(&plan)) {
    ATTUNE_TRY(check_args(*kp));
    std::vector<const LaunchStep*> steps;
    for (const LaunchStep& st : kp->steps) steps.push_back(&st);
    out->workspace_bytes = kp->workspace_bytes;
    return load_steps(env, kp->build, steps, &out->fns);
  }
  const auto* cp = std::get_if<ChainPlan>(&plan);
  if (!cp) return Error::internal("prepare_plan: a cuBLASLt variant is the gemm family's own");
  ATTUNE_TRY(check_args(*cp));
  std::vector<const LaunchStep*> steps;
  for (const ChainStep& st : cp->steps)
    if (const auto* k = std::get_if<LaunchStep>(&st)) steps.push_back(k);
  ATTUNE_ASSIGN(auto refused, load_steps(env, cp->build, steps, &out->fns));
  if (refused) return refused;
  std::string why;
  ATTUNE_ASSIGN(out->chain, prepare_chain(lt, *cp, out->fns, &why));
  if (!out->chain) return std::optional<Outcome>(Outcome::failed(Verdict::kUnsupported, why));
  out->workspace_bytes = cp->workspace_bytes;
  return std::optional<Outcome>{};
}

std::function<CUresult(CUstream)> plan_launcher(cublasLtHandle_t lt, const Plan& plan,
                                                const PreparedPlan& prepared, PlanArgs& args) {
  if (const auto* kp = std::get_if<KernelPlan>(&plan))
    return [kp, &prepared, &args](CUstream st) { return enqueue(*kp, prepared.fns, args, st); };
  const ChainPlan& cp = std::get<ChainPlan>(plan);
  return [lt, &cp, &prepared, &args](CUstream st) {
    return enqueue(lt, cp, *prepared.chain, args, st);
  };
}

Result<std::optional<Outcome>> ready_plan(cuda::CudaEnv& env, cublasLtHandle_t lt, const Plan& plan,
                                          cuda::DeviceBuffer& workspace, PlanArgs& args,
                                          ReadyPlan* out) {
  ATTUNE_ASSIGN(auto unready, prepare_plan(env, lt, plan, &out->prepared));
  if (unready) return unready;
  ATTUNE_TRY(grow_workspace(workspace, out->prepared.workspace_bytes));
  args.workspace = workspace.ptr();
  out->launch = plan_launcher(lt, plan, out->prepared, args);
  return std::optional<Outcome>{};
}

Status grow_workspace(cuda::DeviceBuffer& workspace, std::size_t bytes) {
  if (workspace.bytes() >= bytes && workspace.ptr()) return Status::success();
  workspace = cuda::DeviceBuffer{};
  ATTUNE_ASSIGN(workspace, cuda::DeviceBuffer::alloc(std::max<std::size_t>(bytes, 256)));
  return Status::success();
}

}  // namespace attune::kernels
