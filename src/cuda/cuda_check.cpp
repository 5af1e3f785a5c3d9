#include "cuda/cuda_check.h"

#include <fmt/format.h>

#include "cuda/driver.h"

namespace attune::cuda {

namespace {

// The names of the errors a host without a working driver gives, when the driver cannot name
// them itself (it is missing, or the toolkit's stub answers).
const char* fallback_name(CUresult rc) {
  switch (rc) {
    case CUDA_ERROR_NO_DEVICE:
      return "CUDA_ERROR_NO_DEVICE";
    case CUDA_ERROR_STUB_LIBRARY:
      return "CUDA_ERROR_STUB_LIBRARY";
    case CUDA_ERROR_NOT_INITIALIZED:
      return "CUDA_ERROR_NOT_INITIALIZED";
    case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
      return "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH";
    case CUDA_ERROR_OUT_OF_MEMORY:
      return "CUDA_ERROR_OUT_OF_MEMORY";
    default:
      return nullptr;
  }
}

}  // namespace

Error driver_error(CUresult rc, const char* call, const char* file, int line) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (cuGetErrorName(rc, &name) != CUDA_SUCCESS) name = nullptr;
  if (cuGetErrorString(rc, &text) != CUDA_SUCCESS) text = nullptr;
  if (!name) name = fallback_name(rc);
  std::string what = name ? std::string(name) : fmt::format("CUDA error {}", static_cast<int>(rc));
  if (auto missing = driver_load_error())
    what += "; no NVIDIA driver: " + *missing;
  else if (rc == CUDA_ERROR_STUB_LIBRARY)
    what += "; libcuda.so.1 is the CUDA toolkit's stub, not a driver";
  else if (text)
    what += fmt::format(" ({})", text);
  std::string msg = fmt::format("{} failed: {} [{}:{}]", call, what, in_tree(file), line);
  if (rc == CUDA_ERROR_OUT_OF_MEMORY) return Error::unsupported(msg);
  return Error::internal(msg);
}

Error cublaslt_error(cublasStatus_t rc, const char* call, const char* file, int line) {
  return Error::internal(fmt::format("{} failed: {} ({}) [{}:{}]", call, cublasLtGetStatusName(rc),
                                     static_cast<int>(rc), in_tree(file), line));
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
