#include "kernels/common/attention_family.h"

#include "cuda/cuda_check.h"
#include "kernels/common/plan_run.h"

namespace attune::kernels {

namespace {

// Queries from [-kQueryRange, kQueryRange), keys and values from [-1, 1): the scores spread (std
// ~1.3 before the softmax), so the weights are far from uniform and a key dropped, masked wrongly
// or counted twice moves the outputs that see few keys (a small cache, a prompt's early rows)
// well past the tolerance.
constexpr float kQueryRange = 3.f;

}  // namespace

Status AttentionFamily::prepare_data(const Problem& problem, const Call& call,
                                     std::size_t aux_bytes) {
  if (data_.key == problem.structural_key()) return Status::success();
  data_ = Data{};
  ATTUNE_TRY(open_cublaslt());
  ATTUNE_ASSIGN(data_.q, cuda::DeviceBuffer::alloc(call.q * 2));
  ATTUNE_ASSIGN(data_.k, cuda::DeviceBuffer::alloc(call.kv * 2));
  ATTUNE_ASSIGN(data_.v, cuda::DeviceBuffer::alloc(call.kv * 2));
  ATTUNE_ASSIGN(data_.o, cuda::DeviceBuffer::alloc((call.q + kGuardElements) * 2));
  ATTUNE_ASSIGN(data_.ref, cuda::DeviceBuffer::alloc(call.q * 8));
  ATTUNE_ASSIGN(data_.aux, cuda::DeviceBuffer::alloc(aux_bytes));
  data_.key = problem.structural_key();
  return Status::success();
}

Result<Outcome> AttentionFamily::run_gated(cuda::CudaEnv& env, const Plan& plan, const Call& call,
                                           const std::function<Status()>& reference,
                                           const Tolerance& tol, bool scaled, Regime regime) {
  PlanArgs args;
  args.q = data_.q.ptr();
  args.k = data_.k.ptr();
  args.v = data_.v.ptr();
  args.o = data_.o.ptr();
  args.kv = call.kv_len;
  args.rows = call.rows;
  ReadyPlan ready;
  ATTUNE_ASSIGN(auto unready, ready_plan(env, lt_, plan, data_.workspace, args, &ready));
  if (unready) return *unready;
  const auto& launch = ready.launch;

  const cuda::Half fmt = call.bf16 ? cuda::Half::kBf16 : cuda::Half::kFp16;
  ATTUNE_TRY(gate_.fill_random(env, args.q, call.q, fmt, -kQueryRange, kQueryRange));
  ATTUNE_TRY(gate_.fill_random(env, args.k, call.kv, fmt));
  ATTUNE_TRY(gate_.fill_random(env, args.v, call.kv, fmt));
  ATTUNE_TRY(data_.o.fill16(cuda::kPoison16, env.stream()));
  ATTUNE_TRY(reference());
  ATTUNE_ASSIGN(auto refused, launch_and_wait(env, launch, signature_.name.c_str()));
  if (refused) return *refused;
  ATTUNE_ASSIGN(Comparison cmp, gate_.check_output(env, args.o, data_.ref.ptr(), call.q, fmt, tol,
                                                   scaled ? data_.aux.ptr() : 0));
  return timed_if_passed(env, cmp, launch, regime);
}

}  // namespace attune::kernels
