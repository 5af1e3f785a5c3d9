// attune device: the fingerprint of this box as the tuning database keys it, or with --list one
// line per device the backend can run on (the index `--device N` takes).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/common.h"

namespace attune::cli {

namespace {

// "0  NVIDIA H200  sm_90a  132 SMs  139.8 GiB  key 0123456789abcdef  0000:19:00.0"
std::string device_line(int index, const DeviceFingerprint& d) {
  std::string line = fmt::format("{}  {}  {}  {} SMs  {:.1f} GiB  key {}", index, d.name, d.arch,
                                 d.sm_count, d.memory_bytes / double(1ull << 30), d.key());
  if (auto bus = d.extra.find("pci_bus_id"); bus != d.extra.end()) line += "  " + bus->second;
  return line;
}

int list_devices(const GlobalOptions& g, Backend& b) {
  auto all = b.devices();
  if (!all) return exit_for(all.error());
  nlohmann::json out = nlohmann::json::array();
  for (std::size_t i = 0; i < all->size(); ++i) {
    if (g.json) {
      nlohmann::json j = (*all)[i];
      j["index"] = i;
      out.push_back(std::move(j));
    } else {
      fmt::print("{}\n", device_line(static_cast<int>(i), (*all)[i]));
    }
  }
  if (g.json) fmt::print("{}\n", out.dump(2));
  return kExitOk;
}

}  // namespace

Command add_device_command(CLI::App& app, GlobalOptions& g) {
  auto* sub = app.add_subcommand(
      "device", "print this device's fingerprint (key fields marked *), or --list them all");
  auto backend = std::make_shared<std::string>();
  sub->add_option("--backend", *backend, "backend to ask (default: the GPU backend, else sim)");
  auto list = std::make_shared<bool>(false);
  sub->add_flag("--list", *list,
                "one line per device: index, name, arch, SMs, memory, key (--json: an array)");
  auto device = std::make_shared<int>(-1);
  add_device_option(sub, device.get(), "to print (default: the backend's)");
  return {sub, [&g, backend, list, device] {
            auto b = open_backend_or_report(*backend, *device);
            if (!b) return kExitBadInput;
            if (*list) return list_devices(g, *b);
            auto fp = b->fingerprint();
            if (!fp) return failed(fp.error().message());
            if (g.json) {
              fmt::print("{}\n", nlohmann::json(*fp).dump(2));
              return kExitOk;
            }
            fmt::print("backend*          {}\n", fp->backend);
            fmt::print("name*             {}\n", fp->name);
            fmt::print("arch*             {}\n", fp->arch);
            fmt::print("sm_count*         {}\n", fp->sm_count);
            fmt::print("memory_bytes*     {} ({:.1f} GiB)\n", fp->memory_bytes,
                       fp->memory_bytes / double(1ull << 30));
            fmt::print("l2_bytes          {}\n", fp->l2_bytes);
            fmt::print("driver_version    {}\n", fp->driver_version);
            fmt::print("runtime_version   {}\n", fp->runtime_version);
            fmt::print("max_sm_clock_mhz  {}\n", fp->max_sm_clock_mhz);
            for (const auto& [k, v] : fp->extra) fmt::print("{:<17} {}\n", k, v);
            fmt::print(
                "key               {}  (hash of the * fields: results and tables apply only where "
                "it matches)\n",
                fp->key());
            return kExitOk;
          }};
}

}  // namespace attune::cli
