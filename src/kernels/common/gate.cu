// Device-side pieces of the correctness gate, compiled by NVRTC once per device and shared by
// the kernel families: fresh random 16-bit inputs, and the comparison of a 16-bit output with a
// float64 reference (unwritten poison, NaN/Inf, relative error against max(|ref|, rms(ref))).
// FMT: 0 = bf16, 1 = fp16.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace {

__device__ __forceinline__ unsigned long long splitmix(unsigned long long x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

__device__ __forceinline__ float to_float(unsigned short v, int fmt) {
  if (fmt == 0) return __bfloat162float(__ushort_as_bfloat16(v));
  return __half2float(__ushort_as_half(v));
}

__device__ __forceinline__ unsigned short from_float(float f, int fmt) {
  if (fmt == 0) return __bfloat16_as_ushort(__float2bfloat16(f));
  return __half_as_ushort(__float2half(f));
}

}  // namespace

extern "C" __global__ void fill_random_half(unsigned short* out, unsigned long long n,
                                            unsigned long long seed, int fmt, float lo, float hi) {
  for (unsigned long long i = blockIdx.x * 1ull * blockDim.x + threadIdx.x; i < n;
       i += 1ull * gridDim.x * blockDim.x) {
    const float u = (splitmix(seed ^ (i * 0xd1b54a32d192ed03ULL)) >> 40) * (1.0f / 16777216.0f);
    out[i] = from_float(lo + (hi - lo) * u, fmt);
  }
}

extern "C" __global__ void sum_squares(const double* ref, unsigned long long n, double* out) {
  double s = 0;
  for (unsigned long long i = blockIdx.x * 1ull * blockDim.x + threadIdx.x; i < n;
       i += 1ull * gridDim.x * blockDim.x)
    s += ref[i] * ref[i];
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if (threadIdx.x % 32 == 0) atomicAdd(out, s);
}

// counters: [0] unwritten, [1] non-finite, [2] mismatched; max_err holds the largest relative
// error's bits (non-negative doubles order like their bit patterns).
extern "C" __global__ void check_half(const unsigned short* out, const double* ref,
                                      unsigned long long n, int fmt, unsigned short poison,
                                      double rtol, double floor, unsigned long long* counters,
                                      unsigned long long* max_err) {
  unsigned long long unwritten = 0, nonfinite = 0, mismatched = 0;
  double worst = 0;
  for (unsigned long long i = blockIdx.x * 1ull * blockDim.x + threadIdx.x; i < n;
       i += 1ull * gridDim.x * blockDim.x) {
    const unsigned short v = out[i];
    if (v == poison) {
      ++unwritten;
      continue;
    }
    const float f = to_float(v, fmt);
    if (!isfinite(f)) {
      ++nonfinite;
      continue;
    }
    const double err = fabs(static_cast<double>(f) - ref[i]) / fmax(fabs(ref[i]), floor);
    if (err > rtol) ++mismatched;
    worst = fmax(worst, err);
  }
  if (unwritten) atomicAdd(&counters[0], unwritten);
  if (nonfinite) atomicAdd(&counters[1], nonfinite);
  if (mismatched) atomicAdd(&counters[2], mismatched);
  if (worst > 0) atomicMax(max_err, static_cast<unsigned long long>(__double_as_longlong(worst)));
}

// Guard bytes: elements past the end of an output that must still hold the poison.
extern "C" __global__ void count_not_poison(const unsigned short* p, unsigned long long n,
                                            unsigned short poison, unsigned long long* count) {
  unsigned long long c = 0;
  for (unsigned long long i = blockIdx.x * 1ull * blockDim.x + threadIdx.x; i < n;
       i += 1ull * gridDim.x * blockDim.x)
    c += p[i] != poison;
  if (c) atomicAdd(count, c);
}
