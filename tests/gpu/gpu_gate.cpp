// Runs a GPU test binary that links the CUDA driver, or exits with 77 (ctest's SKIP_RETURN_CODE)
// where it could not even start: no libcuda.so.1, or a driver with no GPU. Such binaries cannot be
// registered directly, because without the driver library the loader refuses them before main.
//   gpu_gate TEST_BINARY [ARGS...]
#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>

namespace {

constexpr int kSkip = 77;

int skip(const char* why) {
  std::printf("SKIPPED: %s\n", why);
  return kSkip;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: gpu_gate TEST_BINARY [ARGS...]\n");
    return 2;
  }
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!driver) return skip("no CUDA driver (libcuda.so.1 does not load)");
  using Init = int (*)(unsigned);
  using Count = int (*)(int*);
  auto init = reinterpret_cast<Init>(dlsym(driver, "cuInit"));
  auto count = reinterpret_cast<Count>(dlsym(driver, "cuDeviceGetCount"));
  int n = 0;
  if (!init || !count || init(0) != 0 || count(&n) != 0 || n == 0)
    return skip("the CUDA driver sees no GPU");
  dlclose(driver);
  std::fflush(stdout);
  execv(argv[1], argv + 1);
  std::perror(argv[1]);
  return 1;
}
