// The part every built-in CUDA family shares: an op of the registry (kernels/ops.h), whose
// signature resolves problems and makes spaces and whose plan function (plan_NAME) says what a
// config compiles; the correctness gate; a cuBLASLt handle for the plans and references that call
// cuBLASLt; and a candidate's outcome from the gate's comparison, timed where it passed. A family
// derives from it and writes examples() and run(). One thread at a time, as every CudaFamily.
#pragma once

#include <cublasLt.h>

#include <functional>
#include <optional>
#include <string>

#include "backends/cuda/cuda_family.h"
#include "core/op.h"
#include "kernels/common/gate.h"
#include "kernels/plan.h"

namespace attune::kernels {

class OpFamily : public cuda::CudaFamily {
 public:
  using PlanFn = Result<Plan> (*)(const Problem&, const Config&);
  OpFamily(const OpSignature& signature, PlanFn plan) : signature_(signature), plan_(plan) {}
  ~OpFamily() override;
  OpFamily(const OpFamily&) = delete;
  OpFamily& operator=(const OpFamily&) = delete;

  std::string op() const override { return signature_.name; }
  Result<Problem> resolve(const Problem& spec) const override { return signature_.resolve(spec); }
  Result<Space> space(const Problem& problem) const override { return signature_.space(problem); }
  // A KernelPlan's or a ChainPlan's kernels; nothing for a config the plan refuses or an LtPlan
  // (a cuBLASLt call compiles nothing).
  std::optional<cuda::BuildRequest> build_request(const Problem& problem,
                                                  const Config& config) const override;

 protected:
  // Creates the family's cuBLASLt handle (lt_) on first use.
  Status open_cublaslt();
  // The candidate's outcome from the gate's comparison and, where it passed, launch timed under
  // the regime.
  static Result<Outcome> timed_if_passed(cuda::CudaEnv& env, const Comparison& cmp,
                                         const std::function<CUresult(CUstream)>& launch,
                                         Regime regime);
  static Result<Outcome> timed_if_passed(cuda::CudaEnv& env, Outcome outcome,
                                         const std::function<CUresult(CUstream)>& launch,
                                         Regime regime);

  const OpSignature& signature_;
  const PlanFn plan_;
  DeviceGate gate_;
  cublasLtHandle_t lt_ = nullptr;
};

}  // namespace attune::kernels
