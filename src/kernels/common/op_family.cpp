#include "kernels/common/op_family.h"

#include <variant>

#include "cuda/cuda_check.h"

namespace attune::kernels {

OpFamily::~OpFamily() {
  if (lt_) cublasLtDestroy(lt_);
}

std::optional<cuda::BuildRequest> OpFamily::build_request(const Problem& problem,
                                                          const Config& config) const {
  auto plan = plan_(problem, config);
  if (!plan) return std::nullopt;
  if (const auto* kp = std::get_if<KernelPlan>(&*plan)) return kp->build;
  if (const auto* cp = std::get_if<ChainPlan>(&*plan)) return cp->build;
  return std::nullopt;
}

Status OpFamily::open_cublaslt() {
  if (!lt_) ATTUNE_CUBLASLT(cublasLtCreate(&lt_));
  return Status::success();
}

Result<Outcome> OpFamily::timed_if_passed(cuda::CudaEnv& env, const Comparison& cmp,
                                          const std::function<CUresult(CUstream)>& launch,
                                          Regime regime) {
  Outcome o;
  o.verdict = cmp.verdict;
  o.check = cmp.check;
  o.message = cmp.message;
  return timed_if_passed(env, std::move(o), launch, regime);
}

Result<Outcome> OpFamily::timed_if_passed(cuda::CudaEnv& env, Outcome outcome,
                                          const std::function<CUresult(CUstream)>& launch,
                                          Regime regime) {
  if (outcome.verdict != Verdict::kOk) return outcome;
  ATTUNE_ASSIGN(Measurement m, env.time(launch, regime));
  outcome.measurement = m;
  return outcome;
}

}  // namespace attune::kernels
