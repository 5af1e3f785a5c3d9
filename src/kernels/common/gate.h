// The correctness gate on the device for 16-bit outputs: fresh random inputs and comparison
// with a float64 reference, without copying outputs to the host. One thread at a time.
#pragma once

#include <string>

#include "backends/cuda/cuda_family.h"
#include "cuda/host_types.h"
#include "verify/compare.h"

namespace attune::kernels {

// The gate kernels' source (gate.cu), embedded at build time.
extern const char* const kGateSource;

// Guard elements allocated past the end of each 16-bit output.
inline constexpr std::size_t kGuardElements = 1024;

class DeviceGate {
 public:
  // Fills n 16-bit values with uniform [lo, hi) drawn from a fresh seed.
  Status fill_random(cuda::CudaEnv& env, CUdeviceptr out, std::size_t n, cuda::Half fmt,
                     float lo = -1.f, float hi = 1.f);
  // Compares n 16-bit outputs with a float64 reference under tol.
  Result<Comparison> compare(cuda::CudaEnv& env, CUdeviceptr out, CUdeviceptr ref, std::size_t n,
                             cuda::Half fmt, const Tolerance& tol);
  // compare(), then the kGuardElements past the output's end (allocated by the caller) must still
  // hold the poison; a write past the end is wrong_output.
  Result<Comparison> check_output(cuda::CudaEnv& env, CUdeviceptr out, CUdeviceptr ref,
                                  std::size_t n, cuda::Half fmt, const Tolerance& tol);
  // How many of the n 16-bit guard elements at `guard` no longer hold the poison (a write past
  // the end of an output).
  Result<std::uint64_t> guard_damage(cuda::CudaEnv& env, CUdeviceptr guard, std::size_t n);

 private:
  Status load(cuda::CudaEnv& env);
  CUfunction fill_ = nullptr, sum_sq_ = nullptr, check_ = nullptr, guard_ = nullptr;
  cuda::DeviceBuffer scratch_;
};

// Launch geometry for a grid-stride kernel over n elements.
unsigned grid_for(std::size_t n, unsigned threads = 256);

}  // namespace attune::kernels
