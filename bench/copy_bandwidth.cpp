// The device's measured device-to-device copy bandwidth: the ceiling memory-bound kernels are
// judged against. Bytes counted = bytes read + bytes written. Prints one JSON line.
#include <cuda.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(x)                                                \
  do {                                                          \
    CUresult rc_ = (x);                                         \
    if (rc_ != CUDA_SUCCESS) {                                  \
      const char* s = nullptr;                                  \
      cuGetErrorString(rc_, &s);                                \
      std::fprintf(stderr, "%s failed: %s\n", #x, s ? s : "?"); \
      return 1;                                                 \
    }                                                           \
  } while (0)

int main(int argc, char** argv) {
  const size_t mib = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1024;
  const size_t bytes = mib << 20;
  CHECK(cuInit(0));
  CUdevice dev;
  CHECK(cuDeviceGet(&dev, 0));
  CUcontext ctx;
  CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK(cuCtxSetCurrent(ctx));
  CUdeviceptr a, b;
  CHECK(cuMemAlloc(&a, bytes));
  CHECK(cuMemAlloc(&b, bytes));
  CHECK(cuMemsetD8(a, 1, bytes));
  CUevent e0, e1;
  CHECK(cuEventCreate(&e0, 0));
  CHECK(cuEventCreate(&e1, 0));
  for (int i = 0; i < 3; ++i) CHECK(cuMemcpyDtoD(b, a, bytes));
  std::vector<double> gbps;
  for (int i = 0; i < 20; ++i) {
    CHECK(cuEventRecord(e0, nullptr));
    CHECK(cuMemcpyDtoDAsync(b, a, bytes, nullptr));
    CHECK(cuEventRecord(e1, nullptr));
    CHECK(cuEventSynchronize(e1));
    float ms = 0;
    CHECK(cuEventElapsedTime(&ms, e0, e1));
    gbps.push_back(2.0 * bytes / (ms * 1e-3) / 1e9);
  }
  std::sort(gbps.begin(), gbps.end());
  std::printf("{\"bytes\": %zu, \"median_gbps\": %.1f, \"max_gbps\": %.1f}\n", bytes,
              gbps[gbps.size() / 2], gbps.back());
  return 0;
}
