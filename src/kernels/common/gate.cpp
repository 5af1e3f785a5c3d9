#include "kernels/common/gate.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include <fmt/format.h>

#include "cuda/cuda_check.h"

namespace attune::kernels {

using namespace attune::cuda;

std::size_t size_of(GateType t) {
  switch (t) {
    case GateType::kF64:
    case GateType::kI64:
      return 8;
    case GateType::kF16:
    case GateType::kBf16:
      return 2;
    case GateType::kI8:
    case GateType::kU8:
      return 1;
    default:
      return 4;
  }
}

bool is_floating(GateType t) {
  return t == GateType::kF32 || t == GateType::kF64 || t == GateType::kF16 || t == GateType::kBf16;
}

Result<CUfunction> reference_function(CudaEnv& env, const char* source, const char* source_name,
                                      const char* kernel, const std::string& op) {
  BuildRequest req;
  req.source = source;
  req.source_name = source_name;
  ATTUNE_ASSIGN(Built built, env.function(req, kernel));
  if (built.verdict != Verdict::kOk)
    return Error::internal("the " + op + " reference does not compile: " + built.log);
  return built.fn;
}

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
  ATTUNE_ASSIGN(Built ft, env.function(req, "fill_random_typed"));
  fill_typed_ = ft.fn;
  ATTUNE_ASSIGN(Built fp, env.function(req, "fill_pattern"));
  pattern_ = fp.fn;
  ATTUNE_ASSIGN(Built st, env.function(req, "sum_squares_typed"));
  sum_sq_typed_ = st.fn;
  ATTUNE_ASSIGN(Built ct, env.function(req, "check_typed"));
  check_typed_ = ct.fn;
  ATTUNE_ASSIGN(Built bn, env.function(req, "count_bytes_not"));
  bytes_not_ = bn.fn;
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
                                       std::size_t n, Half fmt, const Tolerance& tol,
                                       CUdeviceptr scale) {
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
  void* a2[] = {&out, &ref, &scale, &count, &f, &poison, &rtol, &floor, &counters, &max_err};
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
                                            std::size_t n, Half fmt, const Tolerance& tol,
                                            CUdeviceptr scale) {
  ATTUNE_ASSIGN(Comparison c, compare(env, out, ref, n, fmt, tol, scale));
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

Status DeviceGate::read_scratch(CudaEnv& env, void* host, std::size_t offset, std::size_t bytes,
                                const char* what) {
  ATTUNE_CU(cuMemcpyDtoHAsync(host, scratch_.ptr() + offset, bytes, env.stream()));
  CUresult rc = cuStreamSynchronize(env.stream());
  exit_if_sticky(rc, what);
  ATTUNE_CU(rc);
  return Status::success();
}

Status DeviceGate::fill_random(CudaEnv& env, CUdeviceptr out, std::size_t n, GateType type,
                               std::uint64_t seed, double lo, double hi) {
  ATTUNE_TRY(load(env));
  unsigned long long count = n, s = seed;
  int t = static_cast<int>(type);
  void* args[] = {&out, &count, &s, &t, &lo, &hi};
  ATTUNE_CU(
      cuLaunchKernel(fill_typed_, grid_for(n), 1, 1, 256, 1, 1, 0, env.stream(), args, nullptr));
  return Status::success();
}

Status DeviceGate::fill_pattern(CudaEnv& env, CUdeviceptr out, std::size_t n, int size,
                                std::uint64_t bits) {
  ATTUNE_TRY(load(env));
  unsigned long long count = n, b = bits;
  void* args[] = {&out, &count, &size, &b};
  ATTUNE_CU(cuLaunchKernel(pattern_, grid_for(n), 1, 1, 256, 1, 1, 0, env.stream(), args, nullptr));
  return Status::success();
}

Result<DeviceCheck> DeviceGate::check_typed(CudaEnv& env, CUdeviceptr out, CUdeviceptr ref,
                                            std::size_t n, GateType type, bool check_unwritten,
                                            std::uint64_t poison, const Tolerance& tol) {
  ATTUNE_TRY(load(env));
  ATTUNE_CU(cuMemsetD8Async(scratch_.ptr(), 0, 64, env.stream()));
  unsigned long long count = n;
  int t = static_cast<int>(type);
  CUdeviceptr sum = scratch_.ptr();
  void* a1[] = {&ref, &count, &t, &sum};
  ATTUNE_CU(
      cuLaunchKernel(sum_sq_typed_, grid_for(n), 1, 1, 256, 1, 1, 0, env.stream(), a1, nullptr));
  double sum_sq = 0;
  ATTUNE_TRY(read_scratch(env, &sum_sq, 0, sizeof sum_sq, "checking the output"));
  DeviceCheck c;
  c.floor = std::max(tol.floor, n ? std::sqrt(sum_sq / static_cast<double>(n)) : 0.0);
  int unwritten = check_unwritten ? 1 : 0;
  unsigned long long bits = poison;
  double rtol = tol.rtol, floor = c.floor;
  CUdeviceptr counters = scratch_.ptr() + 8, max_err = scratch_.ptr() + 32;
  void* a2[] = {&out, &ref, &count, &t, &unwritten, &bits, &rtol, &floor, &counters, &max_err};
  ATTUNE_CU(
      cuLaunchKernel(check_typed_, grid_for(n), 1, 1, 256, 1, 1, 0, env.stream(), a2, nullptr));
  unsigned long long host[4] = {};
  ATTUNE_TRY(read_scratch(env, host, 8, sizeof host, "checking the output"));
  c.unwritten = host[0];
  c.non_finite = host[1];
  c.mismatched = host[2];
  c.max_rel_err = std::bit_cast<double>(host[3]);
  return c;
}

Result<std::uint64_t> DeviceGate::bytes_changed(CudaEnv& env, CUdeviceptr p, std::size_t n,
                                                unsigned char value) {
  ATTUNE_TRY(load(env));
  ATTUNE_CU(cuMemsetD8Async(scratch_.ptr() + 56, 0, 8, env.stream()));
  unsigned long long count = n;
  CUdeviceptr out = scratch_.ptr() + 56;
  void* args[] = {&p, &count, &value, &out};
  ATTUNE_CU(
      cuLaunchKernel(bytes_not_, grid_for(n), 1, 1, 256, 1, 1, 0, env.stream(), args, nullptr));
  std::uint64_t changed = 0;
  ATTUNE_TRY(read_scratch(env, &changed, 56, sizeof changed, "checking guard bytes"));
  return changed;
}

}  // namespace attune::kernels
