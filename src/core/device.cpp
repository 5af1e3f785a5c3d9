#include "core/device.h"

#include <cctype>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/hash.h"

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
    // Whole numbers only: a cast of 1e300 to int is undefined.
    for (const char* count : {"sm_count", "memory_bytes"})
      if (!j.at(count).is_number_integer() || j.at(count).get<std::int64_t>() < 0 ||
          (j.at(count).is_number_unsigned() && j.at(count).get<std::uint64_t>() > (1ull << 62)))
        return Error::invalid_argument(std::string("device ") + count +
                                       " must be a whole number of 0 or more");
    if (j.at("sm_count").get<std::uint64_t>() > 1u << 20)
      return Error::invalid_argument("device sm_count is not a count of SMs");
    d.sm_count = j.at("sm_count").get<int>();
    d.memory_bytes = j.at("memory_bytes").get<std::uint64_t>();
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
