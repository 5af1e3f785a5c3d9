// One checking path for every CUDA driver, NVRTC and cuBLASLt call: a failure becomes an Error
// that names the call, the file and line, and the library's own message (as ggml's CUDA_CHECK_GEN
// does). Thread-safe.
#pragma once

#include <cublasLt.h>
#include <cuda.h>
#include <nvrtc.h>

#include <string>

#include "core/error.h"

namespace attune::cuda {

Error driver_error(CUresult rc, const char* call, const char* file, int line);
Error nvrtc_error(nvrtcResult rc, const char* call, const char* file, int line);
Error cublaslt_error(cublasStatus_t rc, const char* call, const char* file, int line);

// Whether this driver error leaves the context unusable (illegal address, launch failure,
// ECC, ...): the process must end so that a fresh worker takes over.
bool is_sticky(CUresult rc);

}  // namespace attune::cuda

// Inside a function returning Result<T> or Status.
#define ATTUNE_CU(call)                                                           \
  do {                                                                            \
    CUresult attune_rc_ = (call);                                                 \
    if (attune_rc_ != CUDA_SUCCESS)                                               \
      return ::attune::cuda::driver_error(attune_rc_, #call, __FILE__, __LINE__); \
  } while (0)
#define ATTUNE_NVRTC(call)                                                       \
  do {                                                                           \
    nvrtcResult attune_rc_ = (call);                                             \
    if (attune_rc_ != NVRTC_SUCCESS)                                             \
      return ::attune::cuda::nvrtc_error(attune_rc_, #call, __FILE__, __LINE__); \
  } while (0)
#define ATTUNE_CUBLASLT(call)                                                       \
  do {                                                                              \
    cublasStatus_t attune_rc_ = (call);                                             \
    if (attune_rc_ != CUBLAS_STATUS_SUCCESS)                                        \
      return ::attune::cuda::cublaslt_error(attune_rc_, #call, __FILE__, __LINE__); \
  } while (0)
