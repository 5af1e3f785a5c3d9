#include "kernels/plan_chain.h"

#include <fmt/format.h>

#include "cuda/cuda_check.h"

namespace attune::kernels {

namespace {

// Row-major C[m, n] = A[m, k] . op(B) is column-major C^T[n, m] = op(B)^T . A^T: cuBLASLt's A is
// our B, its B our A, as in gemm_lt.h.
Status set_batch(cublasLtMatrixLayout_t l, std::int64_t batch, std::int64_t stride) {
  const std::int32_t count = static_cast<std::int32_t>(batch);
  ATTUNE_CUBLASLT(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                                   sizeof count));
  ATTUNE_CUBLASLT(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                   &stride, sizeof stride));
  return Status::success();
}

}  // namespace

Result<std::optional<LtBatched>> make_lt_batched(cublasLtHandle_t h, const LtMatmul& mm,
                                                 std::string* refusal) {
  LtBatched out;
  LtProblem& p = out.problem;
  cublasLtMatmulDesc_t d = nullptr;
  ATTUNE_CUBLASLT(cublasLtMatmulDescCreate(&d, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  p.desc.reset(d);
  cublasOperation_t ta = mm.b_transposed ? CUBLAS_OP_T : CUBLAS_OP_N, tb = CUBLAS_OP_N;
  ATTUNE_CUBLASLT(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
  ATTUNE_CUBLASLT(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
  const cudaDataType_t in = lt_type(mm.bf16), out_t = mm.c_fp32 ? CUDA_R_32F : in;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  // Our B: stored [n, k] (column-major k x n) when transposed, else [k, n] (column-major n x k).
  if (mm.b_transposed) {
    ATTUNE_CUBLASLT(cublasLtMatrixLayoutCreate(&la, in, mm.k, mm.n, mm.k));
  } else {
    ATTUNE_CUBLASLT(cublasLtMatrixLayoutCreate(&la, in, mm.n, mm.k, mm.n));
  }
  p.a.reset(la);
  ATTUNE_CUBLASLT(cublasLtMatrixLayoutCreate(&lb, in, mm.k, mm.m, mm.k));
  p.b.reset(lb);
  ATTUNE_CUBLASLT(cublasLtMatrixLayoutCreate(&lc, out_t, mm.n, mm.m, mm.n));
  p.c.reset(lc);
  ATTUNE_TRY(set_batch(la, mm.batch, mm.b.stride));
  ATTUNE_TRY(set_batch(lb, mm.batch, mm.a.stride));
  ATTUNE_TRY(set_batch(lc, mm.batch, mm.c.stride));
  cublasLtMatmulPreference_t pref = nullptr;
  ATTUNE_CUBLASLT(cublasLtMatmulPreferenceCreate(&pref));
  std::unique_ptr<cublasLtMatmulPreferenceOpaque_t, LtDestroy> pref_owner(pref);
  size_t ws = mm.workspace_bytes;
  ATTUNE_CUBLASLT(cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
  p.heuristics.resize(1);
  int found = 0;
  const cublasStatus_t st =
      cublasLtMatmulAlgoGetHeuristic(h, d, la, lb, lc, lc, pref, 1, p.heuristics.data(), &found);
  if (st != CUBLAS_STATUS_SUCCESS || found == 0) {
    *refusal =
        fmt::format("cuBLASLt has no algorithm for the {}x{}x{} matmul batched {} (status {})",
                    mm.m, mm.n, mm.k, mm.batch, static_cast<int>(st));
    return std::optional<LtBatched>{};
  }
  out.algo = p.heuristics[0].algo;
  return std::optional<LtBatched>{std::move(out)};
}

Result<std::optional<ChainLaunch>> prepare_chain(cublasLtHandle_t h, const ChainPlan& plan,
                                                 const std::vector<CUfunction>& kernel_fns,
                                                 std::string* refusal) {
  ChainLaunch launch;
  std::size_t next_fn = 0;
  for (const ChainStep& step : plan.steps) {
    if (std::holds_alternative<LaunchStep>(step)) {
      if (next_fn >= kernel_fns.size())
        return Error::internal("prepare_chain: fewer functions than kernel steps");
      launch.fns.push_back(kernel_fns[next_fn++]);
      launch.lt.emplace_back();
      continue;
    }
    ATTUNE_ASSIGN(std::optional<LtBatched> lt,
                  make_lt_batched(h, std::get<LtMatmul>(step), refusal));
    if (!lt) return std::optional<ChainLaunch>{};
    launch.fns.push_back(nullptr);
    launch.lt.push_back(std::move(lt));
  }
  return std::optional<ChainLaunch>{std::move(launch)};
}

CUresult enqueue(cublasLtHandle_t h, const ChainPlan& plan, const ChainLaunch& launch,
                 PlanArgs& args, CUstream stream) {
  static const float one = 1.f, zero = 0.f;
  for (std::size_t i = 0; i < plan.steps.size(); ++i) {
    if (const auto* k = std::get_if<LaunchStep>(&plan.steps[i])) {
      const CUresult rc = launch_step(*k, launch.fns[i], args, stream);
      if (rc != CUDA_SUCCESS) return rc;
      continue;
    }
    const LtMatmul& mm = std::get<LtMatmul>(plan.steps[i]);
    const LtBatched& lt = *launch.lt[i];
    auto at = [&args](const LtMatmul::Operand& op) {
      return reinterpret_cast<void*>(*pointer_arg(op.arg, args) + op.offset);
    };
    void* ws = reinterpret_cast<void*>(args.workspace + mm.workspace_offset);
    void* c = at(mm.c);
    const bool residual = !mm.residual.arg.empty();
    const cublasStatus_t st =
        cublasLtMatmul(h, lt.problem.desc.get(), &one, at(mm.b), lt.problem.a.get(), at(mm.a),
                       lt.problem.b.get(), residual ? &one : &zero, residual ? at(mm.residual) : c,
                       lt.problem.c.get(), c, lt.problem.c.get(), &lt.algo, ws, mm.workspace_bytes,
                       reinterpret_cast<cudaStream_t>(stream));
    if (st != CUBLAS_STATUS_SUCCESS) return CUDA_ERROR_LAUNCH_FAILED;
  }
  return CUDA_SUCCESS;
}

}  // namespace attune::kernels
