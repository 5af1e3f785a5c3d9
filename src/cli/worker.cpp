// attune worker: runs candidates for a tuner, one JSON request per line on stdin and one
// outcome per line on stdout. Started by `attune tune`; a crash here costs only this process.
#include <unistd.h>

#include "backends/worker/worker.h"
#include "cli/common.h"

namespace attune::cli {

Command add_worker_command(CLI::App& app, GlobalOptions&) {
  auto* sub = app.add_subcommand(
      "worker", "run candidates for a tuner over stdin/stdout (started by attune tune)");
  auto backend = std::make_shared<std::string>();
  sub->add_option("--backend", *backend, "backend whose candidates this worker runs")->required();
  auto options = std::make_shared<std::vector<std::string>>();
  sub->add_option("--option", *options,
                  "key=value handed to the backend (what attune tune was given)");
  auto device = std::make_shared<int>(-1);
  add_device_option(sub, device.get(),
                    "to run candidates on (the tuner's; default: the backend's)");
  return {sub, [backend, options, device] {
            auto b = open_backend_or_report(*backend, *device);
            if (!b) return kExitBadInput;
            for (const auto& kv : *options) {
              auto eq = kv.find('=');
              if (eq == std::string::npos)
                return bad_input("--option '" + kv + "' must be key=value");
              if (auto st = b->configure(kv.substr(0, eq), kv.substr(eq + 1)); !st.ok())
                return bad_input(st.error().message());
            }
            return serve_worker(*b, STDIN_FILENO, STDOUT_FILENO);
          }};
}

}  // namespace attune::cli
