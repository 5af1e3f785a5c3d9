#include "cli/replay.h"

#include "backends/replay/replay_backend.h"
#include "cli/common.h"

namespace attune::cli {

std::unique_ptr<Backend> open_replay_backend_or_report(const GlobalOptions& g,
                                                       const std::vector<std::string>& problems) {
  if (problems.size() != 1) {
    bad_input(
        "--backend replay serves one recorded space: give exactly one --problem NAME "
        "(names are printed by attune import kernel-tuner)");
    return nullptr;
  }
  auto store = open_store_or_report(g, false);
  if (!store) return nullptr;
  auto rec = store->find_problem(problems.front());
  if (!rec) {
    bad_input(rec.error().message());
    return nullptr;
  }
  if (!*rec || (*rec)->payload.empty()) {
    bad_input("'" + problems.front() + "' is not a recorded space in " + g.db +
              " (import one with: attune import kernel-tuner FILE [--name NAME])");
    return nullptr;
  }
  auto b = replay::ReplayBackend::from_payload((*rec)->payload, (*rec)->problem.name());
  if (!b) {
    bad_input(b.error().message());
    return nullptr;
  }
  return std::move(*b);
}

}  // namespace attune::cli
