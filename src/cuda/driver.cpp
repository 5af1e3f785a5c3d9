#include "cuda/driver.h"

#include <cuda.h>
#include <dlfcn.h>

namespace attune::cuda {
namespace {

struct Driver {
  void* handle = nullptr;
  std::string error;
};

const Driver& driver() {
  static const Driver d = [] {
    Driver x;
    // Only the driver's soname: libcuda.so (unversioned) is the toolkit's link-time stub, which
    // answers every call with CUDA_ERROR_STUB_LIBRARY.
    x.handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!x.handle) {
      const char* e = dlerror();
      x.error = e ? e : "libcuda.so.1 could not be loaded";
    }
    return x;
  }();
  return d;
}

void* resolve(const char* name) {
  const Driver& d = driver();
  return d.handle ? dlsym(d.handle, name) : nullptr;
}

}  // namespace

std::optional<std::string> driver_load_error() {
  const Driver& d = driver();
  if (d.handle) return std::nullopt;
  return d.error;
}

}  // namespace attune::cuda

// The names go through cuda.h's macros first (cuMemAlloc -> cuMemAlloc_v2), so each forwarder
// defines, and looks up, the versioned symbol the header makes callers use; a signature that does
// not match the header's declaration does not compile.
#define ATTUNE_STR2(x) #x
#define ATTUNE_STR(x) ATTUNE_STR2(x)
#define ATTUNE_FORWARD(name, params, args)                                          \
  CUresult CUDAAPI name params {                                                    \
    static const auto fn =                                                          \
        reinterpret_cast<decltype(&name)>(attune::cuda::resolve(ATTUNE_STR(name))); \
    if (!fn) return CUDA_ERROR_NO_DEVICE;                                           \
    return fn args;                                                                 \
  }

extern "C" {

ATTUNE_FORWARD(cuInit, (unsigned int flags), (flags))
ATTUNE_FORWARD(cuDriverGetVersion, (int* v), (v))
ATTUNE_FORWARD(cuDeviceGet, (CUdevice * d, int ordinal), (d, ordinal))
ATTUNE_FORWARD(cuDeviceGetCount, (int* n), (n))
ATTUNE_FORWARD(cuDeviceGetName, (char* name, int len, CUdevice d), (name, len, d))
ATTUNE_FORWARD(cuDeviceGetAttribute, (int* v, CUdevice_attribute a, CUdevice d), (v, a, d))
ATTUNE_FORWARD(cuDeviceGetPCIBusId, (char* id, int len, CUdevice d), (id, len, d))
ATTUNE_FORWARD(cuDeviceGetUuid, (CUuuid * u, CUdevice d), (u, d))
ATTUNE_FORWARD(cuDeviceTotalMem, (size_t * bytes, CUdevice d), (bytes, d))
ATTUNE_FORWARD(cuDevicePrimaryCtxRetain, (CUcontext * c, CUdevice d), (c, d))
ATTUNE_FORWARD(cuDevicePrimaryCtxRelease, (CUdevice d), (d))
ATTUNE_FORWARD(cuCtxGetCurrent, (CUcontext * c), (c))
ATTUNE_FORWARD(cuCtxSetCurrent, (CUcontext c), (c))
ATTUNE_FORWARD(cuCtxPushCurrent, (CUcontext c), (c))
ATTUNE_FORWARD(cuCtxPopCurrent, (CUcontext * c), (c))
ATTUNE_FORWARD(cuCtxSynchronize, (), ())
ATTUNE_FORWARD(cuStreamCreate, (CUstream * s, unsigned int flags), (s, flags))
ATTUNE_FORWARD(cuStreamDestroy, (CUstream s), (s))
ATTUNE_FORWARD(cuStreamSynchronize, (CUstream s), (s))
ATTUNE_FORWARD(cuStreamBeginCapture, (CUstream s, CUstreamCaptureMode mode), (s, mode))
ATTUNE_FORWARD(cuStreamEndCapture, (CUstream s, CUgraph* g), (s, g))
ATTUNE_FORWARD(cuGraphInstantiateWithFlags,
               (CUgraphExec * exec, CUgraph g, unsigned long long flags), (exec, g, flags))
ATTUNE_FORWARD(cuGraphLaunch, (CUgraphExec exec, CUstream s), (exec, s))
ATTUNE_FORWARD(cuGraphExecDestroy, (CUgraphExec exec), (exec))
ATTUNE_FORWARD(cuGraphDestroy, (CUgraph g), (g))
ATTUNE_FORWARD(cuEventCreate, (CUevent * e, unsigned int flags), (e, flags))
ATTUNE_FORWARD(cuEventDestroy, (CUevent e), (e))
ATTUNE_FORWARD(cuEventRecord, (CUevent e, CUstream s), (e, s))
ATTUNE_FORWARD(cuEventSynchronize, (CUevent e), (e))
ATTUNE_FORWARD(cuEventElapsedTime, (float* ms, CUevent start, CUevent end), (ms, start, end))
ATTUNE_FORWARD(cuMemAlloc, (CUdeviceptr * p, size_t bytes), (p, bytes))
ATTUNE_FORWARD(cuMemFree, (CUdeviceptr p), (p))
ATTUNE_FORWARD(cuMemcpyHtoD, (CUdeviceptr dst, const void* src, size_t n), (dst, src, n))
ATTUNE_FORWARD(cuMemcpyDtoH, (void* dst, CUdeviceptr src, size_t n), (dst, src, n))
ATTUNE_FORWARD(cuMemcpyDtoD, (CUdeviceptr dst, CUdeviceptr src, size_t n), (dst, src, n))
ATTUNE_FORWARD(cuMemcpyHtoDAsync, (CUdeviceptr dst, const void* src, size_t n, CUstream s),
               (dst, src, n, s))
ATTUNE_FORWARD(cuMemcpyDtoHAsync, (void* dst, CUdeviceptr src, size_t n, CUstream s),
               (dst, src, n, s))
ATTUNE_FORWARD(cuMemcpyDtoDAsync, (CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s),
               (dst, src, n, s))
ATTUNE_FORWARD(cuMemsetD8, (CUdeviceptr p, unsigned char v, size_t n), (p, v, n))
ATTUNE_FORWARD(cuMemsetD16, (CUdeviceptr p, unsigned short v, size_t n), (p, v, n))
ATTUNE_FORWARD(cuMemsetD32, (CUdeviceptr p, unsigned int v, size_t n), (p, v, n))
ATTUNE_FORWARD(cuMemsetD8Async, (CUdeviceptr p, unsigned char v, size_t n, CUstream s),
               (p, v, n, s))
ATTUNE_FORWARD(cuMemsetD16Async, (CUdeviceptr p, unsigned short v, size_t n, CUstream s),
               (p, v, n, s))
ATTUNE_FORWARD(cuMemsetD32Async, (CUdeviceptr p, unsigned int v, size_t n, CUstream s),
               (p, v, n, s))
ATTUNE_FORWARD(cuModuleLoadData, (CUmodule * m, const void* image), (m, image))
ATTUNE_FORWARD(cuModuleUnload, (CUmodule m), (m))
ATTUNE_FORWARD(cuModuleGetFunction, (CUfunction * f, CUmodule m, const char* name), (f, m, name))
ATTUNE_FORWARD(cuModuleGetGlobal, (CUdeviceptr * p, size_t* bytes, CUmodule m, const char* name),
               (p, bytes, m, name))
ATTUNE_FORWARD(cuFuncGetModule, (CUmodule * m, CUfunction f), (m, f))
ATTUNE_FORWARD(cuFuncGetAttribute, (int* v, CUfunction_attribute a, CUfunction f), (v, a, f))
ATTUNE_FORWARD(cuFuncSetAttribute, (CUfunction f, CUfunction_attribute a, int v), (f, a, v))
ATTUNE_FORWARD(cuOccupancyMaxActiveClusters, (int* n, CUfunction f, const CUlaunchConfig* config),
               (n, f, config))
ATTUNE_FORWARD(cuLaunchKernel,
               (CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                unsigned int by, unsigned int bz, unsigned int smem, CUstream s, void** params,
                void** extra),
               (f, gx, gy, gz, bx, by, bz, smem, s, params, extra))
ATTUNE_FORWARD(cuLaunchKernelEx,
               (const CUlaunchConfig* config, CUfunction f, void** params, void** extra),
               (config, f, params, extra))
ATTUNE_FORWARD(cuTensorMapEncodeTiled,
               (CUtensorMap * map, CUtensorMapDataType type, cuuint32_t rank, void* address,
                const cuuint64_t* dims, const cuuint64_t* strides, const cuuint32_t* box,
                const cuuint32_t* element_strides, CUtensorMapInterleave interleave,
                CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2,
                CUtensorMapFloatOOBfill fill),
               (map, type, rank, address, dims, strides, box, element_strides, interleave, swizzle,
                l2, fill))
ATTUNE_FORWARD(cuGetErrorName, (CUresult rc, const char** s), (rc, s))
ATTUNE_FORWARD(cuGetErrorString, (CUresult rc, const char** s), (rc, s))

}  // extern "C"
