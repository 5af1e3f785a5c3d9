// Clock and throttle readings through NVML, loaded at run time (dlopen of the driver's
// libnvidia-ml.so.1) so attune builds and runs where NVML is absent: readings are then 0 / "".
// Thread-safe after the first call.
#pragma once

#include <string>

namespace attune::cuda {

struct ClockReading {
  int sm_clock_mhz = 0;  // current SM clock; 0 when not known
  std::string
      throttle;  // active clock-event reasons ("none", "sw_power_cap,hw_slowdown"); "" not known
};

// NVML's device whose PCI bus id is pci_bus_id ("0000:17:00.0").
ClockReading read_clocks(const std::string& pci_bus_id);
int max_sm_clock_mhz(const std::string& pci_bus_id);
// The kernel driver's version ("580.159.04"); "" when NVML does not answer.
std::string driver_version();
// "" when NVML answered; otherwise why not.
std::string nvml_status();

}  // namespace attune::cuda
