// The CUDA device as attune sees it: its fingerprint (driver API + NVML, no context created) and
// a context owner for the worker process. CudaDevice is used from one thread at a time.
#pragma once

#include <cuda.h>

#include <memory>
#include <string>

#include "core/device.h"
#include "core/error.h"

namespace attune::cuda {

// Device ordinal from ATTUNE_DEVICE (default 0): libattune-rt's device, and the CUDA backend's
// until `--device N` names another. A value that is not an index (0, 1, ...) is an error.
Result<int> device_ordinal();

// How many CUDA devices this process sees (cuDeviceGetCount after cuInit).
Result<int> device_count();

// Key fields: backend "cuda", the device name (a MIG slice's name includes its profile), arch
// ("sm_90a" on Hopper, where attune builds arch-specific code), SM count and memory; recorded
// only: L2 size, driver and runtime versions, maximum SM clock, PCI bus id, UUID.
Result<DeviceFingerprint> fingerprint(int ordinal);

// The NVRTC architecture for compute capability major.minor: sm_90a on 9.0, else sm_XY.
std::string nvrtc_arch(int major, int minor);

struct DeviceLimits {
  int max_threads_per_block = 1024;
  int max_shared_per_block_optin = 48 * 1024;
  int max_registers_per_block = 65536;
  int sm_count = 0;
  int l2_bytes = 0;
  int major = 0;
  int minor = 0;
  std::string pci_bus_id;
};

// The primary context of one device, retained for the life of the worker.
class CudaDevice {
 public:
  static Result<std::unique_ptr<CudaDevice>> open(int ordinal);
  ~CudaDevice();
  CudaDevice(const CudaDevice&) = delete;
  CudaDevice& operator=(const CudaDevice&) = delete;

  CUdevice device() const { return dev_; }
  CUstream stream() const { return stream_; }
  const DeviceLimits& limits() const { return limits_; }

 private:
  CudaDevice() = default;
  CUdevice dev_ = 0;
  CUcontext ctx_ = nullptr;
  CUstream stream_ = nullptr;
  DeviceLimits limits_;
};

Result<DeviceLimits> read_limits(CUdevice dev);

}  // namespace attune::cuda
