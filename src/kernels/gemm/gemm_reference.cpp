#include "kernels/gemm/gemm_reference.h"

#include "kernels/common/gate.h"

namespace attune::kernels {

extern const char* const kGemmRefSource;

namespace {

// Above this many multiply-adds the float64 kernel is too slow to run per check.
constexpr double kNaiveRefMacs = 1.2e9;

}  // namespace

Status GemmReference::prepare(cublasLtHandle_t lt, const GemmShape& s, std::string op) {
  lt_ = lt;
  op_ = std::move(op);
  ref_ = {};
  ref32_ = {};
  workspace_ = {};
  lt_ref_.reset();
  const auto mn = static_cast<std::size_t>(s.m * s.n);
  ATTUNE_ASSIGN(ref_, cuda::DeviceBuffer::alloc(mn * 8));
  if (static_cast<double>(s.m) * s.n * s.k <= kNaiveRefMacs) return Status::success();
  ATTUNE_ASSIGN(ref32_, cuda::DeviceBuffer::alloc(mn * 4));
  ATTUNE_ASSIGN(workspace_, cuda::DeviceBuffer::alloc(kLtWorkspaceBytes));
  ATTUNE_ASSIGN(LtProblem ref, make_lt(lt_, s, CUDA_R_32F, false, nullptr));
  if (ref.heuristics.empty())
    return Error::internal("cuBLASLt offers no fp32-output algorithm for the reference");
  lt_ref_ = std::move(ref);
  return Status::success();
}

Status GemmReference::run(cuda::CudaEnv& env, const GemmShape& s, CUdeviceptr a, CUdeviceptr b,
                          CUdeviceptr bias) {
  ATTUNE_TRY(run_product(env, s, a, b, bias));
  if (!s.rms_norm) return Status::success();
  ATTUNE_ASSIGN(CUfunction scale,
                reference_function(env, kGemmRefSource, "gemm_ref.cu", "row_rms_scale_ref", op_));
  CUdeviceptr c = ref_.ptr();
  int n = static_cast<int>(s.n), k = static_cast<int>(s.k), fmt_id = s.bf16 ? 0 : 1;
  double eps = kRmsnormEps;
  void* args[] = {&c, &a, &n, &k, &fmt_id, &eps};
  ATTUNE_CU(cuLaunchKernel(scale, static_cast<unsigned>(s.m), 1, 1, 256, 1, 1, 0, env.stream(),
                           args, nullptr));
  return Status::success();
}

Status GemmReference::run_product(cuda::CudaEnv& env, const GemmShape& s, CUdeviceptr a,
                                  CUdeviceptr b, CUdeviceptr bias) {
  int fmt_id = s.bf16 ? 0 : 1, has_bias = s.bias ? 1 : 0;
  CUdeviceptr ref = ref_.ptr();
  if (!lt_ref_) {
    ATTUNE_ASSIGN(CUfunction k,
                  reference_function(env, kGemmRefSource, "gemm_ref.cu", "gemm_ref", op_));
    int m = static_cast<int>(s.m), n = static_cast<int>(s.n), kk = static_cast<int>(s.k);
    void* args[] = {&ref, &a, &b, &bias, &m, &n, &kk, &fmt_id, &has_bias};
    const unsigned grid = static_cast<unsigned>((s.m * s.n + 255) / 256);
    ATTUNE_CU(cuLaunchKernel(k, grid, 1, 1, 256, 1, 1, 0, env.stream(), args, nullptr));
    return Status::success();
  }
  ATTUNE_CUBLASLT(lt_matmul(lt_, *lt_ref_, lt_ref_->heuristics[0].algo, reinterpret_cast<void*>(a),
                            reinterpret_cast<void*>(b), reinterpret_cast<void*>(ref32_.ptr()),
                            reinterpret_cast<void*>(workspace_.ptr()), env.stream()));
  ATTUNE_ASSIGN(CUfunction w,
                reference_function(env, kGemmRefSource, "gemm_ref.cu", "widen_add_bias", op_));
  CUdeviceptr in = ref32_.ptr();
  int n = static_cast<int>(s.n);
  unsigned long long count = static_cast<unsigned long long>(s.m * s.n);
  void* args[] = {&ref, &in, &bias, &n, &count, &fmt_id, &has_bias};
  ATTUNE_CU(cuLaunchKernel(w, grid_for(count), 1, 1, 256, 1, 1, 0, env.stream(), args, nullptr));
  return Status::success();
}

}  // namespace attune::kernels
