// The machine a stack is tuned on: CPU model and count (/proc/cpuinfo), GPUs (nvidia-smi), and the
// version line of each program the stack runs; what cannot be learnt is recorded as absent, never
// guessed. Value types; probing keeps no state, so it is safe from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/device.h"

namespace attune::platform {

struct GpuInfo {
  std::string name;  // "NVIDIA H200"
  std::uint64_t memory_mib = 0;
  friend bool operator==(const GpuInfo&, const GpuInfo&) = default;
};

struct HostFingerprint {
  std::optional<std::string> cpu_model;      // "model name" of the first processor
  std::optional<int> logical_cpus;           // processor entries in /proc/cpuinfo
  std::optional<std::vector<GpuInfo>> gpus;  // absent: no nvidia-smi answered; []: it found none
  std::map<std::string, std::optional<std::string>> tools;  // program as written -> version line

  // A file-name-safe name: the first GPU's name, else the CPU model, then "-<N>cpu".
  std::string slug() const;
  // How the tuning database keys this machine: backend "host", name = CPU model (and GPUs),
  // arch = uname machine, sm_count = logical CPUs, memory = total GPU memory; the rest in extra.
  DeviceFingerprint device() const;
};

struct ProbeOptions {
  std::string cpuinfo = "/proc/cpuinfo";
  std::string nvidia_smi = "nvidia-smi";  // a name on PATH or a path
};

// Fingerprints this machine; `programs` (as written, resolved from `dir`) answer `--version`.
HostFingerprint probe_host(const std::vector<std::string>& programs, const std::string& dir,
                           const ProbeOptions& options = {});

// What differs between a recorded fingerprint and this machine's, one line per item
// ("cpu_model: 'X' recorded, 'Y' here"); empty when every recorded item is equal.
std::vector<std::string> fingerprint_differences(const HostFingerprint& recorded,
                                                 const HostFingerprint& here);

}  // namespace attune::platform
