// The correctness gate on the device: fresh random inputs and the comparison of outputs with a
// reference (a float64 one for the built-in 16-bit families; one of the output's own type for
// user kernels), without copying outputs to the host. One thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "backends/cuda/cuda_family.h"
#include "cuda/host_types.h"
#include "verify/compare.h"

namespace attune::kernels {

// The gate kernels' source (gate.cu), embedded at build time.
extern const char* const kGateSource;

// Element types the typed kernels take (gate.cu's TYPE codes).
enum class GateType { kF32, kF64, kF16, kBf16, kI32, kI64, kU32, kI8, kU8 };
std::size_t size_of(GateType t);
bool is_floating(GateType t);

// What check_typed() counted; the caller words the verdict (it may want the host's message).
struct DeviceCheck {
  std::uint64_t unwritten = 0, non_finite = 0, mismatched = 0;
  double max_rel_err = 0;
  double floor = 0;  // the floor the errors were taken against: max(tol.floor, rms(ref))
  bool ok() const { return unwritten == 0 && non_finite == 0 && mismatched == 0; }
};

// Guard elements allocated past the end of each 16-bit output.
inline constexpr std::size_t kGuardElements = 1024;

class DeviceGate {
 public:
  // Fills n 16-bit values with uniform [lo, hi) drawn from a fresh seed.
  Status fill_random(cuda::CudaEnv& env, CUdeviceptr out, std::size_t n, cuda::Half fmt,
                     float lo = -1.f, float hi = 1.f);
  // Compares n 16-bit outputs with a float64 reference under tol: each error relative to the
  // largest of |ref|, the reference's RMS (tol.floor at least) and, when `scale` is given, that
  // element's own float64 scale: the magnitude of the terms the output sums, where outputs differ
  // in size by nature (causal attention: a row of few keys sums far larger terms than the RMS of
  // the rows seeing thousands).
  Result<Comparison> compare(cuda::CudaEnv& env, CUdeviceptr out, CUdeviceptr ref, std::size_t n,
                             cuda::Half fmt, const Tolerance& tol, CUdeviceptr scale = 0);
  // compare(), then the kGuardElements past the output's end (allocated by the caller) must still
  // hold the poison; a write past the end is wrong_output.
  Result<Comparison> check_output(cuda::CudaEnv& env, CUdeviceptr out, CUdeviceptr ref,
                                  std::size_t n, cuda::Half fmt, const Tolerance& tol,
                                  CUdeviceptr scale = 0);
  // How many of the n 16-bit guard elements at `guard` no longer hold the poison (a write past
  // the end of an output).
  Result<std::uint64_t> guard_damage(cuda::CudaEnv& env, CUdeviceptr guard, std::size_t n);

  // Any element type. Random values: uniform in [lo, hi) for floating types, integers in
  // [lo, hi] inclusive; element i is a function of (seed, i) alone, so a seed remakes its set.
  Status fill_random(cuda::CudaEnv& env, CUdeviceptr out, std::size_t n, GateType type,
                     std::uint64_t seed, double lo, double hi);
  // Each of n elements of `size` bytes set to the low bytes of `bits` (poison, guard bytes).
  Status fill_pattern(cuda::CudaEnv& env, CUdeviceptr out, std::size_t n, int size,
                      std::uint64_t bits);
  // n outputs against n reference elements of the same type, as compare_widened() does on the
  // host: elements still holding `poison` are unwritten when check_unwritten.
  Result<DeviceCheck> check_typed(cuda::CudaEnv& env, CUdeviceptr out, CUdeviceptr ref,
                                  std::size_t n, GateType type, bool check_unwritten,
                                  std::uint64_t poison, const Tolerance& tol);
  // How many of n bytes at p no longer hold `value`.
  Result<std::uint64_t> bytes_changed(cuda::CudaEnv& env, CUdeviceptr p, std::size_t n,
                                      unsigned char value);

 private:
  Status load(cuda::CudaEnv& env);
  // Runs the queued work and reads `bytes` of scratch back.
  Status read_scratch(cuda::CudaEnv& env, void* host, std::size_t offset, std::size_t bytes,
                      const char* what);
  CUfunction fill_ = nullptr, sum_sq_ = nullptr, check_ = nullptr, guard_ = nullptr;
  CUfunction fill_typed_ = nullptr, pattern_ = nullptr, sum_sq_typed_ = nullptr,
             check_typed_ = nullptr, bytes_not_ = nullptr;
  cuda::DeviceBuffer scratch_;
};

// Launch geometry for a grid-stride kernel over n elements.
unsigned grid_for(std::size_t n, unsigned threads = 256);

// Kernel `kernel` of an op's reference source (compiled once, then from the cache); a source that
// does not compile is an internal error: "the OP reference does not compile: LOG".
Result<CUfunction> reference_function(cuda::CudaEnv& env, const char* source,
                                      const char* source_name, const char* kernel,
                                      const std::string& op);

}  // namespace attune::kernels
