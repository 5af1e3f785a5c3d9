#include "cuda/nvml.h"

#include <dlfcn.h>

#include <cstdint>
#include <mutex>

namespace attune::cuda {

namespace {

// The few NVML entry points attune reads, declared here because NVML's header is not part of
// the toolkit this builds with. NVML's C ABI is stable; the values below are NVML's own.
using nvmlDevice_t = void*;
using nvmlReturn_t = int;
constexpr int kNvmlClockSm = 1;

struct Api {
  bool loaded = false;
  std::string why = "NVML not loaded";
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*by_pci)(const char*, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*clock)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*max_clock)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*reasons)(nvmlDevice_t, unsigned long long*) = nullptr;
  nvmlReturn_t (*driver)(char*, unsigned) = nullptr;
};

const Api& api() {
  static Api a;
  static std::once_flag once;
  std::call_once(once, [] {
    void* h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      a.why = "libnvidia-ml.so.1 not found";
      return;
    }
    a.init = reinterpret_cast<nvmlReturn_t (*)()>(dlsym(h, "nvmlInit_v2"));
    a.by_pci = reinterpret_cast<nvmlReturn_t (*)(const char*, nvmlDevice_t*)>(
        dlsym(h, "nvmlDeviceGetHandleByPciBusId_v2"));
    a.clock = reinterpret_cast<nvmlReturn_t (*)(nvmlDevice_t, int, unsigned*)>(
        dlsym(h, "nvmlDeviceGetClockInfo"));
    a.max_clock = reinterpret_cast<nvmlReturn_t (*)(nvmlDevice_t, int, unsigned*)>(
        dlsym(h, "nvmlDeviceGetMaxClockInfo"));
    // Renamed from ...ClocksThrottleReasons in newer drivers; either answers the same bits.
    void* r = dlsym(h, "nvmlDeviceGetCurrentClocksEventReasons");
    if (!r) r = dlsym(h, "nvmlDeviceGetCurrentClocksThrottleReasons");
    a.reasons = reinterpret_cast<nvmlReturn_t (*)(nvmlDevice_t, unsigned long long*)>(r);
    a.driver =
        reinterpret_cast<nvmlReturn_t (*)(char*, unsigned)>(dlsym(h, "nvmlSystemGetDriverVersion"));
    if (!a.init || !a.by_pci || !a.clock || !a.max_clock) {
      a.why = "libnvidia-ml.so.1 lacks the expected entry points";
      return;
    }
    if (a.init() != 0) {
      a.why = "nvmlInit failed";
      return;
    }
    a.loaded = true;
    a.why.clear();
  });
  return a;
}

nvmlDevice_t device(const std::string& pci) {
  nvmlDevice_t d = nullptr;
  if (!api().loaded || api().by_pci(pci.c_str(), &d) != 0) return nullptr;
  return d;
}

std::string reason_names(unsigned long long bits) {
  // nvmlClocksEventReason* bit values.
  static const std::pair<unsigned long long, const char*> kNames[] = {
      {0x1, "gpu_idle"},    {0x2, "applications_clocks"}, {0x4, "sw_power_cap"},
      {0x8, "hw_slowdown"}, {0x10, "sync_boost"},         {0x20, "sw_thermal"},
      {0x40, "hw_thermal"}, {0x80, "hw_power_brake"},     {0x100, "display_clocks"}};
  std::string out;
  for (const auto& [bit, name] : kNames)
    if (bits & bit) out += (out.empty() ? "" : ",") + std::string(name);
  return out.empty() ? "none" : out;
}

}  // namespace

ClockReading read_clocks(const std::string& pci_bus_id) {
  ClockReading r;
  nvmlDevice_t d = device(pci_bus_id);
  if (!d) return r;
  unsigned mhz = 0;
  if (api().clock(d, kNvmlClockSm, &mhz) == 0) r.sm_clock_mhz = static_cast<int>(mhz);
  unsigned long long bits = 0;
  if (api().reasons && api().reasons(d, &bits) == 0) r.throttle = reason_names(bits);
  return r;
}

int max_sm_clock_mhz(const std::string& pci_bus_id) {
  nvmlDevice_t d = device(pci_bus_id);
  unsigned mhz = 0;
  if (!d || api().max_clock(d, kNvmlClockSm, &mhz) != 0) return 0;
  return static_cast<int>(mhz);
}

std::string nvml_status() {
  return api().why;
}

std::string driver_version() {
  char buf[96] = {};
  if (!api().loaded || !api().driver || api().driver(buf, sizeof buf) != 0) return "";
  return buf;
}

}  // namespace attune::cuda
