#include "kernels/common/gate.h"

#include <bit>
#include <cmath>

#include <fmt/format.h>

#include "cuda/cuda_check.h"

namespace attune::kernels {

using namespace attune::cuda;

unsigned grid_for(std::size_t n, unsigned threads) {
  return static_cast<unsigned>(std::clamp<std::size_t>((n + threads - 1) / threads, 1, 132 * 16));
}

Status DeviceGate::load(CudaEnv& env) {
  if (check_) return Status::success();
  BuildRequest req;
  req.source = kGateSource;
  req.source_name = "gate.cu";
  ATTUNE_ASSIGN(Built f, env.function(req, "fill_random_half"));
  if (f.verdict != Verdict::kOk)
    return Error::internal("the gate's kernels do not compile: " + f.log);
  fill_ = f.fn;
  ATTUNE_ASSIGN(Built s, env.function(req, "sum_squares"));
  sum_sq_ = s.fn;
  ATTUNE_ASSIGN(Built c, env.function(req, "check_half"));
  check_ = c.fn;
  ATTUNE_ASSIGN(Built g, env.function(req, "count_not_poison"));
  guard_ = g.fn;
  ATTUNE_ASSIGN(scratch_, DeviceBuffer::alloc(64));
  return Status::success();
}

Status DeviceGate::fill_random(CudaEnv& env, CUdeviceptr out, std::size_t n, Half fmt, float lo,
                               float hi) {
  ATTUNE_TRY(load(env));
  unsigned long long count = n, seed = env.fresh_seed();
  int f = fmt == Half::kBf16 ? 0 : 1;
  void* args[] = {&out, &count, &seed, &f, &lo, &hi};
  ATTUNE_CU(cuLaunchKernel(fill_, grid_for(n), 1, 1, 256, 1, 1, 0, env.stream(), args, nullptr));
  return Status::success();
}

Result<Comparison> DeviceGate::compare(CudaEnv& env, CUdeviceptr out, CUdeviceptr ref,
                                       std::size_t n, Half fmt, const Tolerance& tol) {
  ATTUNE_TRY(load(env));
  ATTUNE_CU(cuMemsetD8Async(scratch_.ptr(), 0, 64, env.stream()));
  unsigned long long count = n;
  CUdeviceptr sum = scratch_.ptr();
  void* a1[] = {&ref, &count, &sum};
  ATTUNE_CU(cuLaunchKernel(sum_sq_, grid_for(n), 1, 1, 256, 1, 1, 0, env.stream(), a1, nullptr));
  double sum_sq = 0;
  ATTUNE_CU(cuMemcpyDtoHAsync(&sum_sq, sum, sizeof sum_sq, env.stream()));
  CUresult rc = cuStreamSynchronize(env.stream());
  exit_if_sticky(rc, "checking the output");
  ATTUNE_CU(rc);
  double floor = std::max(tol.floor, n ? std::sqrt(sum_sq / static_cast<double>(n)) : 0.0);
  int f = fmt == Half::kBf16 ? 0 : 1;
  unsigned short poison = kPoison16;
  double rtol = tol.rtol;
  CUdeviceptr counters = scratch_.ptr() + 8, max_err = scratch_.ptr() + 32;
  void* a2[] = {&out, &ref, &count, &f, &poison, &rtol, &floor, &counters, &max_err};
  ATTUNE_CU(cuLaunchKernel(check_, grid_for(n), 1, 1, 256, 1, 1, 0, env.stream(), a2, nullptr));
  unsigned long long host[7] = {};
  ATTUNE_CU(cuMemcpyDtoHAsync(host, scratch_.ptr(), 56, env.stream()));
  rc = cuStreamSynchronize(env.stream());
  exit_if_sticky(rc, "checking the output");
  ATTUNE_CU(rc);
  Comparison c;
  c.check.metric = "max_rel_err";
  c.check.tolerance = tol.rtol;
  c.unwritten = host[1];
  c.non_finite = host[2];
  c.mismatched = host[3];
  c.check.value = std::bit_cast<double>(host[4]);
  if (c.unwritten) {
    c.verdict = Verdict::kWrongOutput;
    c.message = fmt::format("{} of {} outputs never written", c.unwritten, n);
  } else if (c.non_finite) {
    c.verdict = Verdict::kNonFinite;
    c.check.value = NAN;
    c.message = fmt::format("{} of {} outputs are NaN or Inf", c.non_finite, n);
  } else if (c.mismatched) {
    c.verdict = Verdict::kWrongOutput;
    c.message = fmt::format("{} of {} outputs off; max rel err {:.3g} > {:.3g}", c.mismatched, n,
                            c.check.value, tol.rtol);
  }
  return c;
}

Result<Comparison> DeviceGate::check_output(CudaEnv& env, CUdeviceptr out, CUdeviceptr ref,
                                            std::size_t n, Half fmt, const Tolerance& tol) {
  ATTUNE_ASSIGN(Comparison c, compare(env, out, ref, n, fmt, tol));
  if (c.verdict != Verdict::kOk) return c;
  ATTUNE_ASSIGN(std::uint64_t damaged, guard_damage(env, out + n * 2, kGuardElements));
  if (damaged) {
    c.verdict = Verdict::kWrongOutput;
    c.message = fmt::format("wrote {} elements past the end of the output", damaged);
  }
  return c;
}

Result<std::uint64_t> DeviceGate::guard_damage(CudaEnv& env, CUdeviceptr guard, std::size_t n) {
  ATTUNE_TRY(load(env));
  ATTUNE_CU(cuMemsetD8Async(scratch_.ptr() + 56, 0, 8, env.stream()));
  unsigned long long count = n;
  unsigned short poison = kPoison16;
  CUdeviceptr out = scratch_.ptr() + 56;
  void* args[] = {&guard, &count, &poison, &out};
  ATTUNE_CU(cuLaunchKernel(guard_, grid_for(n), 1, 1, 256, 1, 1, 0, env.stream(), args, nullptr));
  std::uint64_t damaged = 0;
  ATTUNE_CU(cuMemcpyDtoHAsync(&damaged, out, 8, env.stream()));
  CUresult rc = cuStreamSynchronize(env.stream());
  exit_if_sticky(rc, "checking guard bytes");
  ATTUNE_CU(rc);
  return damaged;
}

}  // namespace attune::kernels
