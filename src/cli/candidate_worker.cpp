// attune candidate-worker (hidden): runs candidates for a tuner, one JSON request per line on
// stdin and one outcome per line on stdout. Started by `attune tune` (and every command that
// tunes), never by a user; a crash here costs only this process. It was `attune worker` until the
// fleet worker (cli/worker.cpp) took that name.
#include <unistd.h>

#include "backends/worker/worker.h"
#include "cli/common.h"

namespace attune::cli {

Command add_candidate_worker_command(CLI::App& app, GlobalOptions&) {
  auto* sub = app.add_subcommand(
      kCandidateWorker, "run candidates for a tuner over stdin/stdout (started by attune tune)");
  sub->group("");  // hidden from --help: not a user's command
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
