// attune device: the fingerprint of this box as the tuning database keys it.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/common.h"

namespace attune::cli {

Command add_device_command(CLI::App& app, GlobalOptions& g) {
  auto* sub = app.add_subcommand("device", "print this device's fingerprint (key fields marked *)");
  auto backend = std::make_shared<std::string>();
  sub->add_option("--backend", *backend, "backend to ask (default: the GPU backend, else sim)");
  return {sub, [&g, backend] {
            auto b = open_backend_or_report(*backend);
            if (!b) return kExitBadInput;
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
            fmt::print("memory_bytes*     {} ({:.1f} GiB)\n", fp->memory_bytes, fp->memory_bytes / double(1ull << 30));
            fmt::print("l2_bytes          {}\n", fp->l2_bytes);
            fmt::print("driver_version    {}\n", fp->driver_version);
            fmt::print("runtime_version   {}\n", fp->runtime_version);
            fmt::print("max_sm_clock_mhz  {}\n", fp->max_sm_clock_mhz);
            for (const auto& [k, v] : fp->extra) fmt::print("{:<17} {}\n", k, v);
            fmt::print("key               {}  (hash of the * fields: results and tables apply only where it matches)\n", fp->key());
            return kExitOk;
          }};
}

}  // namespace attune::cli
