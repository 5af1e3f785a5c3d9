// vector_add_ref.cpp: a host reference for vector_add.cu, as a shared library, for specs that
// say   reference: {library: {path: libvector_add_ref.so, function: vector_add_ref}}
//   c++ -O2 -shared -fPIC -o libvector_add_ref.so vector_add_ref.cpp
//
// The ABI attune calls (src/kernels/user/spec.h, ReferenceLibrary):
//   extern "C" int NAME(void* const* args, const int64_t* counts, int num_args);
// args[i] is the spec's i-th argument in host memory: a buffer holds counts[i] elements of its
// type (inputs filled, outputs for the function to write); a scalar points at its value, with
// counts[i] == 1. Return 0 on success; anything else fails the check. Called from one thread.
#include <cstdint>

extern "C" int vector_add_ref(void* const* args, const std::int64_t* counts, int num_args) {
  if (num_args != 4) return 1;  // c, a, b, n: the spec's args changed under us
  auto* c = static_cast<float*>(args[0]);
  const auto* a = static_cast<const float*>(args[1]);
  const auto* b = static_cast<const float*>(args[2]);
  const std::int32_t n = *static_cast<const std::int32_t*>(args[3]);
  if (n < 0 || counts[0] < n || counts[1] < n || counts[2] < n) return 2;
  // In double, then rounded once: the reference should be at least as exact as any candidate.
  for (std::int32_t i = 0; i < n; ++i)
    c[i] = static_cast<float>(static_cast<double>(a[i]) + static_cast<double>(b[i]));
  return 0;
}
