// The CUDA driver, loaded at run time (dlopen of libcuda.so.1) instead of linked, as the CLI loads
// its plugin: a program using libattune-rt starts on a host without a driver and says so, instead
// of dying in the loader. driver.cpp defines every cu* function attune calls, forwarding to the
// driver's; without a driver each returns CUDA_ERROR_NO_DEVICE. Thread-safe.
#pragma once

#include <optional>
#include <string>

namespace attune::cuda {

// Why the driver could not be loaded ("libcuda.so.1: cannot open shared object file: ..."), or
// nullopt when it is loaded. Loads it on first use.
std::optional<std::string> driver_load_error();

}  // namespace attune::cuda
