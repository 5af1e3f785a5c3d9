#include "cuda/cuda_device.h"

#include <charconv>
#include <cstdlib>

#include <fmt/format.h>

#include "cuda/cuda_check.h"
#include "cuda/nvml.h"

namespace attune::cuda {

Result<int> device_ordinal() {
  const char* e = std::getenv("ATTUNE_DEVICE");
  if (!e) return 0;
  const std::string_view text(e);
  int v = -1;
  auto r = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || r.ec != std::errc() || r.ptr != text.data() + text.size() || v < 0)
    return Error::invalid_argument("ATTUNE_DEVICE='" + std::string(text) +
                                   "' is not a device index (0, 1, ...)");
  return v;
}

std::string nvrtc_arch(int major, int minor) {
  // Hopper's wgmma and setmaxnreg exist only in the arch-specific target.
  if (major == 9 && minor == 0) return "sm_90a";
  return fmt::format("sm_{}{}", major, minor);
}

Result<DeviceLimits> read_limits(CUdevice dev) {
  DeviceLimits l;
  auto attr = [&](CUdevice_attribute a, int* out) -> Status {
    ATTUNE_CU(cuDeviceGetAttribute(out, a, dev));
    return Status::success();
  };
  ATTUNE_TRY(attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, &l.max_threads_per_block));
  ATTUNE_TRY(
      attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, &l.max_shared_per_block_optin));
  ATTUNE_TRY(attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, &l.max_registers_per_block));
  ATTUNE_TRY(attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &l.sm_count));
  ATTUNE_TRY(attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, &l.l2_bytes));
  ATTUNE_TRY(attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &l.major));
  ATTUNE_TRY(attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &l.minor));
  char pci[32] = {};
  ATTUNE_CU(cuDeviceGetPCIBusId(pci, sizeof pci, dev));
  l.pci_bus_id = pci;
  return l;
}

Result<int> device_count() {
  ATTUNE_CU(cuInit(0));
  int count = 0;
  ATTUNE_CU(cuDeviceGetCount(&count));
  return count;
}

Result<DeviceFingerprint> fingerprint(int ordinal) {
  ATTUNE_ASSIGN(int count, device_count());
  if (ordinal < 0 || ordinal >= count)
    return Error::unsupported(
        fmt::format("no CUDA device {} (this machine has {})", ordinal, count));
  CUdevice dev;
  ATTUNE_CU(cuDeviceGet(&dev, ordinal));
  char name[256] = {};
  ATTUNE_CU(cuDeviceGetName(name, sizeof name, dev));
  size_t mem = 0;
  ATTUNE_CU(cuDeviceTotalMem(&mem, dev));
  ATTUNE_ASSIGN(DeviceLimits l, read_limits(dev));
  int driver = 0;
  ATTUNE_CU(cuDriverGetVersion(&driver));
  CUuuid uuid;
  ATTUNE_CU(cuDeviceGetUuid(&uuid, dev));
  std::string uuid_hex;
  for (char c : uuid.bytes) uuid_hex += fmt::format("{:02x}", static_cast<unsigned char>(c));

  DeviceFingerprint d;
  d.backend = "cuda";
  d.name = name;
  d.arch = nvrtc_arch(l.major, l.minor);
  d.sm_count = l.sm_count;
  d.memory_bytes = mem;
  d.l2_bytes = static_cast<std::uint64_t>(l.l2_bytes);
  // The kernel driver's own version where NVML answers; else the CUDA version it supports.
  d.driver_version = driver_version();
  if (d.driver_version.empty())
    d.driver_version = fmt::format("cuda {}.{}", driver / 1000, (driver % 1000) / 10);
  d.extra["driver_cuda_version"] = fmt::format("{}.{}", driver / 1000, (driver % 1000) / 10);
  d.runtime_version = fmt::format("{}.{}", CUDA_VERSION / 1000, (CUDA_VERSION % 1000) / 10);
  d.max_sm_clock_mhz = max_sm_clock_mhz(l.pci_bus_id);
  d.extra["pci_bus_id"] = l.pci_bus_id;
  d.extra["uuid"] = uuid_hex;
  d.extra["compute_capability"] = fmt::format("{}.{}", l.major, l.minor);
  d.extra["max_shared_per_block"] = std::to_string(l.max_shared_per_block_optin);
  if (std::string why = nvml_status(); !why.empty()) d.extra["nvml"] = why;
  return d;
}

Result<std::unique_ptr<CudaDevice>> CudaDevice::open(int ordinal) {
  ATTUNE_CU(cuInit(0));
  std::unique_ptr<CudaDevice> d(new CudaDevice());
  ATTUNE_CU(cuDeviceGet(&d->dev_, ordinal));
  ATTUNE_CU(cuDevicePrimaryCtxRetain(&d->ctx_, d->dev_));
  ATTUNE_CU(cuCtxSetCurrent(d->ctx_));
  ATTUNE_CU(cuStreamCreate(&d->stream_, CU_STREAM_NON_BLOCKING));
  ATTUNE_ASSIGN(d->limits_, read_limits(d->dev_));
  return d;
}

CudaDevice::~CudaDevice() {
  if (stream_) cuStreamDestroy(stream_);
  if (ctx_) cuDevicePrimaryCtxRelease(dev_);
}

}  // namespace attune::cuda
