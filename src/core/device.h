// DeviceFingerprint: what a device is, as the tuning database keys it. The key fields (backend,
// name, arch, SM count, memory) form the reuse key: a stored result or tuned table applies only
// where the key matches. Driver and runtime versions and clocks are recorded but not keyed, so a
// driver update does not throw away a fleet's measurements. Value type.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "core/error.h"

namespace attune {

struct DeviceFingerprint {
  std::string backend;  // sim, cuda, ...
  std::string name;     // "NVIDIA H200"
  std::string arch;     // "sm_90"
  int sm_count = 0;
  std::uint64_t memory_bytes = 0;
  std::uint64_t l2_bytes = 0;
  std::string driver_version;
  std::string runtime_version;
  int max_sm_clock_mhz = 0;
  std::map<std::string, std::string> extra;  // backend-specific facts, recorded only

  // "backend|name|arch|sm_count|memory_bytes": the fields the key hashes.
  std::string key_text() const;
  // 16 hex digits.
  std::string key() const;
  // A file-name-safe slug: "nvidia-h200-sm_90-132sm".
  std::string slug() const;
};

void to_json(nlohmann::json& j, const DeviceFingerprint& d);
Result<DeviceFingerprint> device_from_json(const nlohmann::json& j);

}  // namespace attune
