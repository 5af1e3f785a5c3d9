#include "core/device.h"

#include <cctype>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/hash.h"
#include "core/json_number.h"

namespace attune {

std::string DeviceFingerprint::key_text() const {
  return fmt::format("{}|{}|{}|{}|{}", backend, name, arch, sm_count, memory_bytes);
}

std::string DeviceFingerprint::key() const {
  return hex64(fnv1a64(key_text()));
}

std::string DeviceFingerprint::slug() const {
  std::string s;
  for (char c : fmt::format("{}-{}-{}sm", name, arch, sm_count)) {
    unsigned char u = static_cast<unsigned char>(c);
    if (std::isalnum(u) || c == '_')
      s += static_cast<char>(std::tolower(u));
    else if (!s.empty() && s.back() != '-')
      s += '-';
  }
  return s;
}

void to_json(nlohmann::json& j, const DeviceFingerprint& d) {
  j = nlohmann::json{{"backend", d.backend},
                     {"name", d.name},
                     {"arch", d.arch},
                     {"sm_count", d.sm_count},
                     {"memory_bytes", d.memory_bytes},
                     {"l2_bytes", d.l2_bytes},
                     {"driver_version", d.driver_version},
                     {"runtime_version", d.runtime_version},
                     {"max_sm_clock_mhz", d.max_sm_clock_mhz},
                     {"extra", d.extra},
                     {"key", d.key()}};
}

Result<DeviceFingerprint> device_from_json(const nlohmann::json& j) {
  try {
    DeviceFingerprint d;
    d.backend = j.at("backend").get<std::string>();
    d.name = j.at("name").get<std::string>();
    d.arch = j.at("arch").get<std::string>();
    ATTUNE_ASSIGN(const std::int64_t sms,
                  json_whole_number(j.at("sm_count"), "device sm_count", 0, std::int64_t{1} << 20));
    ATTUNE_ASSIGN(
        const std::int64_t memory,
        json_whole_number(j.at("memory_bytes"), "device memory_bytes", 0, std::int64_t{1} << 62));
    d.sm_count = static_cast<int>(sms);
    d.memory_bytes = static_cast<std::uint64_t>(memory);
    d.l2_bytes = j.value("l2_bytes", std::uint64_t{0});
    d.driver_version = j.value("driver_version", "");
    d.runtime_version = j.value("runtime_version", "");
    d.max_sm_clock_mhz = j.value("max_sm_clock_mhz", 0);
    if (j.contains("extra")) d.extra = j.at("extra").get<std::map<std::string, std::string>>();
    return d;
  } catch (const nlohmann::json::exception& e) {
    return Error::corrupt(std::string("device fingerprint: ") + e.what());
  }
}

}  // namespace attune
