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

// One thread's counts of a comparison, added into counters [0] unwritten, [1] non-finite,
// [2] mismatched and max_err (the largest relative error's bits: non-negative doubles order like
// their bit patterns).
struct Tally {
  unsigned long long unwritten = 0, nonfinite = 0, mismatched = 0;
  double worst = 0;
  __device__ void error(double err, double rtol) {
    if (err > rtol) ++mismatched;
    worst = fmax(worst, err);
  }
  __device__ void publish(unsigned long long* counters, unsigned long long* max_err) const {
    if (unwritten) atomicAdd(&counters[0], unwritten);
    if (nonfinite) atomicAdd(&counters[1], nonfinite);
    if (mismatched) atomicAdd(&counters[2], mismatched);
    if (worst > 0) atomicMax(max_err, static_cast<unsigned long long>(__double_as_longlong(worst)));
  }
};

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

// counters and max_err: see Tally. scale: null, or each element's own scale (the error is
// relative to the largest of |ref|, floor and it).
extern "C" __global__ void check_half(const unsigned short* out, const double* ref,
                                      const double* scale, unsigned long long n, int fmt,
                                      unsigned short poison, double rtol, double floor,
                                      unsigned long long* counters, unsigned long long* max_err) {
  Tally t;
  for (unsigned long long i = blockIdx.x * 1ull * blockDim.x + threadIdx.x; i < n;
       i += 1ull * gridDim.x * blockDim.x) {
    const unsigned short v = out[i];
    if (v == poison) {
      ++t.unwritten;
      continue;
    }
    const float f = to_float(v, fmt);
    if (!isfinite(f)) {
      ++t.nonfinite;
      continue;
    }
    const double at = scale ? fmax(floor, scale[i]) : floor;
    t.error(fabs(static_cast<double>(f) - ref[i]) / fmax(fabs(ref[i]), at), rtol);
  }
  t.publish(counters, max_err);
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

// ---- any element type, for user kernels --------------------------------------------------------
// TYPE: 0 f32, 1 f64, 2 f16, 3 bf16, 4 i32, 5 i64, 6 u32, 7 i8, 8 u8 (kernels::GateType).

namespace {

__device__ __forceinline__ double load_wide(const unsigned char* base, unsigned long long i,
                                            int type) {
  switch (type) {
    case 0:
      return reinterpret_cast<const float*>(base)[i];
    case 1:
      return reinterpret_cast<const double*>(base)[i];
    case 2:
      return __half2float(__ushort_as_half(reinterpret_cast<const unsigned short*>(base)[i]));
    case 3:
      return __bfloat162float(
          __ushort_as_bfloat16(reinterpret_cast<const unsigned short*>(base)[i]));
    case 4:
      return reinterpret_cast<const int*>(base)[i];
    case 5:
      return static_cast<double>(reinterpret_cast<const long long*>(base)[i]);
    case 6:
      return reinterpret_cast<const unsigned*>(base)[i];
    case 7:
      return reinterpret_cast<const signed char*>(base)[i];
    default:
      return base[i];
  }
}

__device__ __forceinline__ unsigned long long load_bits(const unsigned char* base,
                                                        unsigned long long i, int size) {
  switch (size) {
    case 8:
      return reinterpret_cast<const unsigned long long*>(base)[i];
    case 4:
      return reinterpret_cast<const unsigned*>(base)[i];
    case 2:
      return reinterpret_cast<const unsigned short*>(base)[i];
    default:
      return base[i];
  }
}

__device__ __forceinline__ int type_size(int type) {
  switch (type) {
    case 1:
    case 5:
      return 8;
    case 2:
    case 3:
      return 2;
    case 7:
    case 8:
      return 1;
    default:
      return 4;
  }
}

}  // namespace

// Uniform values in [lo, hi) for floating types, integers in [lo, hi] inclusive, from the seed:
// element i depends only on (seed, i), so a set is remade bit for bit from its seed.
extern "C" __global__ void fill_random_typed(unsigned char* out, unsigned long long n,
                                             unsigned long long seed, int type, double lo,
                                             double hi) {
  for (unsigned long long i = blockIdx.x * 1ull * blockDim.x + threadIdx.x; i < n;
       i += 1ull * gridDim.x * blockDim.x) {
    const unsigned long long r = splitmix(seed ^ (i * 0xd1b54a32d192ed03ULL));
    const double u = (r >> 11) * (1.0 / 9007199254740992.0);  // [0, 1), 53 bits
    const double x = lo + (hi - lo) * u;
    const long long span = static_cast<long long>(hi) - static_cast<long long>(lo) + 1;
    const long long k =
        static_cast<long long>(lo) +
        static_cast<long long>(r % static_cast<unsigned long long>(span > 0 ? span : 1));
    switch (type) {
      case 0:
        reinterpret_cast<float*>(out)[i] = static_cast<float>(x);
        break;
      case 1:
        reinterpret_cast<double*>(out)[i] = x;
        break;
      case 2:
        reinterpret_cast<unsigned short*>(out)[i] =
            __half_as_ushort(__float2half(static_cast<float>(x)));
        break;
      case 3:
        reinterpret_cast<unsigned short*>(out)[i] =
            __bfloat16_as_ushort(__float2bfloat16(static_cast<float>(x)));
        break;
      case 4:
        reinterpret_cast<int*>(out)[i] = static_cast<int>(k);
        break;
      case 5:
        reinterpret_cast<long long*>(out)[i] = k;
        break;
      case 6:
        reinterpret_cast<unsigned*>(out)[i] = static_cast<unsigned>(k);
        break;
      case 7:
        reinterpret_cast<signed char*>(out)[i] = static_cast<signed char>(k);
        break;
      default:
        out[i] = static_cast<unsigned char>(k);
    }
  }
}

// Writes the low `size` bytes of `bits` into each of n elements of that size.
extern "C" __global__ void fill_pattern(unsigned char* out, unsigned long long n, int size,
                                        unsigned long long bits) {
  for (unsigned long long i = blockIdx.x * 1ull * blockDim.x + threadIdx.x; i < n;
       i += 1ull * gridDim.x * blockDim.x) {
    switch (size) {
      case 8:
        reinterpret_cast<unsigned long long*>(out)[i] = bits;
        break;
      case 4:
        reinterpret_cast<unsigned*>(out)[i] = static_cast<unsigned>(bits);
        break;
      case 2:
        reinterpret_cast<unsigned short*>(out)[i] = static_cast<unsigned short>(bits);
        break;
      default:
        out[i] = static_cast<unsigned char>(bits);
    }
  }
}

extern "C" __global__ void sum_squares_typed(const unsigned char* ref, unsigned long long n,
                                             int type, double* out) {
  double s = 0;
  for (unsigned long long i = blockIdx.x * 1ull * blockDim.x + threadIdx.x; i < n;
       i += 1ull * gridDim.x * blockDim.x) {
    const double r = load_wide(ref, i, type);
    s += r * r;
  }
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if (threadIdx.x % 32 == 0) atomicAdd(out, s);
}

// The host's compare_widened on the device, for two arrays of one element type: out still
// holding `poison` (when check_unwritten) is unwritten; counters and max_err: see Tally.
extern "C" __global__ void check_typed(const unsigned char* out, const unsigned char* ref,
                                       unsigned long long n, int type, int check_unwritten,
                                       unsigned long long poison, double rtol, double floor,
                                       unsigned long long* counters, unsigned long long* max_err) {
  const int size = type_size(type);
  Tally t;
  for (unsigned long long i = blockIdx.x * 1ull * blockDim.x + threadIdx.x; i < n;
       i += 1ull * gridDim.x * blockDim.x) {
    if (check_unwritten && load_bits(out, i, size) == poison) {
      ++t.unwritten;
      continue;
    }
    const double o = load_wide(out, i, type);
    if (!isfinite(o)) {
      ++t.nonfinite;
      continue;
    }
    const double r = load_wide(ref, i, type);
    t.error(fabs(o - r) / fmax(fabs(r), floor), rtol);
  }
  t.publish(counters, max_err);
}

// Bytes that no longer hold `value` (guard regions past the end of an output).
extern "C" __global__ void count_bytes_not(const unsigned char* p, unsigned long long n,
                                           unsigned char value, unsigned long long* count) {
  unsigned long long c = 0;
  for (unsigned long long i = blockIdx.x * 1ull * blockDim.x + threadIdx.x; i < n;
       i += 1ull * gridDim.x * blockDim.x)
    c += p[i] != value;
  if (c) atomicAdd(count, c);
}
