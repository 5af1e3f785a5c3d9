#include "cuda/cuda_check.h"

#include <fmt/format.h>

namespace attune::cuda {

Error driver_error(CUresult rc, const char* call, const char* file, int line) {
  const char* name = nullptr;
  const char* text = nullptr;
  cuGetErrorName(rc, &name);
  cuGetErrorString(rc, &text);
  std::string msg = fmt::format("{} failed: {} ({}) at {}:{}", call, name ? name : "CUDA error",
                                text ? text : "no description", file, line);
  if (rc == CUDA_ERROR_OUT_OF_MEMORY) return Error::unsupported(msg);
  return Error::internal(msg);
}

Error cublaslt_error(cublasStatus_t rc, const char* call, const char* file, int line) {
  return Error::internal(fmt::format("{} failed: cuBLASLt status {} at {}:{}", call,
                                     static_cast<int>(rc), file, line));
}

bool is_sticky(CUresult rc) {
  switch (rc) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED:
      return true;
    default:
      return false;
  }
}

}  // namespace attune::cuda
